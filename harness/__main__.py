import os
import sys

from harness import cli, session

code = cli.main(started=session.process_started())
if session.EXIT_AT_ONCE:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)
