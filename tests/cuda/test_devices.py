"""Device handling that every machine can check: --device parsing, the one-sentence answer
when CUDA is asked for and missing, the precision guard, the CUDA memory rule, CPU scalar
leaves in specs, "<path>@<device>" names, and scripts/gpu-check.sh failing without a GPU.
What needs a GPU is in test_cuda_paths.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings

from harness import devices, paths
from harness.build import build
from harness.check import check
from harness.cli import main
from harness.oracles.lifetimes import LifetimeTracker, rule_violations
from harness.paths import on_device
from harness.run import RunResult
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, SpecError, Term
from strategies import graphs

ROOT = Path(__file__).resolve().parents[2]
NO_CUDA = devices.cuda_unavailable_reason()
needs_no_cuda = pytest.mark.skipif(NO_CUDA is None, reason="checks the answer given where CUDA is missing")

SCALAR_SPEC = GraphSpec(
    shape=(), dtype="float32", leaves=(LeafSpec(on_cpu=True), LeafSpec()),
    functions=(FunctionSpec(args=(Arg("x0"), Arg("x1")),
                            outputs=(OutputSpec("compute", terms=(Term(0, "sin", 2.0), Term(1, "square", 1.5))),),
                            save=("inputs",)),),
    seed=7)


def test_device_lists_parse_and_bad_ones_say_what_to_use():
    assert devices.parse_devices("cpu") == ("cpu",)
    for bad in ("gpu", "", "cpu,cpu", "cpu,tpu"):
        with pytest.raises(devices.DeviceError, match=r"use cpu, cuda or cpu,cuda\.$"):
            devices.parse_devices(bad)


@needs_no_cuda
@pytest.mark.parametrize("argv", [["fuzz", "--device", "cuda"], ["fuzz", "--device", "cpu,cuda"],
                                  ["check", "SPEC", "--device", "cuda"]])
def test_the_cli_says_in_one_sentence_that_cuda_is_not_available(argv, tmp_path):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(SCALAR_SPEC.to_json())
    with pytest.raises(SystemExit) as stop:
        main([str(spec_file) if a == "SPEC" else a for a in argv])
    message = str(stop.value.code)
    assert message == f"error: {NO_CUDA}"
    assert "\n" not in message
    assert message.startswith("error: CUDA is not available here: torch ") and message.endswith("; use --device cpu.")


@needs_no_cuda
def test_bench_says_in_one_sentence_that_cuda_is_not_available(capsys):
    assert main(["bench", "--device", "cuda"]) == 2
    assert capsys.readouterr().err == f"error: {NO_CUDA}\n"


def _float32_precisions() -> tuple[str, ...]:
    """matmul, cuDNN convolution and RNN float32 precision, read through the new API (the one
    exact_float_math uses: reading the legacy one may raise once both were used)."""
    cudnn = torch.backends.cudnn
    return (torch.backends.cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision)


def test_exact_float_math_turns_tf32_and_reduced_precision_off_on_cuda_and_restores_them():
    matmul = torch.backends.cuda.matmul
    before = (_float32_precisions(), matmul.allow_fp16_reduced_precision_reduction)
    try:
        matmul.fp32_precision = "tf32"
        matmul.allow_fp16_reduced_precision_reduction = True
        outside = _float32_precisions()
        with devices.exact_float_math("cpu"):  # CPU runs touch nothing
            assert _float32_precisions() == outside and matmul.allow_fp16_reduced_precision_reduction
        with devices.exact_float_math("cuda"):
            assert _float32_precisions() == ("ieee", "ieee", "ieee")
            assert not matmul.allow_fp16_reduced_precision_reduction
            assert not matmul.allow_bf16_reduced_precision_reduction
        assert _float32_precisions() == outside and matmul.allow_fp16_reduced_precision_reduction
    finally:
        matmul.fp32_precision = before[0][0]
        matmul.allow_fp16_reduced_precision_reduction = before[1]


def test_exact_float_math_leaves_a_users_legacy_tf32_setting_readable():
    """A user who sets TF32 through the legacy API around a CUDA check (as
    test_runs_on_cuda_turn_tf32_off_and_restore_it does) must still read it afterwards, and the
    next check must still run: with a legacy save and restore inside, torch refused every later
    read ("mix of the legacy and new APIs"), which failed every CUDA test after that one on an
    H200. Dynamo restores the matmul precision through the new API after each frame it compiles,
    so a compile runs inside too. Needs no GPU: these are torch's global settings."""
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    try:
        for allow in (True, False, True):
            matmul.allow_tf32 = allow
            with devices.exact_float_math("cuda"):
                torch.compile(lambda x: x * 2, backend="eager")(torch.ones(3))
            assert matmul.allow_tf32 is allow
        torch.get_float32_matmul_precision()  # raised once the two APIs were mixed
    finally:
        matmul.allow_tf32 = before


def test_the_error_bounds_cover_cudas_documented_library_accuracy():
    from harness.oracles.bounds import LIBRARY_ULPS
    assert LIBRARY_ULPS >= devices.CUDA_LIBRARY_ULPS


def _released(cuda_bytes: tuple[int, int]) -> RunResult:
    result = RunResult("eager")
    result.put("life:released", "leaks", ())
    result.put("life:released", "cycles", ())
    result.put("life:released", "cuda_bytes", cuda_bytes)
    return result


def test_cuda_memory_above_its_baseline_is_a_leak_or_a_cycle():
    assert rule_violations(_released((0, 0)), "backward") == []
    [leak] = rule_violations(_released((1024, 1024)), "backward")
    assert (leak.checkpoint, leak.role) == ("drop_all", "cuda_bytes") and "1024 bytes" in leak.detail
    assert leak.detail.endswith("(leak)")
    [cycle] = rule_violations(_released((512, 0)), "backward")
    assert "freed only by gc.collect()" in cycle.detail


def test_a_cpu_run_records_no_cuda_memory_reading():
    from harness.paths.eager import apply_eager
    from harness.run import run_graph

    result = run_graph(build(SCALAR_SPEC), apply_eager, "eager", observers=[LifetimeTracker.for_run])
    assert "cuda_bytes" not in result.values["life:released"]


def test_only_a_0_dim_leaf_may_stay_on_the_cpu():
    with pytest.raises(SpecError, match=r"leaves\[0\]\.on_cpu=True is invalid: only a 0-dim tensor"):
        GraphSpec(shape=(3,), leaves=(LeafSpec(on_cpu=True),))
    with pytest.raises(SpecError, match=r"on_cpu"):
        GraphSpec(shape=(), leaves=(LeafSpec(views=2, on_cpu=True),))
    assert GraphSpec.from_json(SCALAR_SPEC.to_json()) == SCALAR_SPEC


def test_a_path_on_another_device_is_judged_by_its_own_paths_metadata_rule():
    """`--device cpu,cuda` adds `<path>@cuda`: its metadata is compared as its path's is (the
    rule was looked up by the whole name, so every `eager@cuda` check raised on a GPU machine).
    `eager@cpu` runs the same code here."""
    verdict = check(SCALAR_SPEC, [paths.get("eager"), on_device(paths.get("eager"), "cpu")], "cpu")
    assert verdict.outcomes["eager@cpu"].status == "ok", verdict.report()
    assert any(role.startswith("alias:") for role in verdict.outcomes["eager@cpu"].result.values["meta:forward"])


def test_a_cpu_scalar_leaf_changes_nothing_on_the_cpu():
    plain = GraphSpec(**{**SCALAR_SPEC.__dict__, "leaves": (LeafSpec(), LeafSpec())})
    for a, b in zip(build(SCALAR_SPEC).make_leaves(), build(plain).make_leaves()):
        assert a.device == b.device and torch.equal(a, b)


@settings(max_examples=10)
@given(graphs(max_functions=2))
def test_cpu_campaigns_draw_no_cpu_scalar_leaves(spec):
    assert not any(leaf.on_cpu for leaf in spec.leaves)


def test_cuda_campaigns_draw_cpu_scalar_leaves():
    from hypothesis import find
    found = find(graphs(max_functions=1, mixed_device=True), lambda s: any(l.on_cpu for l in s.leaves),
                 settings=settings(max_examples=2000, database=None))
    assert found.shape == ()


def test_a_path_on_another_device_is_named_and_registered_by_its_name():
    on_cuda = paths.get("eager@cuda")
    assert on_cuda.name == "eager@cuda" and paths.get("eager@cuda") is on_cuda
    assert not on_cuda.exact_vs_eager  # other kernels: judged within the error bounds
    assert on_cuda.available() == NO_CUDA
    with pytest.raises(paths.UnknownPathError, match="unknown device 'tpu'.*valid devices: cpu, cuda"):
        paths.get("eager@tpu")


def test_a_known_issue_of_a_path_is_known_on_that_path_on_any_device():
    from harness.known_issues import KNOWN_ISSUES
    issue = next(i for i in KNOWN_ISSUES if "compiled" in i.paths)
    assert issue.affects_path("compiled:eager@cuda") and issue.affects_path("compiled:eager")


@needs_no_cuda
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_check_fails_in_one_sentence_where_no_gpu_is_visible(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "scripts/gpu-check.sh"), str(tmp_path / "out")],
                          check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        ("gpu-check: no GPU is visible (nvidia-smi is not installed); run this on a machine with an NVIDIA GPU "
         "and its driver.")]


@needs_no_cuda
def test_gpu_check_fails_in_one_sentence_where_torch_cannot_use_the_gpu(tmp_path):
    # A stand-in nvidia-smi that lists a GPU, beside the real torch that sees none: the script
    # must stop at its torch check, not at a later step.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: Stand-in (UUID: GPU-0)'\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", str(ROOT / "scripts/gpu-check.sh"), str(tmp_path / "out")],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"gpu-check: torch {torch.__version__} at {sys.executable} cannot use the GPU")


def _summary(tmp_path, campaign, tests_log: str, tests_rc: int = 0, device: str = "cuda") -> tuple[int, str]:
    import importlib.util
    loaded = importlib.util.spec_from_file_location("gpu_check_summary", ROOT / "scripts/gpu_check_summary.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    (tmp_path / "pytest.log").write_text(tests_log)
    if campaign is not None:
        (tmp_path / "c.json").write_text(json.dumps(campaign.as_json()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = module.main(["--tests-log", str(tmp_path / "pytest.log"), "--tests-rc", str(tests_rc),
                          "--campaign", f"{device}={tmp_path / 'c.json'}:0", "--wall-seconds", "321"])
    return rc, out.getvalue()


def test_the_gpu_check_summary_gives_examples_per_path_failures_and_memory_checks(tmp_path):
    from harness.results import CampaignResult, Failure, PathCounts

    campaign = CampaignResult(["eager", "owned"], "cuda", examples=12, with_backward=9, seconds=180.0)
    campaign.counts = {"eager": PathCounts(ok=12), "owned": PathCounts(ok=10)}
    campaign.counts["owned"].unsupported["tracing"] = 2
    log = "PASSED tests/cuda/test_cuda_paths.py::test_memory_returns_to_its_baseline_on_cuda\n9 passed in 3s\n"
    rc, text = _summary(tmp_path, campaign, log)
    assert rc == 0, text
    assert "campaign on cuda: 12 examples (9 with a backward) in 180 s" in text
    assert "unsupported: tracing (2)" in text
    assert "memory-baseline test tests/cuda/test_cuda_paths.py::test_memory_returns_to_its_baseline_on_cuda: PASSED" in text
    assert text.rstrip().endswith("wall time: 321 s (limit 480 s)\nresult: PASSED")

    spec = GraphSpec(leaves=(LeafSpec(),))
    campaign.failures["m"] = Failure("vs lifetime rule at drop_all cuda_bytes: N bytes of CUDA memory above", spec,
                                     "report", paths={"owned"})
    rc, text = _summary(tmp_path, campaign, log)
    assert rc == 1 and "1 distinct failure(s)" in text and text.rstrip().endswith("result: FAILED")
    assert "on every lifetime-checked CUDA run): 1 distinct failure(s)" in text


def test_the_gpu_check_summary_says_where_a_cause_of_a_cross_device_campaign_showed(tmp_path):
    from harness.results import CampaignResult, Failure, PathCounts

    names = ["eager", "eager@cuda", "dynamo:aot_eager", "dynamo:aot_eager@cuda"]
    campaign = CampaignResult(names, "cpu", examples=5, with_backward=5, seconds=60.0)
    campaign.counts = {name: PathCounts(ok=5) for name in names}
    spec = GraphSpec(leaves=(LeafSpec(),))
    for key, paths_seen in (("a", {"eager@cuda"}), ("b", {"dynamo:aot_eager", "dynamo:aot_eager@cuda"}),
                            ("c", {"dynamo:aot_eager"})):
        campaign.failures[key] = Failure(f"mismatch {key}", spec, "report", paths=paths_seen)
    rc, text = _summary(tmp_path, campaign, "9 passed in 3s\n", device="cpu,cuda")
    assert rc == 1
    assert "on eager@cuda: mismatch a [CUDA only]" in text
    assert "on dynamo:aot_eager,dynamo:aot_eager@cuda: mismatch b [CPU and CUDA]" in text
    assert "on dynamo:aot_eager: mismatch c [CPU only]" in text


def test_the_gpu_check_summary_fails_without_a_campaign_result(tmp_path):
    rc, text = _summary(tmp_path, None, "", tests_rc=2)
    assert rc == 1 and "campaign on cuda: no summary (exit 0)" in text and "no pytest result line" in text


def test_bench_workloads_make_their_leaves_on_the_device_the_worker_is_given(monkeypatch):
    from harness.counting import workloads

    monkeypatch.setenv(workloads.DEVICE_ENV, "meta")  # any device but the CPU shows the plumbing
    inputs = workloads.returning_inputs(3).make_inputs()
    assert [t.device.type for t in inputs] == ["meta"] * 3
    monkeypatch.delenv(workloads.DEVICE_ENV)
    assert workloads.returning_inputs(1).make_inputs()[0].device.type == "cpu"
