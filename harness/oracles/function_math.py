"""The float64 oracles of a user's own Function (harness.function_check), and its vmap oracle.

A generated graph has an independent math oracle (harness.oracles.math: the same ops with plain
autograd); a user's Function has none, so its stock `apply` is judged by finite differences in
float64: `torch.autograd.gradcheck` of the backward and of the jvp, `gradgradcheck` of the double
backward. `torch.vmap` of `apply` (its vmap rule) is judged against a loop over the batch.
Each oracle returns (status, detail): "ok", "failed", or "unsupported" with why it judged nothing.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterator, Sequence

import torch

from harness.build import LOSS_WEIGHTS
from harness.function_run import (as_tuple, differentiable_indices, double_backward_not_applicable, has_vmap_rule,
                                  jvp_not_applicable, loss_weights, tensor_indices)
from harness.oracles.compare import DtypeTolerances, compare
from harness.run import RunResult

#: differentiable input elements of one sample at most. Slow mode costs two forwards per input
#: element; a user's sample is checked once per sample, where harness.oracles.math's
#: GRADCHECK_MAX_ELEMENTS (64) bounds fast-mode gradcheck of every generated example of a campaign
FUNCTION_GRADCHECK_ELEMENTS = 512
#: batch size of the vmap check
VMAP_BATCH = 3

#: torch's documented incompatibilities, by the error torch raises: not the Function's defect,
#: and nothing to compare; the record says `unsupported` with the source
DOCUMENTED_INCOMPATIBILITIES = (
    (re.compile(r"When use_reentrant=True, torch\.utils\.checkpoint is incompatible with \.grad\(\)"),
     ("torch.utils.checkpoint with use_reentrant=True is documented as incompatible with torch.autograd.grad "
      "(which double backward, gradcheck and gradgradcheck use; torch.utils.checkpoint's docstring): "
      "check use_reentrant=False for these")),
)


def documented_incompatibility(error: BaseException | None) -> str | None:
    """The documented torch limitation this error is, or None."""
    for pattern, why in DOCUMENTED_INCOMPATIBILITIES:
        if error is not None and pattern.search(str(error)):
            return why
    return None


def _float64_function(function: type, sample: Sequence[Any], max_elements: int
                      ) -> tuple[Callable[..., tuple], tuple, str | None]:
    """(fn of the differentiable inputs, those inputs in float64, why not applicable: among others,
    more than `max_elements` differentiable input elements)."""
    converted = [a.detach().to(torch.complex128 if a.is_complex() else torch.float64).requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex()) else
                 a.detach() if isinstance(a, torch.Tensor) else a for a in sample]
    diff_idx = differentiable_indices(converted)
    inputs = tuple(converted[i] for i in diff_idx)

    differentiable_outputs: list[int] = []  # chosen once: forward-AD calls see no requires_grad

    def all_outputs(*diff: torch.Tensor) -> tuple:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in converted]
        for i, d in zip(diff_idx, diff):
            args[i] = d.clone()  # in-place Functions update the copy, never gradcheck's input
        return as_tuple(function.apply(*args))

    def fn(*diff: torch.Tensor) -> tuple:
        outs = all_outputs(*diff)
        return tuple(outs[k] for k in differentiable_outputs)

    if not diff_idx:
        return fn, inputs, "no input requires grad"
    elements = sum(t.numel() for t in inputs)
    if elements > max_elements:
        return fn, inputs, (f"too large for finite differences ({elements} > {max_elements} "
                            "differentiable input elements); pass a smaller sample")
    try:
        with torch.enable_grad():
            outs = all_outputs(*inputs)
    except Exception as e:  # noqa: BLE001  the Function's own choice (e.g. a fixed dtype): reported, not passed
        return fn, inputs, f"the Function does not run in float64 ({type(e).__name__}: {e})"
    differentiable_outputs.extend(k for k, o in enumerate(outs) if isinstance(o, torch.Tensor) and o.requires_grad)
    outs = fn(*inputs)
    if not outs:
        return fn, inputs, "no output requires grad"
    wrong = [str(o.dtype) for o in outs if o.dtype not in (torch.float64, torch.complex128)]
    if wrong:
        return fn, inputs, f"the Function returns {', '.join(wrong)} for float64 inputs"
    return fn, inputs, None


_JACOBIAN_MISMATCH = re.compile(r"Jacobian (computed with forward mode )?mismatch for output (\d+) with respect to "
                                r"input (\d+),\s*numerical:(tensor\(.*?\))\s*analytical:(tensor\(.*?\))\s*$", re.DOTALL)


@contextlib.contextmanager
def _tensors_printed_whole() -> Iterator[None]:
    """gradcheck puts both Jacobians in its message: printed whole and exact, they can be read back."""
    opts = torch._tensor_str.PRINT_OPTS
    saved = {"precision": opts.precision, "threshold": opts.threshold, "edgeitems": opts.edgeitems,
             "linewidth": opts.linewidth, "sci_mode": opts.sci_mode}
    torch.set_printoptions(precision=17, threshold=2**62, linewidth=2**30)
    try:
        yield
    finally:
        torch.set_printoptions(**saved)


def _largest_jacobian_error(message: str, differentiated: str) -> str | None:
    """gradcheck's Jacobian mismatch as one line: the entry that differs most, with its output,
    input and (flat) element indices, instead of both whole Jacobians."""
    found = _JACOBIAN_MISMATCH.search(message.split("\n\n")[0] + "\n")
    if found is None:
        return None
    names = {"tensor": torch.tensor, "torch": torch, "inf": float("inf"), "nan": float("nan")}
    numerical, analytical = (eval(text, names) for text in found.group(4, 5))  # torch's own repr, printed above
    error = (analytical - numerical).abs().nan_to_num(nan=float("inf"))
    row, col = divmod(int(error.argmax()), error.shape[1])  # gradcheck's layout: (input elements, output elements)
    which = "forward AD (the jvp)" if found.group(1) else differentiated
    wrong = int((~torch.isclose(analytical, numerical, rtol=1e-3, atol=1e-5)).sum())
    return (f"d output {found.group(2)}[{col}] / d input {found.group(3)}[{row}] (flat indices): {which} gives "
            f"{float(analytical[row, col]):.6g}, finite differences {float(numerical[row, col]):.6g} "
            f"({wrong} of {error.numel()} Jacobian entries differ beyond gradcheck's rtol=1e-3, atol=1e-5)")


def _run_oracle(run: Callable[[], Any], differentiated: str = "backward") -> tuple[str, str]:
    from torch.autograd.gradcheck import GradcheckError

    try:
        with _tensors_printed_whole():
            run()
    except GradcheckError as e:
        return "failed", _largest_jacobian_error(str(e), differentiated) or " ".join(str(e).split("\n\n")[0].split())
    except RuntimeError as e:
        incompatible = documented_incompatibility(e)
        if incompatible is not None:
            return "unsupported", incompatible
        return "failed", f"raised {type(e).__name__}: {e}"
    return "ok", ""


def gradcheck(function: type, sample: Sequence[Any], max_elements: int = FUNCTION_GRADCHECK_ELEMENTS
              ) -> tuple[str, str]:
    fn, inputs, why = _float64_function(function, sample, max_elements)
    if why is not None:
        return "unsupported", why
    # slow mode: see harness.oracles.math for fast mode's false failures with non-differentiable outputs
    return _run_oracle(lambda: torch.autograd.gradcheck(fn, inputs, fast_mode=False, check_backward_ad=True,
                                                        check_forward_ad=False, check_batched_grad=False))


def gradcheck_forward_ad(function: type, sample: Sequence[Any], max_elements: int = FUNCTION_GRADCHECK_ELEMENTS
                         ) -> tuple[str, str]:
    why = jvp_not_applicable(function, sample)
    fn, inputs, why = (None, (), why) if why is not None else _float64_function(function, sample, max_elements)
    if why is not None:
        return "unsupported", why
    return _run_oracle(lambda: torch.autograd.gradcheck(fn, inputs, fast_mode=False, check_backward_ad=False,
                                                        check_forward_ad=True, check_undefined_grad=False,
                                                        check_batched_grad=False))


def gradgradcheck(function: type, sample: Sequence[Any], max_elements: int = FUNCTION_GRADCHECK_ELEMENTS
                  ) -> tuple[str, str]:
    why = double_backward_not_applicable(function, sample)
    fn, inputs, why = (None, (), why) if why is not None else _float64_function(function, sample, max_elements)
    if why is not None:
        return "unsupported", why
    return _run_oracle(lambda: torch.autograd.gradgradcheck(fn, inputs, fast_mode=False),
                       "double backward (indices of gradgradcheck's function: inputs then grad_outputs)")


# --- vmap ----------------------------------------------------------------------------------


def _batch_element(sample: Sequence[Any], b: int) -> list[Any]:
    """Element b of the vmap batch: every tensor's values rolled by b positions. Each value
    stays in the sample's domain, and arguments of one shape stay aligned element by element."""
    return [a.detach().flatten().roll(b).view_as(a).clone().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in sample]


def _detached(a: Any) -> Any:
    return a.detach() if isinstance(a, torch.Tensor) else a


def check_vmap(function: type, sample: Sequence[Any]) -> tuple[str, str]:
    """torch.vmap of `apply`, and of torch.func.vjp through it, against a loop over the batch."""
    if not has_vmap_rule(function):
        return "unsupported", f"{function.__name__} has no vmap staticmethod and no generate_vmap_rule"
    tensor_idx = tensor_indices(sample)
    if not tensor_idx:
        return "unsupported", "no tensor argument to batch"
    elements = [_batch_element(sample, b) for b in range(VMAP_BATCH)]
    batched = [torch.stack([e[i] for e in elements]) if i in tensor_idx else a for i, a in enumerate(sample)]
    in_dims = tuple(0 if i in tensor_idx else None for i in range(len(sample)))

    def tensor_outputs(*args: Any) -> tuple:
        # copies: an in-place Function updates them, never the batch or its leaves
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        return tuple(o for o in as_tuple(function.apply(*copies)) if isinstance(o, torch.Tensor))

    expected, actual = RunResult("loop"), RunResult("torch.vmap")
    try:
        with torch.no_grad():
            looped = [tensor_outputs(*e) for e in elements]
            mapped = torch.vmap(tensor_outputs, in_dims=in_dims)(*[_detached(a) for a in batched])
    except RuntimeError as e:
        return "failed", f"torch.vmap raised {type(e).__name__}: {e}"
    for k in range(len(looped[0])):
        for b in range(VMAP_BATCH):
            expected.put("forward", f"out:{k}[{b}]", looped[b][k])
            actual.put("forward", f"out:{k}[{b}]", mapped[k][b])
    diff_idx = differentiable_indices(sample)
    diff_out = [k for k, o in enumerate(tensor_outputs(*elements[0])) if o.requires_grad] if diff_idx else []
    if diff_out:
        cotangents = loss_weights([looped[0][k] for k in diff_out], LOSS_WEIGHTS)

        def per_sample_grads(*args: Any) -> tuple:
            def differentiable(*diff: torch.Tensor) -> tuple:
                full = list(args)
                for i, d in zip(diff_idx, diff):
                    full[i] = d
                outs = tensor_outputs(*full)
                return tuple(outs[k] for k in diff_out)
            _, pullback = torch.func.vjp(differentiable, *[args[i] for i in diff_idx])
            return pullback(tuple(cotangents))
        try:
            looped_grads = [per_sample_grads(*e) for e in elements]
            mapped_grads = torch.vmap(per_sample_grads, in_dims=in_dims)(*batched)
        except RuntimeError as e:
            return "failed", f"per-sample gradients (torch.func.vjp under torch.vmap) raised {type(e).__name__}: {e}"
        for j, i in enumerate(diff_idx):
            for b in range(VMAP_BATCH):
                expected.put("backward", f"grad:x{i}[{b}]", looped_grads[b][j])
                actual.put("backward", f"grad:x{i}[{b}]", mapped_grads[j][b])
    mismatches = compare(expected, actual, DtypeTolerances(expected))
    if mismatches:
        return "failed", "; ".join(m.describe() for m in mismatches) + " (torch.vmap vs a loop over the batch)"
    return "ok", "outputs" + (" and per-sample gradients" if diff_out else "")


__all__ = ["DOCUMENTED_INCOMPATIBILITIES", "FUNCTION_GRADCHECK_ELEMENTS", "VMAP_BATCH", "check_vmap",
           "documented_incompatibility", "gradcheck", "gradcheck_forward_ad", "gradgradcheck"]
