"""``python -m hotkv_server``: the same as ``hotkv-server``."""

import sys

from hotkv_server.server.app import main

sys.exit(main())
