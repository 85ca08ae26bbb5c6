"""Candidate torch issue (found by the harness with a plain-style Function; torch only).

torch.compile(fullgraph=False) of a call to an old-style custom autograd.Function (forward
takes ctx) whose forward marks an output with ctx.mark_non_differentiable: when Dynamo
cannot trace the Function as a whole, it graph-breaks at `.apply` and runs it eagerly.
Here the graph break is "Unsupported custom jvp" (the class defines a jvp); the same
happens for "autograd.Function.apply: duplicate tensor input" (F.apply(x, x)) and for a
graph break in the backward (e.g. a print). The C++ apply then calls `forward`, and
Dynamo compiles that frame on its own, with the real ctx as an input. In that frame
ctx.mark_non_differentiable is only recorded on Dynamo's stand-in for ctx
(AutogradFunctionContextVariable in torch/_dynamo/variables/misc.py) and never replayed
on the real ctx, so ctx.non_differentiable stays None: the output comes back with
requires_grad=True, a grad_fn and is_leaf=False, where eager gives False, None, True.

Damage: the output joins the autograd graph. A loss that uses it backpropagates into the
Function (eager: nothing to differentiate when it is the only output), and the Function's
backward receives a real gradient for that output where eager passes zeros (or None with
set_materialize_grads(False)). A backward that ignores that gradient still gives eager's
input gradients. Later Functions that take the output see an input that requires grad
(ctx.needs_input_grad, and their own outputs may require grad where eager's do not).

Needs: an input that requires grad; the eager fallback (fullgraph=True stops at the
graph break instead); the marking made in a frame Dynamo compiles: an old-style forward,
or a setup_context that itself runs a tensor op (e.g. computes a tensor to save; a
setup_context without tensor ops is left to run eagerly and is fine). Backends eager,
aot_eager and inductor alike (torch 2.13.0+cpu).
Related, not the same: pytorch/pytorch#118396 (ctx methods ignored when Dynamo traces
the Function as a whole; mark_non_differentiable there has since been supported).

The second form (`loop_form`): Functions applied in a loop, through a helper frame, as the
harness's forward applies them. A graph break in the loop (here a print in one forward) makes
Dynamo skip the loop's frame ("graph breaks in loops are not supported") and compile each call
of the helper on its own; once a Function with no tensor input has been applied there, a later
old-style Function's apply runs eagerly and its forward frame is compiled on its own, with the
same loss of the mark. Without the Function with no tensor input, or with it after the marking
Function, the mark holds (2.13.0, 2.14.1, 2.15.0); where Dynamo decides this is not pinned down.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager; either form); 0 when fixed.
Other backends are reported for information: python <this file> eager aot_eager
"""
import sys

import torch


class SinAndDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        mask = a.sin()
        ctx.mark_non_differentiable(mask)
        return mask, a * 2

    @staticmethod
    def backward(ctx, g_mask, g_double):
        ctx.g_mask = g_mask  # what autograd passed for the non-differentiable output
        return g_double * 2

    @staticmethod
    def jvp(ctx, t):  # only its presence matters: Dynamo graph-breaks on it
        return t * 0, t * 2


def apply(a):
    return SinAndDouble.apply(a)


def outcome(fn):
    a = torch.ones(3, requires_grad=True)
    mask, double = fn(a)
    facts = {"requires_grad": mask.requires_grad, "grad_fn": type(mask.grad_fn).__name__,
             "is_leaf": mask.is_leaf}
    (mask.sum() + double.sum() if mask.requires_grad else double.sum()).backward()
    facts["backward got for mask"] = double.grad_fn.g_mask.tolist()
    return facts


def reproduces(backend):
    expected = outcome(apply)
    assert expected["requires_grad"] is False, expected  # eager honours the marking
    torch._dynamo.reset()
    got = outcome(torch.compile(apply, backend=backend, fullgraph=False))
    if got["requires_grad"]:
        print(f"{backend} fullgraph=False: REPRODUCED: output marked non-differentiable has "
              f"requires_grad=True; compiled {got}; eager {expected}")
        return True
    print(f"{backend} fullgraph=False: not reproduced (fixed in torch {torch.__version__}?): "
          f"{got}")
    return False


class Prints(torch.autograd.Function):  # a print in its forward: a graph break
    @staticmethod
    def forward(ctx, a):
        print(end="")
        return a * 1.0

    @staticmethod
    def backward(ctx, g):
        return g


class NoTensorInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx):
        return "tag"

    @staticmethod
    def backward(ctx, g):
        return ()


class Marks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        out = a * 0.0
        ctx.mark_non_differentiable(out)
        return out

    @staticmethod
    def backward(ctx, g):
        return g * 0.0


def apply_one(cls, args):
    return cls.apply(*args)


def in_a_loop(a):
    values = {"a": a}
    for cls, reads, name in ((Prints, ("a",), "b"), (NoTensorInput, (), "tag"), (Marks, ("b",), "c")):
        values[name] = apply_one(cls, [values[r] for r in reads])
    return values["c"]


def loop_form() -> bool:
    a = torch.ones(3, requires_grad=True)
    assert in_a_loop(a).requires_grad is False  # eager honours the marking
    torch._dynamo.reset()
    if torch.compile(in_a_loop, backend="aot_eager")(a).requires_grad:
        print("aot_eager, Functions applied in a loop with a graph break, after one with no tensor input: "
              "REPRODUCED: the marked output has requires_grad=True")
        return True
    print(f"loop form: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if loop_form() | results[0] else 0)
