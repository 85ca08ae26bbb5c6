"""Known torch issue dynamo-aot-dirty-graph-input-skips-backward (found by the harness; torch only).

A custom Function modifies its input in place and marks it dirty (in-place activations such
as inplace_abn's leaky ReLU), and that input comes into the compiled region from outside (an
input of the compiled function that requires grad, not a tensor made inside it). With an AOT
Autograd backend the gradient is silently wrong: Dynamo traces the forward into the
autograd_function_apply op, whose body runs under no_grad, so AOT Autograd sees only
mutations of that input made under no_grad (collect_metadata_analysis.py,
mutations_under_no_grad_or_inference_mode) and keeps the mutation inside the graph, hidden
from autograd (functional_utils.py, _check_if_mutation_can_be_in_graph). The dirty output is
returned as the input itself with its old history, so the Function's backward gets zeros for
it: the input's gradient passes through unchanged (1 where eager gives 3) and the other
input loses that output's share (1 where eager gives 2). Backend "eager" and eager mode
agree; making the input inside the compiled region (`a.clone()` there) avoids it.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
"""
import torch


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, w):
        a.mul_(3.0)
        ctx.mark_dirty(a)
        return a, w * 1.0

    @staticmethod
    def backward(ctx, ga, gw):
        return ga * 3.0, ga + gw


def gradients(backend):
    x, w = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    apply = ScaleInPlace.apply
    if backend is not None:
        torch._dynamo.reset()
        apply = torch.compile(apply, backend=backend, fullgraph=True)
    a, b = apply(x.clone(), w)  # the clone is made outside the compiled region
    (a.sum() + b.sum()).backward()
    return x.grad.tolist(), w.grad.tolist()


if __name__ == "__main__":
    eager, compiled = gradients(None), gradients("aot_eager")
    if compiled != eager:
        print(f"aot_eager: REPRODUCED: gradients of (x, w) {compiled}, eager {eager}")
        raise SystemExit(1)
    print(f"aot_eager: not reproduced (fixed in torch {torch.__version__}?): gradients {compiled}")
