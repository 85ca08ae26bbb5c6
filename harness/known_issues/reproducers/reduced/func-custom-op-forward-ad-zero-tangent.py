"""torch.func.jvp of a torch.library.custom_op with no forward-mode formula returns an all-zero tangent, with no error."""
import torch
import torch.autograd.forward_ad as fwAD

@torch.library.custom_op("repro::times_three", mutates_args=())
def times_three(x: torch.Tensor) -> torch.Tensor:
    return x * 3

times_three.register_fake(lambda x: torch.empty_like(x))
times_three.register_autograd(lambda ctx, g: g * 3, setup_context=lambda ctx, inputs, output: None)  # no jvp

def run(f):
    try:
        return f"tangent {f(torch.tensor([1.0, 2.0]), torch.ones(2)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]

def eager_forward_ad(x, t):  # x requires grad: the op's autograd kernel (and its check) runs only then
    with fwAD.dual_level():
        return fwAD.unpack_dual(times_three(fwAD.make_dual(x.requires_grad_(), t))).tangent

expected = run(eager_forward_ad)
observed = run(lambda x, t: torch.func.jvp(times_three, (x,), (t,))[1])
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed == "tangent [0.0, 0.0]" else 0)  # an error or the tangent [3.0, 3.0] is right
