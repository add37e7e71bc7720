"""Thin Celery tasks, one module per stage. Each validates its payload, calls one domain function
from `pagefleet.workers`, updates the job registry and returns a small JSON dict."""
