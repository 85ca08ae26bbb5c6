"""torch.func.vmap fails on a custom Function (generate_vmap_rule=True) whose forward returns one non-tensor value."""
import torch
from torch.func import vmap

class Two(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return 2  # one non-tensor output, not a tuple: (x * 2, 2) works under vmap
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return None

def run(f):
    try:
        return f"returned {f(torch.ones(2, 3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda xs: torch.stack([x * Two.apply(x) for x in xs]))  # per sample, in eager
observed = run(vmap(lambda x: x * Two.apply(x)))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "must be an iterable" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
