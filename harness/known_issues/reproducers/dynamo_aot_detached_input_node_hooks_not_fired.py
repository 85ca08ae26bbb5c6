"""Known torch issue dynamo-aot-detached-input-node-hooks-not-fired (found by the harness; torch only).

A view of a leaf (`b = x[1]`) is passed into a torch.compile'd region, and a custom
Function there reads it but sends it no gradient (its backward returns None for it). A
pre hook (and likewise a post hook) is registered on the view's node (`b.grad_fn`), and a
tensor hook on the view (`b.register_hook`, which autograd runs as a pre hook of that node).
Eager runs that node during backward, with a None gradient, and fires the hooks. With an AOT
Autograd backend the input is detached first (torch/_functorch/_aot_autograd/
graph_compile.py, `indices_of_inps_to_detach`: a non-leaf input whose gradient is None), so
the compiled backward has no edge to the view's node and the hooks never fire. The leaf's
gradient is right (zeros for that row either way). This is the hook side of
dynamo-aot-detached-input-drops-requires-grad (its reproducer
dynamo_aot_detached_input_drops_requires_grad.py, beside this one), where every region input is detached;
here another input keeps the outputs requiring grad. A backward that returns zeros instead
of None avoids it; backend="eager" is not affected.

Second form (`output_hook_fired`): under a partial backward, `backward(inputs=[x])`, where x is
reached only through such a view, the region's backward node has no edge toward x, so the engine
skips it whole, and a tensor hook on the Function's other output never fires (eager fires it).

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (`python this.py aot_eager eager`).
"""
import sys

import torch


class FirstOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, None  # no gradient for b


def region(a, b):
    return FirstOnly.apply(a, b)


def hooks_fired(fn):
    x = torch.ones(2, 3, requires_grad=True)
    a, b = x[0], x[1]
    fired = []
    b.grad_fn.register_prehook(lambda grad_outputs: fired.append("pre"))
    b.grad_fn.register_hook(lambda grad_inputs, grad_outputs: fired.append("post"))
    b.register_hook(lambda grad: fired.append("tensor"))
    fn(a, b).sum().backward()
    return fired


def output_hook_fired(fn):
    x = torch.ones(2, 3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    out = fn(y, x[1])  # x is reached only through the view x[1], which gets no gradient
    fired = []
    out.register_hook(lambda grad: fired.append("tensor"))
    out.sum().backward(inputs=[x])
    return fired


def reproduces(backend):
    found = False
    for name, observe in (("hooks fired on the view and its node", hooks_fired),
                          ("hook fired on the output under backward(inputs=[x])", output_hook_fired)):
        torch._dynamo.reset()
        eager = observe(region)
        compiled = observe(torch.compile(region, backend=backend, fullgraph=True))
        print(f"{backend}: {name}: eager {eager}, compiled {compiled}")
        found |= compiled != eager
    print(f"{backend}: REPRODUCED: hooks never fire behind a detached input view" if found
          else f"{backend}: not reproduced: the hooks fire as in eager")
    return found


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
