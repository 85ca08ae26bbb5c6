import torch
import torch.autograd.forward_ad as fwAD

class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)  # undefined tangents arrive as None
        return a  # an input returned as-is

    @staticmethod
    def jvp(ctx, ta, tb):
        return None if ta is None else ta.view_as(ta)  # `a` has no tangent

    @staticmethod
    def backward(ctx, g):
        return g, None

with fwAD.dual_level():
    a = torch.zeros(3)  # no tangent
    b = fwAD.make_dual(torch.zeros(3), torch.ones(3))
    ReturnFirst.apply(a, b)  # RuntimeError: ... INTERNAL ASSERT FAILED at autograd_meta.cpp
