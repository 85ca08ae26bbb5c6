"""dynamo-clear-saved-tensors-with-jvp: found by the clear_saved_tensors_on_access axis (docs/coverage.md,
"torch's conditions for custom Functions").

A Function with `clear_saved_tensors_on_access = True` (new in 2.13) and a user `jvp`, applied inside
torch.compile without any forward AD: the forward raises InternalTorchDynamoError wrapping
"RuntimeError: saved_tensors can only be accessed once when clear_saved_tensors_on_access=True".
Eager is fine, and so is the same Function without a jvp under torch.compile (Dynamo traces it into
autograd_function_apply); with a jvp Dynamo does not trace it ("Unsupported custom jvp"), and the way
it runs the Function then reads ctx.saved_tensors more than once. The same without a jvp where the
Function gets one tensor twice (`Add.apply(x, x)`) and calls ctx.set_materialize_grads(False), even
saving nothing (found by `python -m harness nightly`; either alone runs). Seen on 2.13.0 (CPU),
with backend aot_eager (run here) and with backends eager and inductor alike.

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


def f(x):
    return Sin.apply(x)


def twice(x):
    return Add.apply(x, x)


def reproduced(function, x: torch.Tensor) -> str | None:
    """The failure under torch.compile, or None where the compiled gradient is eager's."""
    function(x).sum().backward()
    expected, x.grad = x.grad, None
    try:
        torch.compile(function, backend="aot_eager")(x).sum().backward()
    except Exception as e:  # noqa: BLE001 -- the failure to report
        if "saved_tensors can only be accessed once" in str(e):
            return f"{type(e).__name__} under torch.compile: {str(e).splitlines()[0][:200]}"
        raise
    assert torch.allclose(x.grad, expected), (x.grad, expected)
    return None


def main() -> int:
    seen = [f"{name}: {failure}" for name, function in (("with a jvp", f), ("one tensor twice", twice))
            if (failure := reproduced(function, torch.randn(3, requires_grad=True))) is not None]
    if seen:
        print("REPRODUCED: " + "; ".join(seen))
        return 1
    print("fixed: torch.compile runs both Functions and their gradients are eager's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
