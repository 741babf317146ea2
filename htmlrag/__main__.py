"""``python -m htmlrag`` runs the command line."""

import sys

from htmlrag.cli.main import main

sys.exit(main())
