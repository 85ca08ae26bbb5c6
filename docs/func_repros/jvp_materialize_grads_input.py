# torch.func.jvp: INTERNAL ASSERT when a Function with set_materialize_grads(False) returns
# an input that has no tangent (torch 2.13.0+cpu)
import torch
import torch.autograd.forward_ad as fwAD

class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a  # an input returned as-is

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, g):
        return g, None

    @staticmethod
    def jvp(ctx, ta, tb):
        return None if ta is None else ta.view_as(ta)

a, b = torch.randn(3), torch.randn(3)
with fwAD.dual_level():  # eager forward AD: fine
    print("eager forward AD:", fwAD.unpack_dual(ReturnFirst.apply(a, fwAD.make_dual(b, torch.ones(3)))).tangent)
print(torch.func.jvp(lambda b: ReturnFirst.apply(a, b), (b,), (torch.ones(3),)))  # INTERNAL ASSERT
