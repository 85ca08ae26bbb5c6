"""A compiled autograd capture that raises leaves its compile context entered; collecting it clears a later compile's context."""
import gc
import torch
import torch._guards as guards
from torch._dynamo import compiled_autograd

class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3

x = torch.ones(3, requires_grad=True)
a, b = TwoOutputs.apply(x)
b.register_hook(lambda g: g)  # b gets no gradient: end_capture raises (another bug) before leaving its context
kept = []
try:
    with compiled_autograd._enable(lambda gm: gm.forward):
        a.sum().backward()
except AttributeError as e:
    kept.append(e)  # a test runner or logger keeps the exception, and so its frames
seen = []

def backend(gm, inputs):
    kept.clear()
    gc.collect()  # as Python's collector may at any allocation
    seen.append(guards.CompileContext.try_get() is not None)
    return gm.forward

torch.compile(lambda t: t + 1, backend=backend)(torch.ones(2))
expected = "a compile's context is still set after a collection inside it: True"
observed = f"a compile's context is still set after a collection inside it: {seen[0]}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
