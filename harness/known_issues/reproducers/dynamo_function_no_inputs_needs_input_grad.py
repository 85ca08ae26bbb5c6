"""Candidate torch issue (found by the harness with a plain-style Function; torch only).

torch.compile of a custom autograd.Function applied with NO arguments (`F.apply()`) gives
its forward a ctx whose `needs_input_grad` is None; eager gives the empty tuple `()`. So
a forward that reads it, e.g. `tuple(ctx.needs_input_grad)`, raises inside Dynamo
"TypeError: 'NoneType' object is not iterable" (reported as the graph break "Observed
exception", Dynamo's ConstantVariable(str: ...) stand-in for the TypeError) with
fullgraph=True, on backends eager and aot_eager alike. With fullgraph=False Dynamo
graph-breaks there and runs the Function eagerly, which succeeds.

Why: torch/_dynamo/variables/misc.py, AutogradFunctionContextVariable.create, sets
`needs_input_grad` only `if args and not kwargs`; an empty argument list is falsy, so it
stays None, and var_getattr("needs_input_grad") then answers None. One argument of any
kind (even a non-tensor constant) gives the right tuple.

torch 2.14.1 stores the value on the traced ctx only `if args`, so the same read raises
AttributeError instead: that form is dynamo_function_no_inputs_needs_input_grad_missing.py,
and this script reports it as "not this form" (exit 0).

Exit status 1 and "REPRODUCED" when the bug is present (fullgraph=True, backend from
argv[1], default aot_eager); 0 when fixed.
"""
import sys

import torch

seen = []  # what Probe's forward saw as ctx.needs_input_grad


class NoInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx):
        ctx.flags = tuple(ctx.needs_input_grad)  # () in eager
        return torch.zeros(3)

    @staticmethod
    def backward(ctx, g):
        return ()


class Probe(torch.autograd.Function):
    """Only records the value, so it compiles and shows the root cause."""

    @staticmethod
    def forward(ctx):
        seen.append(ctx.needs_input_grad)
        return torch.zeros(3)

    @staticmethod
    def backward(ctx, g):
        return ()


def seen_when_compiled(backend):
    torch._dynamo.reset()
    seen.clear()
    try:
        torch.compile(lambda: Probe.apply(), backend=backend, fullgraph=True)()
    except torch._dynamo.exc.Unsupported as e:  # 2.14 leaves it unset: ...-needs-input-grad-missing
        return f"{type(e).__name__} ({str(e).splitlines()[0]})"
    return seen[0]


def reproduces(backend, fullgraph):
    torch._dynamo.reset()
    f = torch.compile(lambda: NoInputs.apply(), backend=backend, fullgraph=fullgraph)
    try:
        f()
    except Exception as e:  # Dynamo wraps the TypeError in a graph break ("Observed exception")
        if "has no attribute 'needs_input_grad'" in str(e):
            print(f"{backend} fullgraph={fullgraph}: not this form: ctx has no needs_input_grad at all "
                  "(torch 2.14: dynamo-no-inputs-needs-input-grad-missing)")
            return False
        if "'NoneType' object is not iterable" in str(e):
            print(f"{backend} fullgraph={fullgraph}: REPRODUCED: {type(e).__name__}: {str(e).splitlines()[0]} "
                  "(TypeError: 'NoneType' object is not iterable); eager runs it")
            return True
        raise
    print(f"{backend} fullgraph={fullgraph}: runs" + (" (Dynamo graph-breaks and runs it eagerly)" if not fullgraph
                                                        else f" (fixed in torch {torch.__version__}?)"))
    return False


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    Probe.apply()
    assert NoInputs.apply().shape == (3,) and seen == [()], seen  # eager is fine
    print(f"{backend}: ctx.needs_input_grad in a compiled forward: {seen_when_compiled(backend)!r}; in eager: ()")
    results = {fullgraph: reproduces(backend, fullgraph) for fullgraph in (True, False)}
    raise SystemExit(1 if results[True] else 0)
