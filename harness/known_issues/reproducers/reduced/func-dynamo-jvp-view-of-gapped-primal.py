"""torch.compile of torch.func.jvp of a view of a strided primal with a contiguous tangent hits an INTERNAL ASSERT.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch.func import jvp

backend = (sys.argv[1:] or ["aot_eager"])[0]

def f(x, t):
    return jvp(lambda x: x[2] * 1, (x,), (t,))[1]  # the tangent of a view of the primal

def run(f):
    x = torch.arange(18.0).reshape(3, 6)[:, ::2]  # every other column: a primal with gaps
    try:
        return f"tangent {f(x, torch.ones(3, 3)).tolist()}"  # its tangent is contiguous
    except Exception as e:  # what it raises is the observation
        lines = [line for line in str(e).splitlines() if "INTERNAL ASSERT" in line] or str(e).splitlines()
        return f"{type(e).__name__}: {lines[0][:200]}"

expected, observed = run(f), run(torch.compile(f, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "INTERNAL ASSERT" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
