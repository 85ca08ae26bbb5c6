"""Seeded faults: a catalog of realistic bugs, each installed where it would occur, and
only on request (`python -m harness selfeval`, or a test). Nothing here is imported by a
normal run; production code has no fault switches.

Families (one module each):
  formulas   the generated Functions' backward/jvp formulas (harness.build's derivative
             table and formula functions; plain-style Functions get visible source lines)
  autograd   torch's autograd as a custom Function sees it from Python (BackwardCFunction's
             apply/apply_jvp/hook registration, Tensor.register_hook, Function.apply's
             keyword binding)
  compilers  only under compiled autograd, torch.compile, or a torch.func transform
  dynamo     where torch.compile traces a custom Function (its ctx, forward, backward), and
             compiled autograd's capture of hooks: each for one class of Functions only
  forms      torch's handling of one form of writing a Function (setup_context, vjp, a single
             output, once_differentiable, materialize_grads), where only the twin-form oracle
             (harness/oracles/twins.py) can see it
  lifetimes  what a Function keeps alive (the lifetime oracle), and two faults that kill or
             stall the process (the campaign's worker isolation)
  native     the native paths, compiled into a test-only build variant of the extension

Use:
    with selfeval.installed("wrong_backward"):
        check(spec, paths)
A subprocess gets one with `subprocess_env(name)`: the variable HARNESS_SELFEVAL_FAULT and
this package's site/ folder (a sitecustomize that installs it) on PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.selfeval import autograd, compilers, formulas, forms, lifetimes
from harness.selfeval import dynamo as dynamo_faults
from harness.selfeval import native as native_faults
from harness.selfeval._patching import Patches

ENV = "HARNESS_SELFEVAL_FAULT"
SITE_DIR = Path(__file__).resolve().parent / "site"

NATIVE_PATHS = ("owned", "borrowed")
COMPILED_PATHS = ("compiled",)
DYNAMO_PATHS = ("dynamo",)


@dataclass(frozen=True)
class Fault:
    name: str
    family: str
    description: str
    #: the campaign paths that can see it (eager, the reference, always runs too)
    paths: tuple[str, ...]
    install: Callable[[Patches], None]
    #: False for the faults that test the campaign runner (a crash or a hang), not an oracle:
    #: `selfeval` runs only the others unless asked by name
    evaluated: bool = True


def _doc(fn: Callable) -> str:
    return " ".join((fn.__doc__ or "").split())


def _fault(module, name: str, paths: tuple[str, ...] = ("eager",), *, family: str = "",
           evaluated: bool = True) -> Fault:
    fn = getattr(module, name)
    return Fault(name, family or module.__name__.rsplit(".", 1)[1], _doc(fn), paths, fn, evaluated)


def _native(name: str, description: str) -> Fault:
    return Fault(name, "native", description, NATIVE_PATHS, lambda p: native_faults.install(p, name))


FAULTS: tuple[Fault, ...] = (
    Fault("wrong_backward", "formulas", "a Function's backward returns its first input's gradient 1.5 times too "
          "large", ("eager",), formulas.wrong_backward),
    Fault("wrong_jvp", "formulas", "a Function's jvp returns every computed tangent 1.5 times too large",
          ("eager",), formulas.wrong_jvp),
    Fault("sin_backward_term_dropped", "formulas", "the backward formula drops the term of op sin (its "
          "derivative reads 0 in backward and in the intermediates saved for it; jvp is right)",
          ("eager",), formulas.sin_backward_term_dropped),
    Fault("tanh_derivative_sign", "formulas", "the derivative table has 1 + tanh(x)^2 for tanh "
          "(backward and jvp)", ("eager",), formulas.tanh_derivative_sign),
    Fault("square_derivative_halved", "formulas", "the derivative table has x for x*x instead of 2x "
          "(backward and jvp)", ("eager",), formulas.square_derivative_halved),
    _fault(autograd, "jvp_tangent_scaled"),
    _fault(autograd, "every_grad_scaled"),
    # what hooks saw is compared across paths, not with the math oracle (whose graph has
    # other nodes): the native paths' own nodes are the reference here
    _fault(autograd, "node_hooks_not_called", NATIVE_PATHS),
    _fault(autograd, "output_hooks_not_called", NATIVE_PATHS),
    _fault(autograd, "double_backward_detached"),
    _fault(autograd, "grad_outputs_swapped"),
    # reached only by Functions called with keyword arguments (FunctionSpec.keyword_args)
    _fault(autograd, "keyword_args_bound_in_call_order"),
    _fault(compilers, "compiled_autograd_backward_scaled", COMPILED_PATHS),
    _fault(compilers, "aot_backward_miscompiled", ("dynamo",)),
    # reached only where compiled autograd captures a compiled region's backward (GraphSpec.compiled_backward)
    _fault(compilers, "compiled_autograd_aot_backward_scaled", ("dynamo",)),
    # torch.func paths come from another branch (harness/paths/func*); until they are
    # registered, a campaign cannot see this one and selfeval reports it as not run
    _fault(compilers, "func_transform_output_scaled", ("func.grad", "func.vmap", "func.jvp")),
    # the custom_op form (FunctionSpec.api): campaigns meet it through the twin-form oracle
    # (harness/oracles/twins.py, as_custom_op), and tests/test_forms.py on explicit specs
    _fault(compilers, "compiled_autograd_custom_op_grads_rotated", COMPILED_PATHS),
    _fault(compilers, "vmap_custom_op_samples_rolled", ("func.vmap",)),
    # and the user vmap rule form (FunctionSpec.vmap_rule; func.vmap.user adds one too, but vmaps alone)
    _fault(compilers, "grad_vmap_user_rule_samples_rolled", ("func.grad_vmap",)),
    # and a leaf the batch shares (GraphSpec.batch_shared: vmap's in_dims=None)
    _fault(compilers, "reductify_takes_one_sample", ("func.grad_vmap",)),
    # and a batch dimension that is not the first (GraphSpec.batch_dim: vmap's in_dims=-1)
    _fault(compilers, "vmap_rule_batch_dim_taken_as_first", ("func.vmap",)),
    *(_fault(dynamo_faults, name, DYNAMO_PATHS) for name in (
        "dynamo_saved_tensors_reversed", "dynamo_mark_non_differentiable_dropped",
        "dynamo_needs_input_grad_of_intermediates_false", "dynamo_input_returned_as_is_not_viewed",
        "dynamo_apply_grad_outputs_swapped", "dynamo_traced_backward_scaled")),
    _fault(dynamo_faults, "ca_tensor_pre_hook_skipped", COMPILED_PATHS),
    _fault(dynamo_faults, "ca_node_post_hook_skipped", COMPILED_PATHS),
    # only the twin-form oracle sees these (eager-only campaigns; docs/twins.md)
    *(_fault(forms, name) for name in (
        "setup_context_pre_hooks_dropped", "vjp_grads_last_bit", "single_output_pre_hooks_twice",
        "materialize_off_zero_grads_dropped", "once_differentiable_grads_last_bit")),
    _fault(lifetimes, "leak_input"),
    _fault(lifetimes, "ctx_cycle"),
    _fault(lifetimes, "drop_saved"),
    _fault(lifetimes, "crash_wide", family="isolation", evaluated=False),
    _fault(lifetimes, "hang_wide", family="isolation", evaluated=False),
    *(_native(name, text) for name, text in native_faults.FAULTS.items()),
)

CATALOG: dict[str, Fault] = {f.name: f for f in FAULTS}


def get(name: str) -> Fault:
    if name not in CATALOG:
        raise KeyError(f"no seeded fault {name!r}; the catalog has: {', '.join(CATALOG)}")
    return CATALOG[name]


def install(name: str) -> Callable[[], None]:
    """Install one fault in this process; returns the function that removes it."""
    patches = Patches()
    try:
        get(name).install(patches)
    except BaseException:
        patches.undo()
        raise
    return patches.undo


@contextlib.contextmanager
def installed(name: str) -> Iterator[Fault]:
    """The fault is active inside the block, and gone after it."""
    remove = install(name)
    try:
        yield get(name)
    finally:
        remove()


def subprocess_env(name: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python processes start with fault `name` installed."""
    env = dict(os.environ if base is None else base)
    env[ENV] = name
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE_DIR), env.get("PYTHONPATH", "")) if p)
    return env


__all__ = ["CATALOG", "ENV", "FAULTS", "Fault", "get", "install", "installed", "subprocess_env"]
