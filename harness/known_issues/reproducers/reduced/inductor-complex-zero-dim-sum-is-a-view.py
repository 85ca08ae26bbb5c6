"""torch.compile(backend='inductor') returns the sum of two 0-dim complex tensors as a view of a 1-element tensor.
Usage: python repro.py [inductor|aot_eager|eager]"""
import sys
import torch

backend = (sys.argv[1:] or ["inductor"])[0]

def add(x):
    return x + x

def identity(f):
    out = f(torch.randn((), dtype=torch.complex128))
    return f"shape {tuple(out.shape)}, is a view: {out._is_view()}, _base shape: {None if out._base is None else tuple(out._base.shape)}"

expected, observed = identity(add), identity(torch.compile(add, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
