"""Installs the seeded fault named by HARNESS_SELFEVAL_FAULT when Python starts.

Only on PYTHONPATH when harness.selfeval.subprocess_env puts it there (a test or the
selfeval command starting processes with a fault), never in a normal run."""

import os

if os.environ.get("HARNESS_SELFEVAL_FAULT"):
    from harness.selfeval import install

    install(os.environ["HARNESS_SELFEVAL_FAULT"])
