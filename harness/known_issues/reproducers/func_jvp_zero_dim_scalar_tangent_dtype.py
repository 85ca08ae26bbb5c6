"""torch.func.jvp of `x * 0.5` (a Python float times a tensor) on a 0-dim float32 tensor returns a
float64 tangent; eager forward AD (torch.autograd.forward_ad) and the primal are float32.

The Python scalar is wrapped as a 0-dim float64 tensor; under the functorch transform it is no
longer treated as a wrapped number, so type promotion between two 0-dim tensors picks float64.
With one or more dimensions, `x * 2` (an int), or a tensor factor, the tangent is float32.
A 0-dim complex64 tensor's tangent comes back complex128 the same way.

The harness reaches it through func-dynamo-custom-rules-dropped: under torch.compile the
transform differentiates the inlined forward of a generated Function, whose terms multiply by
Python float coefficients (func.jvp+dynamo, func.jacfwd+dynamo); eager torch.func calls the
Function's own jvp instead.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import jvp


def main() -> int:
    x, t = torch.ones(()), torch.ones(())
    with fwAD.dual_level():
        eager = fwAD.unpack_dual(fwAD.make_dual(x, t) * 0.5).tangent
    assert eager.dtype == torch.float32, eager.dtype
    primal, tangent = jvp(lambda b: b * 0.5, (x,), (t,))
    assert primal.dtype == torch.float32, primal.dtype
    assert jvp(lambda b: b * 0.5, (torch.ones(3),), (torch.ones(3),))[1].dtype == torch.float32
    z = torch.ones((), dtype=torch.complex64)
    complex_tangent = jvp(lambda b: b * 0.5, (z,), (z,))[1]
    if complex_tangent.dtype != torch.complex64:
        print(f"REPRODUCED: the same for complex64: the tangent is {complex_tangent.dtype}")
    if tangent.dtype != torch.float32:
        print(f"REPRODUCED: torch.func.jvp tangent of a 0-dim float32 tensor times 0.5 is {tangent.dtype} "
              f"(eager forward AD: {eager.dtype})")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
