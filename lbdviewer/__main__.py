"""``python -m lbdviewer``: the same as the ``lbdviewer`` command."""

import sys

from lbdviewer.cli.main import main

sys.exit(main())
