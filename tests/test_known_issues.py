"""Every known torch issue still reproduces on the torch versions it names, so a fixed
bug gets noticed (and its entry narrowed)."""

import pytest

from harness.known_issues import KNOWN_ISSUES, REPRODUCERS, reproduce


@pytest.mark.parametrize("issue", KNOWN_ISSUES, ids=lambda k: k.id)
def test_known_issue_reproduces_where_it_says(issue):
    """present where the registry's first..last versions include this torch, fixed elsewhere;
    a reproducer that fails some other way ("broken") fails this test either way."""
    assert (REPRODUCERS / issue.reproducer).exists(), f"{issue.id}: reproducer is missing"
    state, last_line = reproduce(issue)
    expected = "present" if issue.affects_installed_torch() else "fixed"
    assert state == expected, last_line
