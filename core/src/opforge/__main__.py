"""``python -m opforge``: the ``opforge`` command, for environments without its script on PATH."""

import sys

from opforge.cli import main

sys.exit(main())
