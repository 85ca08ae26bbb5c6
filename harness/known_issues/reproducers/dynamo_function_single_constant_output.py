"""Known torch issue dynamo-function-single-constant-output (found by the harness; torch only).

Eager autograd lets a custom autograd.Function's forward return a single non-tensor value
(not in a tuple); it comes back as-is. Under torch.compile, when an input requires grad
(so Dynamo traces the Function as the autograd_function_apply higher-order op), the trace
wrapper DynamoAutogradFunctionTraceHelper.fwd_trace_helper
(torch/_functorch/autograd_function.py) special-cases a single Tensor and otherwise runs
`for out in outs`: an int, float, bool or None raises "TypeError: '<type>' object is not
iterable" (a graph break "Observed exception" under fullgraph=True), and a string is split
into its characters, one output each, so backward(ctx, g) is then bound with one gradient
per character ("Too many positional arguments"). Returning the value in a one-element
tuple compiles; with no input that requires grad the forward is inlined and runs.

Exit status 1 and "REPRODUCED" when the bug is present (fullgraph=True, backend from argv[1],
default aot_eager); 0 when fixed.
"""
import sys

import torch


def returning(value):
    class ReturnsConstant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return value  # one non-tensor output, not a tuple

        @staticmethod
        def backward(ctx, g):
            return None
    return ReturnsConstant


def compiled(cls, backend, x):
    torch._dynamo.reset()
    try:
        return "returned", torch.compile(lambda a: cls.apply(a), backend=backend, fullgraph=True)(x)
    except torch._dynamo.exc.Unsupported as e:  # Dynamo reports the TypeError it met as a graph break
        context = [line.strip() for line in str(e).splitlines() if "raised exception" in line or "Variable(" in line]
        return "raised", f"{type(e).__name__}: {context[-1] if context else str(e).splitlines()[0]}"


def reproduces(backend):
    x = torch.ones(3, requires_grad=True)
    found = False
    for value in (1, None, "tag"):
        eager = returning(value).apply(x)
        assert eager == value, "eager returns the value as-is"
        how, got = compiled(returning(value), backend, x)
        wrong = how == "raised" or got != value
        found |= wrong
        print(f"{backend}: forward returns {value!r}: compiled {how} {got!r}; eager returned {eager!r}"
              + (" -- REPRODUCED" if wrong else ""))
    how, got = compiled(returning((1,)), backend, x)
    print(f"{backend}: forward returns (1,): compiled {how} {got!r} (the workaround)")
    return found


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    raise SystemExit(1 if reproduces(backend) else 0)
