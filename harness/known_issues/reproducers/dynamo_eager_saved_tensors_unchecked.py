"""Known torch issue dynamo-eager-saved-tensors-unchecked (found by the harness; torch only).

A custom Function saves its input for backward, and the caller modifies that input in place
between forward and backward. Eager raises torch's version-counter error when the backward
unpacks it ("one of the variables needed for gradient computation has been modified by an
inplace operation"), as documented for save_for_backward. Under torch.compile with backend
"eager", Dynamo traces the Function into the autograd_function_apply op, whose backward reads
the saved tensor as a plain value of the traced graph, with no version check: the backward
runs and computes the gradient from the modified values (here tanh(4) where the forward used
tanh(2)). The AOT backends raise as eager does where their backward keeps the tensor.

Exit status 1 and "REPRODUCED" when eager raises and backend "eager" returns a gradient; 0 when
both raise.
"""
import torch


class TanhTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, w):
        ctx.save_for_backward(a, w)
        return torch.tanh(a) * w

    @staticmethod
    def backward(ctx, g):
        a, w = ctx.saved_tensors
        return g * (1 - torch.tanh(a) ** 2) * w, g * torch.tanh(a)


def gradient_of_w(apply):
    a, w = torch.full((2,), 2.0), torch.ones(2, requires_grad=True)
    out = apply(a, w)
    a.mul_(2.0)  # the caller modifies the saved input before backward
    try:
        out.sum().backward()
    except RuntimeError as e:
        return f"RuntimeError: {str(e)[:70]}..."
    return w.grad.tolist()


if __name__ == "__main__":
    eager = gradient_of_w(TanhTimes.apply)
    compiled = gradient_of_w(torch.compile(TanhTimes.apply, backend="eager", fullgraph=True))
    print(f"eager: {eager}\ncompiled (backend eager): {compiled}")
    if isinstance(eager, str) and isinstance(compiled, list):
        print(f"REPRODUCED: no version-counter error; gradient of w {compiled}, tanh(2) = {torch.tanh(torch.tensor(2.0)):.4f}")
        raise SystemExit(1)
    print("not reproduced")
