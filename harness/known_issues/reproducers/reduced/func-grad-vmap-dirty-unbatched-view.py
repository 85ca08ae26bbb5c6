"""torch.func.grad(vmap(f)) rejects a custom Function (generate_vmap_rule=True) that marks dirty an unbatched view input."""
import torch
from torch.func import grad, vmap

class ScaleFirstInPlace(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, x):
        return a.mul_(2.0)
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
    @staticmethod
    def backward(ctx, g):
        return 2.0 * g, None

def f(x, c):
    a = c.clone().view_as(c)  # a view, with no batch dim under vmap (c is not batched)
    return ScaleFirstInPlace.apply(a, x).sum() + (x * x).sum()

def run(f):
    try:
        return f"gradient {f(torch.ones(3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

xs = torch.randn(2, 3)
expected = run(grad(lambda c: sum(f(x, c) for x in xs)))  # per sample, without vmap
observed = run(grad(lambda c: vmap(f, in_dims=(0, None))(xs, c).sum()))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "more than one Tensor" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
