"""torch.func.vmap over a custom Function (generate_vmap_rule=True) that marks an input dirty raises, though it returns it."""
import torch
from torch.func import vmap

class ScaleInPlace(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.mul_(2)
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
    @staticmethod
    def backward(ctx, g):
        return g * 2

def run(f):
    try:
        return f"returned {f(torch.ones(2, 3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda xs: torch.stack([ScaleInPlace.apply(x.clone()) for x in xs]))  # per sample, in eager
observed = run(vmap(lambda x: ScaleInPlace.apply(x.clone())))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "marked as dirty" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
