"""Known torch issue eager-dirty-view-not-first-input, its skipped-saver form (torch only).

ScaleView modifies in place (mark_dirty) a view that is its second input; torch's CopySlices
over its node replaces the edge of its first input `a` by the view's base's (which does not
require grad). SavesOutput reads ScaleView's output and saves its own, which the user then
modifies in place. torch.autograd.grad(loss, [a]) runs only the nodes on a path to `a`
(engine.cpp, GraphTask::init_to_execute); with the edge replaced there is none, so SavesOutput's
backward never runs, nothing unpacks the saved output, and the version-counter error
save_for_backward documents is not raised. Compiled autograd does the same. Without inputs
(loss.backward()), or with the base itself instead of a view, both raise it.

The compiled audit of 2026-12-01 met it as "compiled:capture vs math: ran without
torch's version-counter error" (spec compiled_version_error_skipped_saver_916cb58f.json here).
Exit status 1 and "REPRODUCED" while eager skips the check only in the misrouted case; 0 otherwise.
Seen on 2.13.0, 2.14.1 and 2.15.0.
"""
import torch
from torch._dynamo import compiled_autograd


class ScaleView(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, v):  # v, a view, is its second input
        ctx.mark_dirty(v)
        return v.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return torch.zeros_like(g), 2 * g


class SavesOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        out = 3 * t
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (_out,) = ctx.saved_tensors  # unpacked: torch checks its version here
        return 3 * g


def run(ctx, view=True, inputs=True):
    torch._dynamo.reset()
    a = torch.ones(3, requires_grad=True)
    base = torch.zeros(3).clone()
    v = base[:] if view else base
    out = SavesOutput.apply(ScaleView.apply(a, v))
    out.mul_(2)  # the saved output, modified in place
    try:
        with ctx():
            if inputs:
                torch.autograd.grad(out.sum(), [a], allow_unused=True)
            else:
                out.sum().backward()
    except RuntimeError as e:
        return "raised" if "modified by an inplace operation" in str(e) else "other: " + str(e)[:80]
    return "no error"


eager = torch.enable_grad
compiled = lambda: compiled_autograd._enable(lambda gm: gm.forward)
if __name__ == "__main__":
    seen = {}
    for label, kw in [("view, autograd.grad", {}), ("view, backward()", {"inputs": False}),
                      ("no view, autograd.grad", {"view": False})]:
        seen[label] = run(eager, **kw)
        print(f"{torch.__version__} {label}: eager {seen[label]}; compiled {run(compiled, **kw)}")
    if seen == {"view, autograd.grad": "no error", "view, backward()": "raised", "no view, autograd.grad": "raised"}:
        print("REPRODUCED: autograd.grad skips the Function that saved the modified output")
        raise SystemExit(1)
    print("not reproduced")
