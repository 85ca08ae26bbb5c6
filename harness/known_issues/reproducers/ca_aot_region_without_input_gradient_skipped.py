"""Known torch issue ca-aot-region-without-input-gradient-skipped (found by the harness; torch only).

Compiled autograd over a torch.compile'd region (torch._dynamo.config.compiled_autograd's
training-step use): where the region's backward sends no gradient to any of its inputs (here a
custom Function whose backward returns None, a documented "no gradient"), the region's backward
node (AOT's CompiledFunctionBackward) is skipped, and what watches it does not run:
  retain_grad       the region's output keeps .grad None (eager, without torch.compile or without
                    compiled autograd: the loss's gradient, ones)
  post_accumulate   a post-accumulate-grad hook on the leaf behind it is never called (eager calls
                    it, with x.grad None)
A region that sends any gradient to any input (zeros included) is not skipped.

Exit status 1 and "REPRODUCED" when both forms are present; 0 when both are fixed; 2 when only
one is (the entry must then be narrowed).
"""
import torch
from torch._dynamo import compiled_autograd


class NoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for `a` (documented as allowed)


def run(form, compile_forward, ca):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad))
    forward = lambda x: NoGradient.apply(x.clone())  # noqa: E731
    out = (torch.compile(forward, backend="aot_eager") if compile_forward else forward)(x)
    out.retain_grad()
    with compiled_autograd._enable(lambda gm: gm.forward) if ca else torch.enable_grad():
        out.sum().backward()
    return out.grad if form == "retain_grad" else f"hook calls: {len(seen)}"


def reproduces(form):
    expected = run(form, compile_forward=True, ca=False)
    assert str(expected) == str(run(form, compile_forward=False, ca=True))  # each alone is right
    observed = run(form, compile_forward=True, ca=True)
    same = str(observed) == str(expected)
    print(f"{form}: {'not reproduced (fixed?)' if same else 'REPRODUCED'}: expected {expected}, observed {observed}")
    return not same


if __name__ == "__main__":
    forms = [reproduces(form) for form in ("retain_grad", "post_accumulate")]
    if all(forms):
        raise SystemExit(1)
    if any(forms):
        print("only one form reproduces: narrow the entry's trigger to it")
        raise SystemExit(2)
    raise SystemExit(0)
