"""Known torch issue ca-eager-backend-pins-inputs (found by the harness; torch only).

Compiled autograd whose captured backward graph is handed to torch.compile(backend="eager"):
the tensors of the first backward (the leaves whose .grad it sets, the activations it
unpacks from saved variables) stay alive after the user drops every reference and runs
gc.collect(), until torch._dynamo.reset().

What holds them: compiled autograd passes its inputs as one list, which Dynamo keeps as a
single graph argument so that the tensors can be freed as soon as they are used (the
"steal_arg" placeholder, torch/_dynamo/variables/builder.py). That placeholder's
meta["example_value"] is the real list of the first call, not a fake one, and the cached
Dynamo graph (reachable from the code cache until reset) keeps it. Dynamo elsewhere avoids
holding real inputs (GraphArg keeps a TensorWeakRef; OutputGraph.cleanup() drops
meta["grapharg"] to break the tracer's reference cycles), so this is an omission, not a
documented cache. With the AOT backends the same list is emptied at run time (AOT Autograd
steals the arguments), so nothing is pinned there; no custom Function is needed.

Exit status 1 and "REPRODUCED" when the bug is present (backend eager); 0 when fixed.
Other backends are reported for information (e.g. `python this.py eager aot_eager`).
"""
import gc
import sys

import torch
from torch._dynamo import compiled_autograd


def alive(refs):
    return sorted(name for name, ref in refs.items() if not ref.expired())


def backward_and_drop(backend):
    """One backward under compiled autograd, every user reference dropped: the weak refs."""
    torch._dynamo.reset()
    leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
    hidden = leaf * 2.0
    loss = hidden.sin().sum()  # SinBackward saves `hidden`: an activation the backward unpacks
    refs = {"leaf": torch._C._WeakTensorRef(leaf), "saved activation": torch._C._WeakTensorRef(hidden)}
    compiler = lambda gm: torch.compile(gm, backend=backend, fullgraph=True)  # noqa: E731
    with compiled_autograd._enable(compiler):
        loss.backward()
    del leaf, hidden, loss
    gc.collect()
    return refs


def holder_of_inputs():
    """The Dynamo graph placeholder whose example value is a real list of tensors, if any."""
    for obj in gc.get_objects():
        if type(obj) is torch.fx.Node and obj.op == "placeholder" and obj.meta.get("steal_arg"):
            value = obj.meta.get("example_value")
            if isinstance(value, list) and any(isinstance(t, torch.Tensor) for t in value):
                return f"placeholder {obj.name!r}: meta['example_value'] is a real list of {len(value)} tensors"
    return "no placeholder holds a real list"


def reproduces(backend):
    refs = backward_and_drop(backend)
    pinned = alive(refs)
    holder = holder_of_inputs() if pinned else ""
    torch._dynamo.reset()
    gc.collect()
    after_reset = alive(refs)
    if pinned and not after_reset:
        print(f"{backend}: REPRODUCED: alive after every reference was dropped and gc.collect(): "
              f"{pinned}; held by {holder}; freed by torch._dynamo.reset()")
        return True
    print(f"{backend}: not reproduced: alive after drop and gc: {pinned}; after reset: {after_reset}")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
