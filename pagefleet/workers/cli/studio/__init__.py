"""The review studio: a local web app where a person clears quarantined pages (`pagefleet review`).

config    StudioSettings (env PAGEFLEET_STUDIO__*), the bind/token rule
library   the served folder or S3 prefix: documents, artifacts, path safety
risk      page risk order, statistics, next-flagged, the unresolved filter
reviews   review.json decisions, the export, document.reviewed.md
markup    untrusted text → escaped HTML: bidi isolation, edit maps, blocks and RTL tables
images    source page images rendered in the sandbox, cached by source sha256
uploads   upload → validate → submit to the fleet → progress
security  token, host check, CSRF, security headers
app       the Starlette application
"""

from pagefleet.workers.cli.studio.web import create_app

__all__ = ["create_app"]
