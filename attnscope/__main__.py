"""``python -m attnscope …``: see :mod:`attnscope.cli`."""

import sys

from attnscope.cli import main

if __name__ == "__main__":
    sys.exit(main())
