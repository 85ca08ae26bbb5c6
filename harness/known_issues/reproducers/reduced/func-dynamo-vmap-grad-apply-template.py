"""torch.compile of torch.func.vmap(grad(f)) over a custom Function with generate_vmap_rule=True: 'no vmap support' error.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch.func import grad, vmap

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Double(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return g * 2

def per_sample_grads(x):
    return vmap(grad(lambda y: Double.apply(y * 1.0).sum()))(x)  # applied to a tensor computed inside grad

def run(f):
    try:
        return f"gradients {f(torch.ones(2, 3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]

expected, observed = run(per_sample_grads), run(torch.compile(per_sample_grads, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "vmap support" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
