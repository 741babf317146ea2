"""``python -m htmlrag`` runs the command line."""

import sys

from htmlrag.cli import main

sys.exit(main())
