"""torch.func.jvp of a 0-dim float32 tensor times a Python float returns a float64 tangent (eager forward AD: float32)."""
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import jvp

x, t = torch.ones(()), torch.ones(())
with fwAD.dual_level():
    expected = f"tangent dtype {fwAD.unpack_dual(fwAD.make_dual(x, t) * 0.5).tangent.dtype}"
observed = f"tangent dtype {jvp(lambda b: b * 0.5, (x,), (t,))[1].dtype}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
