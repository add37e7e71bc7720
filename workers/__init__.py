import routing  # noqa: F401 - the compiled-build guard runs before any compiled module of workers loads
