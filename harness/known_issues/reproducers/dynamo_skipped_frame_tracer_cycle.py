"""Known torch issue dynamo-trace-state-cycle, its reproduced case: a skipped frame's abandoned
trace (found by the harness; torch only).

torch.compile without fullgraph of a function that graph-breaks inside a
`for ... in enumerate(...)` loop (here: a custom autograd.Function with a `jvp`, "Unsupported
custom jvp"; torch._dynamo.graph_break() or print() do the same): Dynamo cannot resume
inside the loop ("Failed to handle graph break gracefully. Skipping the function and
falling back to eager"), skips the frame and runs it eagerly, with correct values. But the
frame's arguments are no longer freed when the user drops them: they stay alive until
gc.collect() runs, held by a reference cycle of the abandoned trace.

What holds them: `enumerate` is traced through a polyfill generator, so the frame's
InstructionTranslator and the InliningGeneratorInstructionTranslator of `enumerate` refer
to each other (`parent`, and the LocalGeneratorObjectVariable in the frame's symbolic
locals). The translator keeps its OutputGraph, whose `local_scope` is the frame's f_locals,
and LazyVariableTrackers whose caches keep the real tensors. Dynamo empties `local_scope`
after a compile (torch/_dynamo/convert_frame.py, `_compile`: `output.local_scope = {}`)
and OutputGraph.cleanup() is there to break the tracer's cycles "causing some of the
tensor objects to be held alive for longer than necessary" (torch/_dynamo/output_graph.py),
but a trace that ended in an error carries `output_graph=None` (DynamoTracerOutput with
error=True), so neither reaches this one. Because Dynamo runs gc.collect(1) at the end of
every compile (config.run_gc_after_compile) while the trace is still referenced, the
cycle lands in the oldest generation: only a full collection frees it.

Not affected: the same loop over `range(len(xs))` (the graph break is resumed, no frame is
skipped), fullgraph=True (the error reaches the user instead), inputs that do not require
grad (the Function is then traced without a graph break).

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (e.g. `python this.py aot_eager eager`).
"""
import gc
import sys

import torch


class DoubleWithJvp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0

    @staticmethod
    def jvp(ctx, t):
        return t * 2.0


def loop_with_enumerate(xs):
    out = []
    for i, x in enumerate(xs):
        out.append(DoubleWithJvp.apply(x))
    return out


def abandoned_scopes():
    """OutputGraphs of finished traces that still hold a frame's locals."""
    return [obj for obj in gc.get_objects()
            if type(obj).__name__ == "OutputGraph" and getattr(obj, "local_scope", None)]


def reproduces(backend):
    torch._dynamo.reset()
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    try:
        xs = [torch.randn(3, dtype=torch.float64, requires_grad=True)]
        ref = torch._C._WeakTensorRef(xs[0])
        outs = torch.compile(loop_with_enumerate, backend=backend)(xs)
        correct = torch.equal(outs[0], xs[0].detach() * 2.0)
        del outs, xs
        alive_before_gc = not ref.expired()
        holders = len(abandoned_scopes())
        gc.collect()
        alive_after_gc = not ref.expired()
    finally:
        gc.enable()
    if correct and alive_before_gc and not alive_after_gc:
        print(f"{backend}: REPRODUCED: the input stayed alive after every reference was dropped, "
              f"until gc.collect() freed it; {holders} OutputGraph(s) of an abandoned trace still "
              f"held the frame's locals (values correct: {correct})")
        return True
    print(f"{backend}: not reproduced: values correct {correct}, alive before gc {alive_before_gc}, "
          f"after gc {alive_after_gc}")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
