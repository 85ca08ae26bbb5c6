"""The core property: every selected path agrees with the math oracle and with eager,
over the whole generated space (paths chosen with --paths, device with --device)."""

import collections

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.check import check
from harness.oracles.math import gradcheck_graph, gradcheck_reason
from harness.paths.compiled import nothing_to_run
from strategies import graphs


#: the least share of the generated examples each path must really check (ok or failed, on the example
#: or on a known issue's workaround; partly is not checked): a path that called everything unsupported,
#: or stopped at known issues, would otherwise pass this property having compared nothing. Examples
#: where a compiled path has no backward to capture count for neither side. About half the share
#: measured with the ci profile (40 derandomized examples, torch 2.13): eager 1.0, owned and borrowed
#: 0.9 (clear_saved_tensors_on_access and custom_op are unsupported there), compiled 1.0 of the 9 with a
#: backward, dynamo 0.3 (partly: dynamo-trace-state-cycle, a lifetime entry without a workaround, 0.4;
#: unsupported: double backward under AOT, 0.3)
CHECKED_FLOOR = {"eager": 0.5, "owned": 0.4, "borrowed": 0.4, "compiled": 0.5, "dynamo": 0.15}
#: other paths (--paths func.*, a device's): a floor that only a path checking almost nothing misses
CHECKED_FLOOR_OTHERS = 0.1


def test_paths_agree_with_math_and_eager(selected_paths, device):
    checked: collections.Counter = collections.Counter()
    runnable: collections.Counter = collections.Counter()

    @given(spec=graphs())
    def agree(spec):
        verdict = check(spec, selected_paths, device)
        assert not verdict.failed, verdict.report()
        runnable.update(name for name, o in verdict.outcomes.items() if not nothing_to_run(o.status, o.reason))
        checked.update(name for name, o in verdict.outcomes.items() if o.status in ("ok", "failed"))

    agree()
    for p in selected_paths:
        floor = CHECKED_FLOOR.get(p.name.partition(":")[0], CHECKED_FLOOR_OTHERS) if "@" not in p.name \
            else CHECKED_FLOOR_OTHERS
        assert checked[p.name] >= max(1, floor * runnable[p.name]), (
            f"{p.name} checked {checked[p.name]} of {runnable[p.name]} examples it had something to run for, "
            f"under its floor {floor:.0%}")


@settings(max_examples=30)
@given(graphs(max_functions=2, max_inputs=3, max_leaves=2, dtypes=("float64",), max_elements=8))
def test_generated_formulas_pass_gradcheck(spec):
    """Backward (and jvp) formulas are correct by construction: finite differences agree."""
    if gradcheck_reason(spec) is not None:
        return  # counted by test_gradcheck_applies_often below, never reported as passing silently
    assert gradcheck_graph(spec)


reasons: list[str | None] = []


#: 300: the shares are read off a sample, and 60 draws moved them by a third when a new axis changed the stream
@settings(max_examples=300, database=None, derandomize=True)
@given(graphs(max_functions=2, max_inputs=3, max_leaves=2, dtypes=("float64",), max_elements=8))
def _collect_gradcheck_applicability(spec):
    reasons.append(gradcheck_reason(spec))


def test_gradcheck_applies_often():
    """gradcheck runs on most graphs with something to differentiate. A graph with no leaf that
    requires grad, or only empty ones, has nothing for it (about half of these draws, whose leaves
    require grad one in two); the rest are refused only for a reason of their own."""
    reasons.clear()
    _collect_gradcheck_applicability()
    differentiable = [r for r in reasons if r != "no differentiable input"]
    assert len(differentiable) >= len(reasons) // 4, collections.Counter(reasons)
    assert differentiable.count(None) >= len(differentiable) // 3, collections.Counter(reasons)


@given(st.data())
def test_builder_is_deterministic(data):
    from harness.build import build

    spec = data.draw(graphs(max_functions=1))
    a, b = build(spec).make_leaves(), build(spec).make_leaves()
    for x, y in zip(a, b):
        assert x.stride() == y.stride() and x.requires_grad == y.requires_grad
        assert x.detach().equal(y.detach())


def test_unknown_path_lists_valid_ones():
    from harness import paths

    with pytest.raises(paths.UnknownPathError, match=r"unknown path 'nope'; valid paths: eager"):
        paths.parse("eager,nope")
