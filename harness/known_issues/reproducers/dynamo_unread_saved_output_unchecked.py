"""Known torch issue dynamo-unread-saved-output-unchecked (found by the harness; torch only).

A custom Function saves its output for backward, and its backward unpacks it
(`ctx.saved_tensors`) but computes the gradient without reading its values. The caller then
modifies that output in place before backward. Eager raises torch's version-counter error
when the backward unpacks the saved tensor ("one of the variables needed for gradient
computation has been modified by an inplace operation ... is at version 1; expected version
0"), as documented for save_for_backward. Under torch.compile the error is gone: AOT
Autograd's traced backward does not need the tensor's data, so it is not kept as a saved
tensor and never version-checked. The gradient is right; what differs is that a program
eager rejects runs. (When the backward reads the saved output's values, the compiled run
raises the error as eager does.)

Exit status 1 and "REPRODUCED" when eager raises and the compiled run (backend aot_eager)
does not; 0 when both raise.
"""
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return 2 * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors  # unpacked (eager checks its version here), values not read
        return 2 * g


def run(fn):
    x = torch.ones(3, requires_grad=True)
    y = fn(x)
    y.mul_(3)  # the saved output, modified in place after the forward
    try:
        y.sum().backward()
    except RuntimeError as e:
        return "raised " + str(e).splitlines()[0][:100]
    return f"no error, x.grad = {x.grad.tolist()}"


if __name__ == "__main__":
    eager = run(Double.apply)
    compiled = run(torch.compile(lambda x: Double.apply(x), backend="aot_eager", fullgraph=True))
    print(f"eager:    {eager}")
    print(f"compiled: {compiled}")
    if "modified by an inplace operation" in eager and compiled.startswith("no error"):
        print("REPRODUCED: the compiled run skips the version-counter check of the saved output")
        raise SystemExit(1)
    print("not reproduced")
