"""Forward AD hits an INTERNAL ASSERT when a custom Function returns as-is an input without a tangent and its jvp returns None."""
import torch
import torch.autograd.forward_ad as fwAD

class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)  # undefined tangents arrive as None
        return a  # an input returned as-is
    @staticmethod
    def jvp(ctx, ta, tb):
        return None if ta is None else ta.view_as(ta)
    @staticmethod
    def backward(ctx, g):
        return g, None

with fwAD.dual_level():
    b = fwAD.make_dual(torch.zeros(3), torch.ones(3))
    try:
        out = ReturnFirst.apply(torch.zeros(3), b)  # `a` has no tangent
        observed = f"output tangent {fwAD.unpack_dual(out).tangent}"
    except RuntimeError as e:
        observed = "RuntimeError: " + str(e).partition("\n")[0][:200]
expected = "output tangent None"  # as for an output that does not alias an input
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
