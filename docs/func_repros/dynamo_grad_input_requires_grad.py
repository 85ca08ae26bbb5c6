"""Found while triaging the func+dynamo paths, not registered (the generated graphs do not reach it:
harness/paths/func.py decides which values to hook from the spec, not from requires_grad).

Inside torch.compile(torch.func.grad(f)), the input f differentiates reports requires_grad=False;
eager torch.func.grad reports True. Code that branches on it takes the other branch silently: here
a gradient hook registered `if x.requires_grad` is dropped and the gradient is halved. An
intermediate computed from x reports True in both. (Compare pytorch/pytorch#134784, where the
same happens under vmap, intentionally: BatchedTensor.requires_grad is always False.)

Exit status 1 and "REPRODUCED" when the divergence is present; 0 when fixed.
"""
import torch
from torch.func import grad


def loss(x):
    if x.requires_grad:
        x.register_hook(lambda g: g * 2)
    return (x * 3).sum()


def main() -> int:
    x = torch.ones(3)
    eager = grad(loss)(x)
    compiled = torch.compile(grad(loss), backend="eager", fullgraph=True)(x)
    assert torch.equal(eager, torch.full((3,), 6.0)), eager
    if torch.equal(compiled, torch.full((3,), 3.0)):
        print("REPRODUCED: inside torch.compile(torch.func.grad(f)) the input does not require grad: "
              f"the hook was not registered (gradient {compiled.tolist()}, eager {eager.tolist()})")
        return 1
    assert torch.equal(compiled, eager), compiled
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
