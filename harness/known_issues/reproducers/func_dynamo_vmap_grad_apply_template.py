"""torch.compile of torch.func.vmap(torch.func.grad(f)) fails with InternalTorchDynamoError "You tried
to vmap over ApplyTemplate, but it does not have vmap support" where f applies a custom Function with
generate_vmap_rule=True to a tensor computed inside the transform (here `x * 1.0`); eager runs it.

Dynamo traces a Function whose input requires grad (a tensor computed from the grad-transformed
input does; the input itself reports requires_grad=False to Dynamo and is inlined) into the
autograd_function_apply higher-order op (torch/_dynamo/variables/misc.py, call_apply), whose
implementation applies `ApplyTemplate` (torch/_functorch/autograd_function.py), an
autograd.Function without the user's generate_vmap_rule; under the outer vmap, functorch's
custom_function_call_vmap refuses it. grad, vmap and grad(vmap) compile. pytorch/pytorch#129845.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


class Double(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2


def per_sample_grads(x):
    return torch.func.vmap(torch.func.grad(lambda y: Double.apply(y * 1.0).sum()))(x)


def main() -> int:
    x = torch.ones(2, 3)
    eager = per_sample_grads(x)
    try:
        compiled = torch.compile(per_sample_grads, backend="aot_eager", fullgraph=True)(x)
    except RuntimeError as e:
        if "vmap over ApplyTemplate" not in str(e):
            raise
        print(f"REPRODUCED: {type(e).__name__}: {str(e).splitlines()[0][:110]} (eager: {eager[0].tolist()})")
        return 1
    assert torch.equal(compiled, eager), (compiled, eager)
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
