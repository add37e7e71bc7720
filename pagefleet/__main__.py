"""`python -m pagefleet`: the `pagefleet` command (pagefleet.workers.cli.main)."""

import sys

from pagefleet.workers.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
