"""Compiled autograd + torch.compile(backend='eager') keeps the first backward's leaf and saved tensors alive until torch._dynamo.reset().
Usage: python repro.py [eager|aot_eager|inductor|capture]"""
import gc
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["eager"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)
def alive_after_drop(compiled):
    leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
    hidden = leaf * 2.0
    loss = hidden.sin().sum()  # SinBackward saves `hidden`
    refs = {"leaf": torch._C._WeakTensorRef(leaf), "saved activation": torch._C._WeakTensorRef(hidden)}
    with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
        loss.backward()
    del leaf, hidden, loss
    gc.collect()
    return f"alive after every reference was dropped and gc.collect(): {[k for k, r in refs.items() if not r.expired()]}"

expected, observed = alive_after_drop(compiled=False), alive_after_drop(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
