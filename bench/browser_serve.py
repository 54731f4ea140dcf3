"""``python -m bench.browser_serve run SCRIPT [options]``: ``streamlit run`` with the app's INFO log
(each line naming its level) on stderr (``app.resources`` logs every model load and run; the browser benchmark counts them).

Streamlit configures only its own loggers, so this sets up the root logger and then hands the
command line to Streamlit's own ``python -m streamlit`` entry point unchanged.
"""

from __future__ import annotations

import logging
import runpy
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"  # the level: a test reads warnings

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=LOG_FORMAT)
    sys.argv[0] = "streamlit"
    runpy.run_module("streamlit", run_name="__main__", alter_sys=True)
