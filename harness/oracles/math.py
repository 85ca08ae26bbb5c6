"""The math oracle: the same op sequence by plain autograd, and float64 gradcheck."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

import torch

from harness.build import BuiltGraph, GeneratedFunction, build, math_apply
from harness.run import CHECKPOINTS, RunResult, forward, run_graph
from harness.spec import GraphSpec

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


def run_math(built: BuiltGraph) -> RunResult:
    result = run_graph(built, math_applier, "math", lifetimes=False)
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
    """A deliberate error case of the spec raised the error torch documents for it."""
    if result.status != "error" or result.error_checkpoint not in ("backward", "double_backward"):
        return False
    message = str(result.error)
    return any(EXPECTED_ERRORS[fn.error].search(message) for fn in spec.functions if fn.error)


# --- gradcheck ----------------------------------------------------------------------

GRADCHECK_MAX_ELEMENTS = 64


def gradcheck_reason(spec: GraphSpec) -> str | None:
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
    if total > GRADCHECK_MAX_ELEMENTS:
        return f"too large for finite differences ({total} > {GRADCHECK_MAX_ELEMENTS} elements)"
    return None


def gradcheck_graph(spec: GraphSpec, device: str = "cpu") -> bool:
    """float64 gradcheck of the whole graph applied by the stock Function.apply.

    Checks the generated backward (and jvp when every Function has one) against finite
    differences, independently of the math oracle. Raises GradcheckError on failure.
    """
    spec64 = dataclasses.replace(spec, dtype="float64", hooks=(), trace=False)
    built = build(spec64, device)
    leaves = built.make_leaves()
    grad_idx = [i for i, leaf in enumerate(leaves) if leaf.requires_grad]
    refs = [r for r in spec64.value_refs() if r.startswith("f") and r not in spec64.non_differentiable_refs()]
    if not refs:
        return True

    def fn(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        inputs = list(leaves)
        for i, x in zip(grad_idx, xs):
            inputs[i] = x
        values = forward(built, lambda n, cls, args: cls.apply(*args), inputs)
        return tuple(values[r] for r in refs)

    return torch.autograd.gradcheck(
        fn, tuple(leaves[i] for i in grad_idx), check_forward_ad=spec.forward_ad,
        check_backward_ad=True, check_undefined_grad=False, fast_mode=False)


__all__ = ["EXPECTED_ERRORS", "OracleError", "completed", "error_is_expected", "gradcheck_graph",
           "gradcheck_reason", "math_applier", "run_math"]
