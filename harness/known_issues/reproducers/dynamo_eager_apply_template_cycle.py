"""Known torch issue dynamo-eager-apply-template-cycle (found by the harness; torch only).

torch.compile(backend="eager") of a function that applies a custom autograd.Function which saves
its input: after the backward, once the user drops every reference, the input (and the leaf
behind it) stays alive until gc.collect() runs. Eager autograd frees it as soon as the graph is
dropped (and a non-retaining backward releases saved tensors even earlier).

What holds it: Dynamo traces the Function into the autograd_function_apply higher-order op.
The eager backend runs that op as is, and AutogradFunctionApply.__call__
(torch/_functorch/autograd_function.py) defines a new `ApplyTemplate` Function class on every
call, whose forward stores the forward graph's saved values in a `nonlocal saved_values` of
`__call__`, which its backward reads. So the saved tensors live in a closure cell of the class's
methods, outside autograd's SavedVariable (a backward does not release them), and every class is
in a reference cycle of its own (its __mro__, and ApplyTemplateBackward._forward_cls): they die
only when a full collection frees that class. The AOT backends trace through the op and never
run it, so they are not affected; neither is a Function Dynamo cannot trace (it runs eagerly).

Exit status 1 and "REPRODUCED" when the bug is present (backend eager); 0 when fixed.
Other backends are reported for information (e.g. `python this.py eager aot_eager`).
"""
import gc
import sys

import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2.0 * g * a


def square(a):
    return Square.apply(a)


def saved_values_holders():
    """ApplyTemplate classes of autograd_function_apply whose closure still holds saved values."""
    found = []
    for obj in gc.get_objects():
        if issubclass(type(obj), type) and obj.__qualname__.endswith("<locals>.ApplyTemplate"):
            backward = vars(obj)["backward"].__func__
            cells = dict(zip(backward.__code__.co_freevars, backward.__closure__ or ()))
            if "saved_values" in cells and cells["saved_values"].cell_contents:
                found.append(obj)
    return found


def reproduces(backend):
    torch._dynamo.reset()
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    try:
        a = torch.randn(3, dtype=torch.float64, requires_grad=True)
        ref = torch._C._WeakTensorRef(a)
        out = torch.compile(square, backend=backend, fullgraph=True)(a)
        out.sum().backward()
        correct = torch.allclose(a.grad, 2.0 * a.detach())
        del out, a
        alive_before_gc = not ref.expired()
        holders = len(saved_values_holders())
        gc.collect()
        alive_after_gc = not ref.expired()
    finally:
        gc.enable()
    if correct and alive_before_gc and not alive_after_gc:
        print(f"{backend}: REPRODUCED: the input stayed alive after every reference was dropped (eager frees "
              f"it), until gc.collect() freed it; {holders} "
              f"ApplyTemplate class(es) of autograd_function_apply held it in their saved_values "
              f"(gradient correct: {correct})")
        return True
    print(f"{backend}: not reproduced: gradient correct {correct}, alive before gc {alive_before_gc}, "
          f"after gc {alive_after_gc}")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
