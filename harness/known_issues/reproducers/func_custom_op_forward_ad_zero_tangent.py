"""torch.func.jvp (and jacfwd) of a torch.library.custom_op returns an all-zero tangent, with no
error: the op has no forward-mode formula (register_autograd gives a backward only), and eager
forward AD raises NotImplementedError for it where an input requires grad.

The op's Autograd kernel (torch/_library/autograd.py, make_autograd_impl: autograd_impl) runs its
generated Function only when `_C._any_requires_grad(*args)`; a dual tensor under torch.func.jvp
does not require grad, so the kernel redispatches below autograd (forward_no_grad) and the output
has no tangent, which jvp returns as zeros (safe_unpack_dual). The same under torch.compile.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed (a tangent or an error).
"""
import torch


@torch.library.custom_op("repro::times_three", mutates_args=())
def times_three(x: torch.Tensor) -> torch.Tensor:
    return x * 3


times_three.register_fake(lambda x: torch.empty_like(x))
times_three.register_autograd(lambda ctx, g: g * 3, setup_context=lambda ctx, inputs, output: None)


def main() -> int:
    x, t = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
    (eager,) = torch.autograd.grad(times_three(x.requires_grad_()), x, t)  # backward works: 3 * t
    try:
        _, tangent = torch.func.jvp(times_three, (x.detach(),), (t,))
    except (RuntimeError, NotImplementedError) as e:  # an error is a fix too: no silent result
        print(f"not reproduced: torch.func.jvp raised {type(e).__name__} (fixed in torch {torch.__version__}?)")
        return 0
    if torch.equal(tangent, torch.zeros(2)):
        print(f"REPRODUCED: torch.func.jvp tangent {tangent.tolist()}, expected {eager.tolist()} (or an error)")
        return 1
    print(f"not reproduced: tangent {tangent.tolist()} (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
