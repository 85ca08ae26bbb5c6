"""torch.func.grad (vjp, jacrev) of a torch.library.custom_op with register_autograd raises "In order
to use an autograd.Function with functorch transforms ... it must override the setup_context
staticmethod", where eager autograd runs the registered backward: the op's formula runs in a
Function that make_autograd_impl (torch/_library/autograd.py) generates with forward(ctx, *args)
and no setup_context, which Function.apply refuses under a transform (the user's setup_context is
called from that forward).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


@torch.library.custom_op("repro::times_three", mutates_args=())
def times_three(x: torch.Tensor) -> torch.Tensor:
    return x * 3


times_three.register_fake(lambda x: torch.empty_like(x))
times_three.register_autograd(lambda ctx, g: g * 3, setup_context=lambda ctx, inputs, output: None)

x = torch.tensor([1.0, 2.0])
eager = torch.autograd.functional.jacobian(times_three, x)  # eager autograd: 3 * identity
try:
    jacobian = torch.func.jacrev(times_three)(x)
except RuntimeError as e:
    if "must override the setup_context" not in str(e):
        raise
    print(f"REPRODUCED: torch.func.jacrev raised {str(e)[:110]}...; eager autograd gives {eager.tolist()}")
    raise SystemExit(1)
print(f"not reproduced: jacrev {jacobian.tolist()}, eager {eager.tolist()} (fixed in torch {torch.__version__}?)")
raise SystemExit(0 if torch.equal(jacobian, eager) else 1)
