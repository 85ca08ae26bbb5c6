"""The math oracle: the same op sequence by plain autograd, and float64 gradcheck."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

import torch
from torch.autograd.gradcheck import GradcheckError

from harness.build import Applier, BuiltGraph, build, math_apply
from harness.dataflow import VERSION_ERROR, version_error_expected
from harness.generic import GeneratedFunction
from harness.run import CHECKPOINTS, RunResult, apply_eager, forward, run_graph
from harness.spec import COMPLEX_DTYPES, GraphSpec

#: what torch says for each deliberate error case of a spec
EXPECTED_ERRORS = {
    "grad_count": re.compile(r"returned an incorrect number of gradients"),
    "grad_shape": re.compile(r"returned an invalid gradient at index \d+ - got .* but expected shape compatible"),
    "grad_for_nontensor": re.compile(r"returned a gradient different than None at position \d+, "
                                     r"but the corresponding forward input was not a Variable"),
}


class OracleError(AssertionError):
    """The oracle itself failed: a bug in the harness, never a finding about torch."""


def math_applier(n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
    return math_apply(cls.spec, args, cls.shape, cls.dtype, cls.device)


def math_applier_for(spec: GraphSpec) -> Applier:
    """math_applier, except that computed outputs read clones of the values the user
    modifies in place after the forward (`mutated_outputs`): plain autograd then never saves
    such a value, so the oracle never raises torch's version-counter error (whether the
    custom Function must is predicted by `version_error_expected`). Values are unchanged."""
    mutated = set(spec.mutated_outputs)
    if not mutated:
        return math_applier

    def applier(n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
        read = [a.clone() if arg.ref in mutated else a for arg, a in zip(spec.functions[n].args, args)]
        return math_apply(cls.spec, args, cls.shape, cls.dtype, cls.device, read)
    return applier


def run_math(built: BuiltGraph) -> RunResult:
    result = run_graph(built, math_applier_for(built.spec), "math", observers=())
    if result.status == "error":
        raise OracleError(f"the math oracle raised {result.describe_error()}") from result.error
    return result


def completed(result: RunResult) -> RunResult:
    """The part of a result from checkpoints that finished before an error."""
    if result.status != "error":
        return result
    done = CHECKPOINTS[: CHECKPOINTS.index(result.error_checkpoint)]
    return dataclasses.replace(
        result,
        tensors={c: v for c, v in result.tensors.items() if c in done},
        values={c: v for c, v in result.values.items() if c in done},
    )


def error_is_expected(spec: GraphSpec, result: RunResult) -> bool:
    """A deliberate error case of the spec raised the error torch documents for it, from
    the very Function that declares it (torch names the node: "function F<n>Backward"); or
    the version-counter error where `version_error_expected` says torch must raise it."""
    if result.status != "error" or result.error_checkpoint not in ("backward", "double_backward"):
        return False
    message = str(result.error)
    if VERSION_ERROR.search(message):
        return result.error_checkpoint == "backward" and version_error_expected(spec)
    # under torch.func the node is the Function's generated single-level twin, named
    # "<Function>Generated", and under vmap its vmapped version "Vmapped<Function>"
    # (torch/_functorch/autograd_function.py: generate_single_level_function,
    # vmapify_autograd_function)
    node = re.match(r"^[Ff]unction (?:Vmapped)?F(\d+)(?:Generated)?Backward ", message)
    if node is None or int(node[1]) >= len(spec.functions):
        return False
    declared = spec.functions[int(node[1])].error
    return declared is not None and EXPECTED_ERRORS[declared].search(message) is not None


# --- gradcheck ----------------------------------------------------------------------
#
# Only outputs that require grad: torch's fast mode crashes or fails falsely when an output
# that is float but not differentiable precedes a differentiable one (pytorch/pytorch#194869,
# #190436; fixed for backward mode by #194222), avoided by construction here. Fast mode checks
# a random projection u^T J v of each Jacobian, which a wrong Jacobian fails with probability
# 1, in 2.6x less time than slow mode's every entry: over 505 generated specs, the same
# verdicts (all ok) in 1.0 s against 2.58 s of CPU; 2953 more, all ok; with six seeded formula
# faults (harness.selfeval: wrong_backward, wrong_jvp, sin_backward_term_dropped,
# tanh_derivative_sign, square_derivative_halved, double_backward_detached) over 300 specs,
# the same failures in both modes (154, 7, 15, 9, 19, 0).

GRADCHECK_MAX_ELEMENTS = 64
#: campaigns run gradcheck where it is cheap: at most this many input elements
CAMPAIGN_GRADCHECK_ELEMENTS = 12


def gradcheck_reason(spec: GraphSpec, max_elements: int = GRADCHECK_MAX_ELEMENTS) -> str | None:
    """None when `gradcheck_graph` applies to this spec, else why not."""
    if any(fn.error for fn in spec.functions):
        return "deliberate error case"
    leaves = [leaf for leaf in spec.leaves if leaf.requires_grad]
    numel = 1
    for d in spec.shape:
        numel *= d
    total = sum(max(leaf.views, 1) * numel for leaf in leaves)
    if not leaves or total == 0:
        return "no differentiable input"
    if total > max_elements:
        return f"too large for finite differences ({total} > {max_elements} elements)"
    if not _compared_refs(_as_float64(spec)):
        return "no differentiable output reaches gradcheck (nothing to compare)"
    return None


class GradcheckRaised(Exception):
    """torch raised inside gradcheck (the Functions' forward or backward, the engine): a finding
    about the checked code, unlike an error of the harness preparing the check."""


def _as_float64(spec: GraphSpec) -> GraphSpec:
    """The spec gradcheck runs: float64 (complex128 for a complex graph), no hooks, no tracing.
    gradcheck backpropagates the graph once per input, which a Function with
    clear_saved_tensors_on_access refuses; the flag changes no formula."""
    wide = "complex128" if spec.dtype in COMPLEX_DTYPES else "float64"
    return dataclasses.replace(spec, dtype=wide, hooks=(), trace=False, functions=tuple(
        dataclasses.replace(fn, clear_saved_tensors_on_access=False) for fn in spec.functions))


def _compared_refs(spec64: GraphSpec) -> list[str]:
    """The Function outputs gradcheck compares. Finite differences also see what flows through
    non-differentiable outputs, outputs returned in a list (OutputSpec.listed), the outputs of a
    Function given a tensor in a list (Arg.listed), and the outputs of Functions applied under no_grad,
    which backward by definition does not: only outputs untouched by them are compared."""
    from harness.dataflow import Dataflow

    flow = Dataflow(spec64)
    no_grad_refs = {f"f{n}.{k}" for n, fn in enumerate(spec64.functions) if fn.grad_mode == "no_grad"
                    for k in fn.tensor_outputs}
    # (a Function given a tensor in a list, Arg.listed, reads it without autograd seeing it)
    list_readers = {f"f{n}.{k}" for n, fn in enumerate(spec64.functions) if fn.listed_slots for k in fn.tensor_outputs}
    through_nondiff = flow.downstream(set(spec64.non_differentiable_refs()) | spec64.listed_refs() | no_grad_refs
                                      | list_readers)
    return [r for r in spec64.value_refs()
            if r.startswith("f") and flow.requires_grad[r] and r not in through_nondiff]


@dataclasses.dataclass
class GradcheckSetup:
    """What gradcheck_graph checks: the spec in float64 (complex128), its leaves, the leaves it
    varies (the others stay fixed) and the outputs it compares, and whether forward AD is checked."""

    spec: GraphSpec
    built: Any
    leaves: list
    varied: list[int]
    refs: list[str]
    forward_ad: bool


def gradcheck_setup(spec: GraphSpec, device: str = "cpu") -> GradcheckSetup:
    """See gradcheck_graph."""
    spec64 = _as_float64(spec)
    refs = _compared_refs(spec64)
    built = build(spec64, device)
    leaves = built.make_leaves()
    grad_idx = [i for i, leaf in enumerate(leaves) if leaf.requires_grad]
    # forward AD only where gradcheck's tangents are the runs' tangents (harness/run.py gives
    # every leaf one; gradcheck only the inputs it differentiates): so the known-issue
    # triggers, derived for the runs, hold here too
    every_leaf = len(grad_idx) == sum(leaf.dtype is None for leaf in spec.leaves)
    return GradcheckSetup(spec64, built, leaves, grad_idx, refs, spec.forward_ad and every_leaf)


def gradcheck_graph(spec: GraphSpec, device: str = "cpu") -> bool:
    """float64 (complex128 for a complex graph) gradcheck of the whole graph applied by the
    stock Function.apply.

    Checks the generated backward (and jvp when the spec runs forward AD) against finite
    differences, independently of the math oracle. Raises GradcheckError on failure, and
    GradcheckRaised when torch raised inside gradcheck; anything else it raises is the harness's
    own error. For complex inputs and outputs gradcheck differentiates real and imaginary parts
    apart and checks torch's conjugate Wirtinger gradients itself (torch/autograd/gradcheck.py, the
    complex branches of _compute_numerical_gradient and the vJ of the analytical side);
    int64 / bool leaves do not require grad and stay fixed. Only for a spec `gradcheck_reason`
    accepts: with nothing to compare it raises OracleError rather than pass.
    """
    setup = gradcheck_setup(spec, device)
    if not setup.refs:
        raise OracleError("gradcheck_graph was given a spec with no differentiable output to compare; "
                          "ask gradcheck_reason first")

    def fn(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        inputs = list(setup.leaves)
        for i, x in zip(setup.varied, xs):
            inputs[i] = x
        values = forward(setup.built, apply_eager, inputs)
        return tuple(values[r] for r in setup.refs)

    try:
        return torch.autograd.gradcheck(
            fn, tuple(setup.leaves[i] for i in setup.varied), check_forward_ad=setup.forward_ad,
            check_backward_ad=True, check_undefined_grad=False, fast_mode=True)
    except GradcheckError:
        raise
    except Exception as e:  # noqa: BLE001 -- torch raised inside gradcheck: a finding, told apart from the harness's errors
        raise GradcheckRaised(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e


__all__ = ["EXPECTED_ERRORS", "GradcheckRaised", "GradcheckSetup", "OracleError", "completed", "error_is_expected",
           "gradcheck_graph", "gradcheck_setup",
           "gradcheck_reason", "math_applier", "math_applier_for", "run_math"]
