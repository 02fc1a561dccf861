"""``python -m compilescope.cli``: the ``compilescope`` command."""

import sys

from . import main

sys.exit(main())
