import os
import sys

from harness import cli

cli.PROCESS_STARTED = cli.process_started()
code = cli.main()
if cli.EXIT_AT_ONCE:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)
