"""torch.func.grad of torch.func.grad does not call a tensor hook (Tensor.register_hook) in the
outer differentiation: the hook is registered on the inner level's tensor and fires only
there. Eager autograd calls it "every time a gradient with respect to the Tensor is computed"
(Tensor.register_hook docs), so in a double backward (create_graph=True, then grad of the
gradients) it fires in the second backward too. With a hook that doubles the gradient of
y = x * x in L = sum(y * y), eager's second-order gradient and torch.func's differ:
eager [27, 7], torch.func [16.2, 4.2] for x = [1.5, -0.5], w = [0.3, 0.7].

Exit status 1 and "REPRODUCED" when the two differ; 0 when they agree.
"""
import torch
from torch.func import grad

W = torch.tensor([0.3, 0.7], dtype=torch.float64)


def loss(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    y.register_hook(lambda g: g * 2)  # doubles the gradient of y
    return (y * y).sum()


def main() -> int:
    x = torch.tensor([1.5, -0.5], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(loss(x), [x], create_graph=True)
    (eager,) = torch.autograd.grad((g * W).sum(), [x])
    func = grad(lambda x: (grad(loss)(x) * W).sum())(x.detach())
    assert torch.allclose(grad(loss)(x.detach()), g.detach())  # first order agrees
    if not torch.allclose(eager, func):
        print(f"REPRODUCED: second order {func.tolist()} under torch.func.grad(grad), {eager.tolist()} in eager")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
