"""Forward AD: a custom Function returning a view of a tangentless input drops the tangents of all its later outputs."""
import torch
import torch.autograd.forward_ad as fwAD

class ViewThenSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_forward(x)
        return a.view_as(a), x * x  # a view of `a` first, then an output that depends on x
    @staticmethod
    def jvp(ctx, ta, tx):
        (x,) = ctx.saved_tensors
        return ta.view_as(ta), 2 * x * tx
    @staticmethod
    def backward(ctx, ga, gx):
        raise NotImplementedError  # forward AD only

with fwAD.dual_level():
    x = fwAD.make_dual(torch.full((3,), 2.0), torch.ones(3))
    _, y = ViewThenSquare.apply(torch.ones(3), x)  # the first input has no tangent
    tangent = fwAD.unpack_dual(y).tangent
expected = "tangent of y = [4.0, 4.0, 4.0]"  # what jvp returned: 2 * x * tx
observed = f"tangent of y = {None if tangent is None else tangent.tolist()}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
