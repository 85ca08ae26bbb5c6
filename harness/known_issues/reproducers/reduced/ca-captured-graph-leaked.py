"""Compiled autograd never frees a captured backward graph, not even after torch._dynamo.reset() and gc.collect().
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import gc
import sys
import weakref
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
graphs = []  # a weak reference to each captured backward graph

def compiler(gm):
    graphs.append(weakref.ref(gm))
    return gm if mode == "capture" else torch.compile(gm, backend=mode, fullgraph=True)

for scale in range(3):
    torch._dynamo.reset()  # forget every compiled artifact: compiled autograd's cache too
    x = torch.randn(4, requires_grad=True)
    with compiled_autograd._enable(compiler):
        (x * float(scale)).sin().sum().backward()
torch._dynamo.reset()
gc.collect()
alive = sum(ref() is not None for ref in graphs)
expected = f"captured backward graphs alive after torch._dynamo.reset() and gc.collect(): 0 of {len(graphs)}"
observed = f"captured backward graphs alive after torch._dynamo.reset() and gc.collect(): {alive} of {len(graphs)}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
