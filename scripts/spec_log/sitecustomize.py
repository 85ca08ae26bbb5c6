"""Measurement only (scripts/compare_nightly.py): every spec a campaign checks, by any engine
(`harness fuzz`'s workers, the nightly's HypoFuzz property), appended as a JSON line to
$HARNESS_SPEC_LOG, so that the branches both reached can be measured afterwards by replaying them
under coverage.py (HypoFuzz's own line tracer leaves no room for coverage.py's during its run).
Python imports this first in every process started with this folder on PYTHONPATH."""

import os

if os.environ.get("HARNESS_SPEC_LOG"):
    # (patched before harness.campaign, harness.replay and harness.fuzz_target import it)
    import harness.engine

    _check_example = harness.engine.check_example

    def check_example(spec, *args, **kwargs):
        # one write(2) in append mode: several processes may log to one file
        fd = os.open(os.environ["HARNESS_SPEC_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (spec.to_json() + "\n").encode())
        finally:
            os.close(fd)
        return _check_example(spec, *args, **kwargs)

    harness.engine.check_example = check_example
