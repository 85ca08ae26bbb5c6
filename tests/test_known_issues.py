"""Every known torch issue still reproduces on the torch versions it names, so a fixed
bug gets noticed (and its entry narrowed)."""

import subprocess
import sys

import pytest

from harness.known_issues import KNOWN_ISSUES, REPRODUCERS


@pytest.mark.parametrize("issue", KNOWN_ISSUES, ids=lambda k: k.id)
def test_known_issue_reproduces_where_it_says(issue):
    script = REPRODUCERS / issue.reproducer
    assert script.exists(), f"{issue.id}: reproducer {script} is missing"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    reproduced = done.returncode == 1 and "REPRODUCED" in done.stdout
    assert reproduced == issue.affects_installed_torch(), done.stdout + done.stderr
