"""torch.func.vmap with out_dims other than 0 gets an output that is not batched wrong
(torch 2.13.0): out_dims=-1 gives a garbage shape (undefined behaviour: the batch size is
inserted before the start of the size vector), a positive out_dims raises at expand. Plain
torch, no custom Function. Upstream: pytorch/pytorch#178425, fixed by pytorch/pytorch#178495.
Exits 1 where the bug is present, 0 where it is fixed (docs/func.md, "Why out_dims stays 0").
"""
import sys

import torch

x = torch.randn(2, 3)
present = False

# an output that reads no batched value: vmap expands it to the batch
out = torch.func.vmap(lambda t: torch.zeros(()), out_dims=-1)(torch.randn(3))
print("out_dims=-1, 0-dim unbatched output:", tuple(out.shape), "(expected (3,))")
present |= tuple(out.shape) != (3,)

try:
    out = torch.func.vmap(lambda t: torch.zeros(2), in_dims=-1, out_dims=1)(x)
    print("out_dims=1, unbatched output of shape (2,):", tuple(out.shape), "(expected (2, 3))")
    present |= tuple(out.shape) != (2, 3)
except RuntimeError as e:
    print("out_dims=1, unbatched output of shape (2,): RuntimeError:", e)
    present = True

# a batched output is right with either out_dims
assert tuple(torch.func.vmap(torch.sin, in_dims=-1, out_dims=1)(x).shape) == (2, 3)
print("REPRODUCED" if present else "not reproduced (fixed)")
sys.exit(1 if present else 0)
