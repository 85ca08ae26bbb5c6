"""Two campaigns through the command line, each with one seeded fault of the same symptom on
another path family: compiled autograd's x1.5 gradient, and the x1.5 gradient of Dynamo's
traced backward (harness/selfeval/compilers.py). Their wrong gradients read the same words
("mismatch vs math at backward grad"), and once were one cause: `diff` called the second one
old. Keyed by path family, they are two causes, and `diff` of the first campaign against the
second reports the second as new and exits 1 (what the nightly workflow goes red on). (The same
spec under both faults gives the same words and two causes in tests/test_causes.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import selfeval
from harness.records import Cause
from harness.report import load

FAULTS = {"compiled": "compiled_autograd_backward_scaled", "dynamo": "dynamo_traced_backward_scaled"}


def _fuzz(family: str, out) -> subprocess.CompletedProcess:
    """A campaign on eager and the fault's family alone: twice the examples of one on both, where
    (2 cores) a compiled or dynamo example takes seconds."""
    return subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", f"eager,{family}", "--budget", "150s",
                           "--workers", "1", "--out", str(out)],
                          env=selfeval.subprocess_env(FAULTS[family]), capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_two_faults_with_the_same_symptom_are_two_causes_and_diff_calls_the_second_new(tmp_path):
    causes = {}
    for family in FAULTS:
        done = _fuzz(family, tmp_path / family)
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # an unknown failure
        causes[family] = {Cause.parse(c) for c in load(tmp_path / family).failures}
    # each fault's wrong gradients are causes of its own family
    assert any(c.family == "compiled" and c.fingerprint == "values" for c in causes["compiled"]), causes
    dynamo = {c for c in causes["dynamo"] if c.family == "dynamo" and c.fingerprint == "values"}
    assert dynamo, causes

    done = subprocess.run([sys.executable, "-m", "harness", "diff", str(tmp_path / "compiled"),
                           str(tmp_path / "dynamo")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    new = done.stdout.split("new failures", 1)[1].split("fixed (seen last time", 1)[0]
    # every Dynamo cause is new, those whose words the compiled campaign showed too (one cause,
    # when causes were their words alone) included
    assert all(f": {cause}" in new for cause in dynamo), done.stdout
