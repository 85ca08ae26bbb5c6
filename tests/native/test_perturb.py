"""The comparison this suite relies on catches a perturbed native result, and the seeded
native faults of harness/selfeval (a test-only build variant of the extension) are each
reported by the check they were made for."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from harness import paths, selfeval
from harness.check import check
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term


def grads_on(path, apply_on, mul):
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(3, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(2))
    out = apply_on(path, mul, x, y)
    return tuple(torch.autograd.grad(out.sum(), [x, y]))


def test_swapped_gradients_are_caught(apply_on, same, mul_save_inputs):
    eager = grads_on("eager", apply_on, mul_save_inputs)
    for holder in ("owned", "borrowed"):
        native = grads_on(holder, apply_on, mul_save_inputs)
        assert same(eager, native)
        swapped = (native[1], native[0])
        assert not same(eager, swapped), f"a swap of {holder}'s gradients went unnoticed"


def test_one_ulp_is_caught(apply_on, same, mul_save_inputs):
    eager = grads_on("eager", apply_on, mul_save_inputs)
    native = grads_on("borrowed", apply_on, mul_save_inputs)
    nudged = (torch.nextafter(native[0], torch.full_like(native[0], float("inf"))), native[1])
    assert not same(eager, nudged)


# --- the seeded native faults (harness/selfeval/native.py, a test-only build variant) ---------
# Each runs `python -m harness check` in a child process with the fault installed (a fault
# may crash the process); the same spec passes in this process, on the normal build.

X0, X1 = Arg("x0"), Arg("x1")
SIN0 = OutputSpec("compute", terms=(Term(0, "sin", 1.0),))
SIN1 = OutputSpec("compute", terms=(Term(1, "sin", 1.0),))


def _graph(*functions: FunctionSpec, **fields) -> GraphSpec:
    return GraphSpec(shape=(2, 3), leaves=(LeafSpec(True), LeafSpec(True)), functions=functions, **fields)


#: fault -> (spec, a line the child's report must contain, whether owned is spared)
NATIVE_FAULTS = {
    "native_wide_grad_dropped": (
        _graph(FunctionSpec(args=(X0,) * 26,
                            outputs=(OutputSpec("compute", terms=tuple(Term(i, "linear", 1.0) for i in range(26))),))),
        "borrowed vs eager: backward grad:x0: not bit-identical", True),
    "native_borrowed_use_after_release": (
        _graph(FunctionSpec(args=(X0, X1), outputs=(SIN0, OutputSpec("input", slot=1)), save=("inputs",))),
        "borrowed vs owned: life:forward x1: expected (True, 3), got (True, 2)", True),
    "native_extra_reference": (
        _graph(FunctionSpec(args=(X0, X1), outputs=(SIN0,), save=("inputs",))),
        "owned vs lifetime rule: drop_all x0: still alive after every reference was dropped (leak)", False),
    "native_saved_released_early": (
        _graph(FunctionSpec(args=(X0, X1), outputs=(SIN0,), save=("inputs",))),
        ("owned vs eager: backward error: owned raised RuntimeError at backward: Trying to backward "
         "through the graph a second time"), False),
    "native_mark_dirty_ignored": (
        _graph(FunctionSpec(args=(Arg("x0", clone=True), X1),
                            outputs=(OutputSpec("dirty", slot=0, coeff=2.0), OutputSpec("compute", terms=(Term(1, "sin", 1.0),))),
                            save=("inputs",))),
        "owned vs eager: meta:forward version:f0.0: expected 2, got 1", False),
    "native_non_differentiable_ignored": (
        _graph(FunctionSpec(args=(X0, X1), save=("inputs",), outputs=(
            SIN0, OutputSpec("compute", terms=(Term(1, "linear", 2.0),), non_differentiable=True)))),
        "owned vs eager: forward requires_grad:f0.1: expected False, got True", False),
    "native_materialize_grads_ignored": (  # an undefined tangent: that of a non-differentiable input
        _graph(FunctionSpec(args=(X0,), jvp=True, outputs=(
                   OutputSpec("compute", terms=(Term(0, "linear", 1.0),), non_differentiable=True),)),
               FunctionSpec(args=(Arg("f0.0"), X1), outputs=(OutputSpec("view", slot=0), SIN1),
                            materialize_grads=False, jvp=True, save=("inputs",)),
               forward_ad=True),
        "owned vs math: forward_ad tangent:f1.1: got None, expected a tensor", False),
    "native_needs_input_grad_off_by_one": (
        _graph(FunctionSpec(args=(Arg(const=2), X0, X1), needs_input_grad="read", save=("inputs",),
                            outputs=(OutputSpec("compute", terms=(Term(1, "sin", 1.0), Term(2, "linear", 1.0))),))),
        "owned vs eager: backward grad:x1: got None, expected a tensor", False),
    "native_listed_output_tracked": (
        _graph(FunctionSpec(args=(X0, X1), save=("inputs",), outputs=(
            SIN0, OutputSpec("compute", terms=(Term(1, "linear", 2.0),), listed=True)))),
        "owned vs eager: forward requires_grad:f0.1: expected False, got True", False),
    "native_listed_argument_counted": (  # x0 does not require grad, x1 (in the list) does
        GraphSpec(shape=(2, 3), leaves=(LeafSpec(False), LeafSpec(True)), functions=(FunctionSpec(
            args=(X0, Arg("x1", listed=True)), save=("inputs",), outputs=(
                OutputSpec("compute", terms=(Term(0, "linear", 2.0), Term(1, "sin", 1.0))),)),)),
        "owned vs eager: forward requires_grad:f0.0: expected False, got True", False),
}


def test_every_native_fault_has_a_case():
    assert set(NATIVE_FAULTS) == {f.name for f in selfeval.FAULTS if f.family == "native"}


@pytest.mark.parametrize("name", sorted(NATIVE_FAULTS))
def test_a_seeded_native_fault_is_reported(name, native, tmp_path):
    spec, line, owned_spared = NATIVE_FAULTS[name]
    native_paths = [paths.get("owned"), paths.get("borrowed")]
    assert not check(spec, native_paths).failed  # the normal build: the spec passes
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec.to_json())
    done = subprocess.run([sys.executable, "-m", "harness", "check", str(spec_file), "--paths", "owned,borrowed"],
                          capture_output=True, text=True, env=selfeval.subprocess_env(name), timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert line in done.stdout, done.stdout
    assert ("owned: ok" in done.stdout) == owned_spared, done.stdout


def test_the_fault_variant_is_its_own_build_and_a_normal_run_never_loads_it(native):
    from pathlib import Path

    from harness.selfeval import native as native_faults

    assert not hasattr(native._extension(), "_set_seeded_fault")  # no fault code in a normal build
    variant = native_faults.variant()
    assert hasattr(variant, "_set_seeded_fault")
    assert Path(variant.__file__).parent != native.cache_dir() and "variants" in variant.__file__
    with selfeval.installed("native_extra_reference"):
        assert native._extension() is variant
    assert native._extension() is not variant
