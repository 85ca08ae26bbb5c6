"""The harness can fail: seeded bugs (harness.selfeval's catalog) and perturbed results
are reported, and a written reproducer fails the same way on its own."""

import subprocess
import sys

import pytest
import torch

from harness import build, paths
from harness.check import check
from harness.oracles.compare import EXACT, compare
from harness.repro import write_reproducer
from harness.run import RunResult
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

SPEC = GraphSpec(
    shape=(2, 3), dtype="float64",
    leaves=(LeafSpec(True), LeafSpec(True, "transposed")),
    functions=(FunctionSpec(
        args=(Arg("x0"), Arg(const=2), Arg("x1")),
        outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(2, "square", -0.5))),
                 OutputSpec("view", slot=2)),
        save=("inputs",), jvp=True),),
    backward="backward", forward_ad=True)



def test_correct_spec_passes():
    assert not check(SPEC, [paths.get("eager")]).failed


def test_wrong_backward_is_reported(fault):
    fault("wrong_backward")
    verdict = check(SPEC, [paths.get("eager")])
    report = verdict.report()
    assert verdict.outcomes["eager"].status == "failed"
    assert "eager vs math: backward grad:x0: outside tolerance" in report
    assert "max abs err" in report


def test_wrong_jvp_is_reported(fault):
    fault("wrong_jvp")
    verdict = check(SPEC, [paths.get("eager")])
    assert "eager vs math: forward_ad tangent:f0.0: outside tolerance" in verdict.report()


def test_comparator_catches_swapped_gradients():
    result = paths.get("eager").run(build.build(SPEC))
    swapped = RunResult("perturbed", tensors={c: dict(r) for c, r in result.tensors.items()},
                        values=result.values)
    grads = swapped.tensors["backward"]
    grads["grad:x0"], grads["grad:x1"] = grads["grad:x1"], grads["grad:x0"]
    found = compare(result, swapped, EXACT)
    assert {m.role for m in found} == {"grad:x0", "grad:x1"}  # every tensor is checked
    assert all(m.detail == "not bit-identical" and m.max_abs > 0 for m in found)


def test_comparator_reports_none_versus_tensor():
    a = RunResult("a", tensors={"backward": {"grad:x0": None}})
    b = RunResult("b", tensors={"backward": {"grad:x0": torch.zeros(2)}})
    assert [m.detail for m in compare(a, b, EXACT)] == ["expected None"]
    assert compare(a, b, EXACT, none_is_zero=True) == []


def test_reproducer_fails_the_same_way_standalone(fault, tmp_path):
    """The seeded fault lives in this process; the script fails on its own because it
    carries the faulty Function as plain source, with torch alone."""
    fault("wrong_backward")
    verdict = check(SPEC, [paths.get("eager")])
    script = write_reproducer(SPEC, ["eager"], "cpu", verdict.report(), tmp_path / "repro.py", verdict=verdict)
    assert "# self-test fault wrong_backward" in script.read_text()
    # run from an empty folder with an empty environment path: only the script and torch
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert "FAILS: eager differs from math at" in done.stderr
    assert [line for line in script.read_text().splitlines() if line.startswith(("import ", "from "))] == ["import torch"]


@pytest.mark.parametrize("name", ["owned", "borrowed"])
def test_comparator_catches_a_perturbed_native_result(name):
    path = paths.get(name)
    if path.available() is not None:
        pytest.skip(f"{name}: {path.available()}")
    built = build.build(SPEC)
    eager, native = paths.get("eager").run(built), path.run(built)
    assert compare(eager, native, EXACT) == []
    grads = native.tensors["backward"]
    grads["grad:x0"], grads["grad:x1"] = grads["grad:x1"], grads["grad:x0"]
    assert {m.role for m in compare(eager, native, EXACT)} == {"grad:x0", "grad:x1"}


def test_a_constant_where_the_spec_has_a_tensor_output_is_the_paths_error():
    """A path whose Function returns a non-tensor where the spec's output is a tensor (Dynamo's
    shifted varargs did, on 2.14.1) gets an error at forward, not a runner crash later on the
    missing value (an audit campaign's worker died on that KeyError)."""
    from harness.run import run_graph

    spec = GraphSpec(shape=(2,), leaves=(LeafSpec(),), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),), tuple_output=False),
        FunctionSpec(args=(Arg("f0.0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),), tuple_output=False)))
    built = build.build(spec)
    result = run_graph(built, lambda n, cls, args: 3 if n == 0 else cls.apply(*args), "constant-returning")
    assert result.status == "error" and result.error_checkpoint == "forward"
    assert str(result.error) == "Function 0 returned int for its output 0, a tensor in its spec"


def test_a_forward_ad_level_left_open_by_a_path_is_closed_and_reported_on_it():
    """A 2.14.1 campaign's worker died: func.jvp+dynamo left a forward-AD level open in torch's
    C++ state (invisible to torch.autograd.forward_ad._current_level), and the math oracle run
    after it raised "Nested forward mode AD is not supported"."""
    class Leaking:
        name = "leaking"

        def unsupported(self, spec):
            return None

        def run(self, built):
            result = paths.get("eager").run(built)
            torch._C._enter_dual_level()  # as compiled code did, without the Python bookkeeping
            return result

    spec = GraphSpec(shape=(2,), leaves=(LeafSpec(),), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),), tuple_output=False),))
    result = paths.run_path(Leaking(), build.build(spec))
    assert result.status == "error" and str(result.error) == "the path left 1 forward-AD dual level(s) open"
    with torch.autograd.forward_ad.dual_level():  # nothing is left open
        pass


def test_an_attribute_error_is_the_paths_only_where_the_graph_forward_raised_it():
    """An AttributeError raised by the straight-line forward's own lines (the program a compiled
    path compiles) is an observation of the path; one raised anywhere else in the harness is
    the harness's bug and propagates."""
    import pytest

    from harness.run import RunResult, RunStopped, recording_errors

    program = compile("def graph_forward(x):\n    return x.clone()\n", "<harness graph_forward 0123>", "exec")
    namespace: dict = {}
    exec(program, namespace)
    result = RunResult("dynamo:aot_eager")
    with pytest.raises(RunStopped):
        with recording_errors(result, "forward"):
            namespace["graph_forward"]((2, None))
    assert result.status == "error" and isinstance(result.error, AttributeError)

    with pytest.raises(AttributeError):
        with recording_errors(RunResult("dynamo:aot_eager"), "forward"):
            (2, None).clone()
