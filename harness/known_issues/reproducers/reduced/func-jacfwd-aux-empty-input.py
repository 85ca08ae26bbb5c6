"""torch.func.jacfwd(has_aux=True) raises IndexError on an input with zero elements (jacrev returns the empty Jacobian)."""
import torch
from torch.func import jacfwd, jacrev

def run(transform):
    try:
        jacobian, aux = transform(lambda x: (x.sin(), x), has_aux=True)(torch.randn(0))
        return f"jacobian of shape {tuple(jacobian.shape)}, aux of shape {tuple(aux.shape)}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected, observed = run(jacrev), run(jacfwd)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "out of bounds" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
