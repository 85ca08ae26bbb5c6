"""dynamo-clear-saved-tensors-with-jvp: found by the clear_saved_tensors_on_access axis (docs/coverage.md,
"torch's conditions for custom Functions").

A Function with `clear_saved_tensors_on_access = True` (new in 2.13) and a user `jvp`, applied inside
torch.compile without any forward AD: the forward raises InternalTorchDynamoError wrapping
"RuntimeError: saved_tensors can only be accessed once when clear_saved_tensors_on_access=True".
Eager is fine, and so is the same Function without a jvp under torch.compile (Dynamo traces it into
autograd_function_apply); with a jvp Dynamo does not trace it ("Unsupported custom jvp"), and the way
it runs the Function then reads ctx.saved_tensors more than once. The same without a jvp where the
Function gets one tensor twice (`Add.apply(x, x)`) and calls ctx.set_materialize_grads(False), even
saving nothing (found by `python -m harness nightly`; either alone runs), and where the Function's
forward has a graph break (a data-dependent branch), whether its input requires grad or not (found by
the paths-agree property's floor on what each path checks). Every backend (eager, aot_eager,
inductor). Seen on 2.13.0 (CPU).

Exit status 1 and "REPRODUCED" when the failure is present; 0 when fixed.
"""
import torch


class Sin(torch.autograd.Function):
    clear_saved_tensors_on_access = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos()

    @staticmethod
    def jvp(ctx, t):  # never called: no forward AD runs
        x, = ctx.saved_tensors
        return t * x.cos()


class Add(torch.autograd.Function):
    clear_saved_tensors_on_access = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Branchy(torch.autograd.Function):
    clear_saved_tensors_on_access = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if x.sum() > 0:  # a data-dependent branch: Dynamo breaks the graph in the forward
            return x * 2
        return x * 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * torch.where(x.sum() > 0, 2.0, 3.0)


def f(x):
    return Sin.apply(x)


def branchy(x):
    return Branchy.apply(x)


def twice(x):
    return Add.apply(x, x)


def reproduced(function, x: torch.Tensor, backend: str = "aot_eager") -> str | None:
    """The failure under torch.compile, or None where the compiled result (and gradient) is eager's."""
    torch._dynamo.reset()
    out = function(x)
    if x.requires_grad:
        out.sum().backward()
    expected, x.grad = x.grad, None
    try:
        compiled = torch.compile(function, backend=backend)(x)
        if x.requires_grad:
            compiled.sum().backward()
    except Exception as e:  # noqa: BLE001 -- the failure to report
        if "saved_tensors can only be accessed once" in str(e):
            return f"{type(e).__name__} under torch.compile: {str(e).splitlines()[0][:200]}"
        raise
    assert torch.allclose(compiled, out), (compiled, out)
    assert expected is None or torch.allclose(x.grad, expected), (x.grad, expected)
    return None


def main() -> int:
    cases = [("with a jvp", f, True, "aot_eager"), ("one tensor twice", twice, True, "aot_eager"),
             ("a graph break, backend eager", branchy, True, "eager"),
             ("a graph break, no input requiring grad", branchy, False, "aot_eager")]
    seen = [f"{name}: {failure}" for name, function, grad, backend in cases
            if (failure := reproduced(function, torch.randn(3, requires_grad=grad), backend)) is not None]
    if seen:
        print("REPRODUCED: " + "; ".join(seen))
        return 1
    print("fixed: torch.compile runs every Function and their results and gradients are eager's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
