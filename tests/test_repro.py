"""Plain-torch reproducers (harness/repro.py) and their source-level reduction (harness/reduce.py).

Each round trip checks a real failure under a seeded fault: the written script imports torch
only, fails (exit 1, its FAILS line) in a fresh interpreter with the fault installed the way
selfeval installs it, and passes (exit 0) without it, also where the harness cannot be imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import paths, selfeval
from harness.check import check
from harness.reduce import CHECK_LINE, CODE_LINE, FAILS
from harness.repro import write_reproducer
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

TIMEOUT = 600


def graph(*functions: FunctionSpec, leaves: int = 2, **kwargs) -> GraphSpec:
    return GraphSpec(leaves=tuple(LeafSpec() for _ in range(leaves)), functions=functions,
                     forward_code="straight", **kwargs)


SIN_AND_LINEAR = FunctionSpec(args=(Arg("x0"), Arg("x1")), code="plain", save=("inputs",),
                              outputs=(OutputSpec(terms=(Term(0, "sin"), Term(1, "linear", 2.0))),))
SQUARE_AND_AS_IS = FunctionSpec(args=(Arg("f0.0"), Arg("x1")), code="plain", save=("inputs",),
                                outputs=(OutputSpec(terms=(Term(0, "square"),)), OutputSpec(kind="input", slot=1)))


def written(spec: GraphSpec, path_names: str, fault: str, tmp_path: Path) -> Path:
    """The reproducer a campaign writes for the failure `fault` causes on `spec`."""
    with selfeval.installed(fault):
        verdict = check(spec, paths.parse(path_names), lifetimes=False)
        assert verdict.failed, verdict.report()
        return write_reproducer(spec, path_names.split(","), "cpu", verdict.report(), tmp_path / "repro.py",
                                verdict=verdict)


def run(script: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    """The script in a fresh interpreter, from its own folder, with the fault installed as selfeval does."""
    env = selfeval.subprocess_env(fault) if fault else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=script.parent,
                          env=env, timeout=TIMEOUT)


def run_without_harness(script: Path) -> subprocess.CompletedProcess:
    """The script where the harness cannot be imported: no site processing (no editable install),
    no current folder on sys.path, only torch's site-packages added; it reports what it imported."""
    site = str(Path(torch.__file__).resolve().parents[1])
    wrapper = (f"import runpy, sys; sys.path.append({site!r})\n"
               "try:\n"
               f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
               "except SystemExit as e:\n"
               "    code = e.code\n"
               "else:\n"
               "    code = 0\n"
               "print('harness modules:', sorted(m for m in sys.modules if m.split('.')[0] in ('harness', 'strategies')))\n"
               "try:\n"
               "    import harness\n"
               "    print('harness importable')\n"
               "except ModuleNotFoundError:\n"
               "    print('harness not importable')\n"
               "sys.exit(code if isinstance(code, int) else 1)\n")
    return subprocess.run([sys.executable, "-I", "-S", "-c", wrapper], capture_output=True, text=True,
                          cwd=script.parent, env={"PATH": os.environ.get("PATH", "")}, timeout=TIMEOUT)


def imports(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("import ", "from "))]


def assert_round_trip(script: Path, fault: str, fails: str) -> str:
    text = script.read_text()
    assert CHECK_LINE in text and "_SOURCES" not in text, text[:2000]
    assert {line.split()[1] for line in imports(text)} <= {"torch", "torch.autograd.forward_ad"}, imports(text)
    with_fault = run(script, fault)
    assert with_fault.returncode == 1, with_fault.stdout + with_fault.stderr[-3000:]
    assert f"{FAILS}{fails}" in with_fault.stderr, with_fault.stdout + with_fault.stderr[-3000:]
    without = run(script)
    assert without.returncode == 0, without.stdout + without.stderr[-3000:]
    alone = run_without_harness(script)
    assert alone.returncode == 0, alone.stdout + alone.stderr[-3000:]
    assert "harness modules: []" in alone.stdout and "harness not importable" in alone.stdout, alone.stdout
    return text


def test_a_dynamo_gradient_mismatch_is_a_torch_only_script(tmp_path):
    script = written(graph(SIN_AND_LINEAR), "eager,dynamo", "dynamo_traced_backward_scaled", tmp_path)
    text = assert_round_trip(script, "dynamo_traced_backward_scaled",
                             "dynamo:aot_eager differs from eager at backward grad:x")
    assert "(torch.compile(graph_forward, backend='aot_eager', fullgraph=True) if compiled else graph_forward)" in text
    assert "class F0(torch.autograd.Function):" in text and "def graph_forward(x0, x1):" in text
    assert len(text.splitlines()) < 60, text


def test_a_compiled_autograd_gradient_mismatch_is_a_torch_only_script(tmp_path):
    script = written(graph(SIN_AND_LINEAR, SQUARE_AND_AS_IS), "eager,compiled", "compiled_autograd_backward_scaled",
                     tmp_path)
    text = assert_round_trip(script, "compiled_autograd_backward_scaled",
                             "compiled:capture differs from eager at backward grad:x")
    assert "torch._dynamo.compiled_autograd._enable(lambda gm: gm.forward) if compiled" in text


def test_keyword_arguments_stay_keywords_in_the_script(tmp_path):
    """A Function called with keyword arguments (FunctionSpec.keyword_args) is called so in the
    script too: only then does it reproduce a fault in how torch binds them."""
    keywords = FunctionSpec(args=(Arg("x0"), Arg("x1")), code="plain", save=("inputs",), style="setup_context",
                            outputs=(OutputSpec(terms=(Term(0, "sin"), Term(1, "linear", 2.0))),), keyword_args=2)
    script = written(graph(keywords), "eager", "keyword_args_bound_in_call_order", tmp_path)
    text = assert_round_trip(script, "keyword_args_bound_in_call_order", "eager differs from math at backward grad:x0")
    assert "(f0_0,) = F0.apply(a1=x1, a0=x0)" in text and "def forward(a0, a1):" in text


def test_an_error_parity_cause_compares_exception_types_at_checkpoints(tmp_path):
    """jvp_tangent_scaled makes torch's jvp wrapper return a tangent torch then rejects: eager raises
    at forward_ad where the math oracle runs through."""
    fn = FunctionSpec(args=(Arg("x0"),), code="plain", save=("inputs",), jvp=True,
                      outputs=(OutputSpec(terms=(Term(0, "sin"),)), OutputSpec(kind="input", slot=0)))
    script = written(graph(fn, leaves=1, forward_ad=True), "eager", "jvp_tangent_scaled", tmp_path)
    text = assert_round_trip(script, "jvp_tangent_scaled", "eager differs from math at forward_ad error")
    assert "except Exception as e:" in text and "expected = 'no error'" in text


def test_a_metadata_cause_compares_the_fact_itself(tmp_path):
    """An input returned as-is must come back as a view of it; the fault returns the input itself."""
    fn = FunctionSpec(args=(Arg("x0"), Arg("x1")), code="plain",
                      outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)), OutputSpec(kind="input", slot=1)))
    script = written(graph(fn), "eager,dynamo", "dynamo_input_returned_as_is_not_viewed", tmp_path)
    text = assert_round_trip(script, "dynamo_input_returned_as_is_not_viewed",
                             "dynamo:aot_eager differs from eager at meta:forward alias:f0.1: 'is x1', eager: 'view of x1'")
    assert "named.setdefault(value._cdata, name)" in text


def test_a_failure_of_the_lifetime_oracle_runs_the_harness_and_says_why(tmp_path):
    fn = FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin"),)),), save=("inputs",))
    with selfeval.installed("leak_input"):
        verdict = check(graph(fn, leaves=1), [paths.get("eager")])
        assert verdict.failed, verdict.report()
        script = write_reproducer(verdict.spec, ["eager"], "cpu", verdict.report(), tmp_path / "repro.py",
                                  verdict=verdict)
    text = script.read_text()
    assert "Why this script uses the harness:" in text and "observed by the harness itself" in text
    assert "from harness import check, paths" in text and len(text.splitlines()) < 40
    assert run(script, "leak_input").returncode == 1
    assert run(script).returncode == 0


def test_reduce_deletes_what_the_failure_does_not_need_and_keeps_the_comparison(tmp_path):
    """Through the CLI, in a process with the fault (as a campaign's worker has it): the terms of x1,
    which the failing gradient of x0 does not need, can go; the data and the comparison stay as written."""
    terms = (Term(0, "sin"), Term(1, "linear", 2.0), Term(1, "square", -1.5), Term(1, "tanh", 0.5))
    fn = FunctionSpec(args=(Arg("x0"), Arg("x1")), code="plain", save=("inputs",), outputs=(OutputSpec(terms=terms),))
    script = written(graph(fn), "eager,dynamo", "dynamo_traced_backward_scaled", tmp_path)
    before = script.read_text()
    done = subprocess.run([sys.executable, "-m", "harness", "reduce", str(script), "--budget", "150s"],
                          capture_output=True, text=True, env=selfeval.subprocess_env("dynamo_traced_backward_scaled"),
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    after = script.read_text()
    assert after.split(CHECK_LINE)[1] == before.split(CHECK_LINE)[1]
    assert after.split(CODE_LINE)[0].split("import torch")[1] == before.split(CODE_LINE)[0].split("import torch")[1]
    assert len(after) < len(before) and "Reduced by pysource-minimize" in after, done.stdout
    assert run(script, "dynamo_traced_backward_scaled").returncode == 1
    assert run(script).returncode == 0


def test_reduce_refuses_a_script_that_does_not_fail(tmp_path):
    script = written(graph(SIN_AND_LINEAR), "eager,dynamo", "dynamo_traced_backward_scaled", tmp_path)
    done = subprocess.run([sys.executable, "-m", "harness", "reduce", str(script), "--budget", "30s"],
                          capture_output=True, text=True, timeout=TIMEOUT)  # no fault: it passes
    assert done.returncode != 0 and "the script does not fail (exit status 0" in done.stderr, done.stderr[-2000:]


def test_reduce_refuses_a_harness_script(tmp_path):
    script = tmp_path / "r.py"
    script.write_text("import sys\nsys.exit(1)\n")
    done = subprocess.run([sys.executable, "-m", "harness", "reduce", str(script)], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode != 0 and "it is not a plain reproducer the harness wrote" in done.stderr


@pytest.mark.parametrize("value, dtype", [(0.1, torch.float32), (-1.7e-3, torch.float64), (0.333, torch.bfloat16),
                                          (complex(0.25, -0.5), torch.complex64)])
def test_literals_give_back_the_exact_elements(value, dtype):
    from harness.repro import tensor_literal

    t = torch.tensor([[value, value / 3], [value * 7, 0.0]], dtype=dtype)
    assert torch.equal(eval(tensor_literal(t), {"torch": torch}), t)


def test_a_gradcheck_failure_is_a_torch_only_gradcheck_script(tmp_path):
    """The formula fault is in the plain source itself (the sin term's derivative reads zeros): the
    script fails with it, passes with the right derivative, and imports torch only."""
    from harness.check import gradcheck_verdict
    from harness.repro import write_gradcheck_reproducer

    spec = graph(SIN_AND_LINEAR)
    with selfeval.installed("sin_backward_term_dropped"):
        status, detail = gradcheck_verdict(spec)
        assert status == "failed", detail
        script = write_gradcheck_reproducer(spec, "cpu", detail, tmp_path / "repro.py")
    text = script.read_text()
    assert "torch.autograd.gradcheck(outputs, inputs" in text and imports(text) == ["import torch"]
    assert "gx0 = g0 * 1.0 * torch.zeros_like(a0)" in text, text
    done = run(script)
    assert done.returncode == 1 and f"{FAILS}gradcheck: GradcheckError: Jacobian mismatch" in done.stderr, done.stderr
    script.write_text(text.replace("torch.zeros_like(a0)", "torch.cos(a0)"))
    fixed = run_without_harness(script)
    assert fixed.returncode == 0 and "harness not importable" in fixed.stdout, fixed.stdout + fixed.stderr[-2000:]


def test_a_crash_script_runs_the_path_in_a_child_and_fails_when_it_dies(tmp_path):
    """Run to the end it exits 0; with an abort put in the Function's forward (a stand-in for a crash
    in torch), the child dies and the script says so and exits 1."""
    from harness.repro import crash_script

    script = tmp_path / "crash.py"
    text = crash_script(graph(SIN_AND_LINEAR), "eager", "cpu", "crash (signal SIGSEGV)")
    assert imports(text) == ["import torch", "import torch.multiprocessing"]
    script.write_text(text)
    clean = run_without_harness(script)
    assert clean.returncode == 0 and "ran to the end" in clean.stdout, clean.stdout + clean.stderr[-2000:]
    forward = "    def forward(ctx, a0, a1):\n"
    assert forward in text
    script.write_text(text.replace(forward, forward + "        __import__('os').abort()\n"))
    died = run(script)
    assert died.returncode == 1 and f"{FAILS}crash: eager ended with exit code -6" in died.stderr, \
        died.stdout + died.stderr[-2000:]
