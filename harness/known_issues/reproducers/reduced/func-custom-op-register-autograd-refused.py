"""torch.func.jacrev/grad/vjp of a custom_op with register_autograd raises "must override the setup_context staticmethod"; eager runs its backward."""
import torch

@torch.library.custom_op("repro::times_three", mutates_args=())
def times_three(x: torch.Tensor) -> torch.Tensor:
    return x * 3

times_three.register_fake(lambda x: torch.empty_like(x))
times_three.register_autograd(lambda ctx, g: g * 3, setup_context=lambda ctx, inputs, output: None)

def run(f):
    try:
        return f"jacobian {f(torch.tensor([1.0, 2.0])).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]

expected = run(lambda x: torch.autograd.functional.jacobian(times_three, x))  # eager autograd
observed = run(torch.func.jacrev(times_three))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
