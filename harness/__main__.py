import os
import sys

from harness import cli

code = cli.main(started=cli.process_started())
if cli.EXIT_AT_ONCE:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)
