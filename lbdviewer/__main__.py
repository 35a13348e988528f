"""``python -m lbdviewer``: the same as the ``lbdviewer`` command."""

import sys

from lbdviewer.cli import main

sys.exit(main())
