"""torch.compile (AOT backends) drops an in-place op on a 0-dim float64 input of the compiled function, silently.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

def scale_in_place(a):
    a.mul_(-1.5)
    return a

def run(f):
    a = torch.tensor(0.7, dtype=torch.float64)
    out = f(a)
    return f"a = {a.item()}, returned {out.item()}"

expected = run(scale_in_place)
observed = run(torch.compile(scale_in_place, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
