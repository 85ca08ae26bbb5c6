"""dynamo-clear-saved-tensors-with-jvp: found by the clear_saved_tensors_on_access axis (docs/coverage.md,
"torch's conditions for custom Functions").

A Function with `clear_saved_tensors_on_access = True` (new in 2.13) and a user `jvp`, applied inside
torch.compile without any forward AD: the forward raises InternalTorchDynamoError wrapping
"RuntimeError: saved_tensors can only be accessed once when clear_saved_tensors_on_access=True".
Eager is fine, and so is the same Function without a jvp under torch.compile (Dynamo traces it into
autograd_function_apply); with a jvp Dynamo does not trace it ("Unsupported custom jvp"), and the way
it runs the Function then reads ctx.saved_tensors more than once. Seen on 2.13.0 (CPU).

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


def f(x):
    return Sin.apply(x)


def main() -> int:
    x = torch.randn(3, requires_grad=True)
    f(x).sum().backward()
    expected, x.grad = x.grad, None
    try:
        torch.compile(f, backend="aot_eager")(x).sum().backward()
    except Exception as e:  # noqa: BLE001 -- the failure to report
        if "saved_tensors can only be accessed once" in str(e):
            print(f"REPRODUCED: {type(e).__name__} under torch.compile: {str(e).splitlines()[0][:200]}")
            return 1
        raise
    assert torch.allclose(x.grad, expected), (x.grad, expected)
    print("fixed: torch.compile runs the Function and its gradient is eager's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
