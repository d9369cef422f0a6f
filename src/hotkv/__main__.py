"""``python -m hotkv``: the same as ``hotkv-server``."""

import sys

from hotkv.server.app import main

sys.exit(main())
