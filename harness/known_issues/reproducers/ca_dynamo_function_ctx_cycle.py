"""Known torch issue ca-dynamo-function-ctx-cycle (found by the harness; torch only).

Compiled autograd whose captured backward graph is handed to torch.compile (any backend):
after the backward of a graph with a custom autograd.Function, the leaves behind that
Function keep an extra reference once the outputs are dropped (use count 2, eager: 1), and
once the user drops the leaves too they stay alive until gc.collect() runs: they are held by
a reference cycle that Dynamo's tracing left behind.

What holds them: Dynamo traces the Function's backward with its real ctx (the
<Name>Backward object) wrapped in an AutogradFunctionContextVariable; that variable stays
reachable from a SideEffects object of the finished trace that sits in a reference cycle
(SideEffects -> SideEffectsProxyDict -> DunderDictVariable -> ...). The ctx keeps its
autograd node, whose next_functions keep the AccumulateGrad nodes of the leaves, which keep
the leaves. OutputGraph.cleanup() is there to break the tracer's cycles "causing some of the
tensor objects to be held alive for longer than necessary" (torch/_dynamo/output_graph.py),
but misses this one. Plain torch ops (no custom Function) leave no such cycle; the captured
graph run as is (no torch.compile) neither.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager, which does not
also pin its inputs the way backend eager does, see ca_eager_backend_pins_inputs.py); 0 when
fixed. Other backends are reported for information (e.g. `python this.py aot_eager inductor`).
"""
import gc
import sys

import torch
from torch._dynamo import compiled_autograd


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def ctx_holders():
    """Dynamo variables left holding a real ctx of Double."""
    return [obj for obj in gc.get_objects()
            if type(obj).__name__ == "AutogradFunctionContextVariable"
            and type(getattr(obj, "value", None)).__name__ == "DoubleBackward"]


def reproduces(backend):
    torch._dynamo.reset()
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    try:
        leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
        ref = torch._C._WeakTensorRef(leaf)
        loss = Double.apply(leaf).sum()
        compiler = lambda gm: torch.compile(gm, backend=backend, fullgraph=True)  # noqa: E731
        with compiled_autograd._enable(compiler):
            loss.backward()
        del loss
        use_count = leaf._use_count()  # eager autograd: 1
        del leaf
        alive_before_gc = not ref.expired()
        holders = len(ctx_holders())
        gc.collect()
        alive_after_gc = not ref.expired()
    finally:
        gc.enable()
    if use_count == 2 and alive_before_gc and not alive_after_gc:
        print(f"{backend}: REPRODUCED: leaf use count {use_count} after the outputs were dropped "
              f"(eager: 1); alive after every reference was dropped until gc.collect() freed it; "
              f"{holders} AutogradFunctionContextVariable(s) of the finished trace held the real ctx")
        return True
    print(f"{backend}: not reproduced: use count {use_count}, alive before gc {alive_before_gc}, "
          f"after gc {alive_after_gc}")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
