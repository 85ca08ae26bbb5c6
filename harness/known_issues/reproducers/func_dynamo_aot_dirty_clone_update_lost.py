"""Known torch issue func-dynamo-aot-dirty-clone-update-lost (found by the harness; torch only).

Under torch.func.grad (or jacrev) of a torch.compile'd function (backend aot_eager or inductor), a custom
Function that modifies in place, and marks dirty, a tensor the compiled function made (a clone)
returns the value from before the update, silently. Eager grad, torch.compile without grad, and
backend eager return the updated value.

Exit status 1 and "REPRODUCED" while the update is lost (backend from argv[1], default aot_eager).
"""
import sys

import torch
from torch.func import grad, jacrev

class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(x, c):
        c.mul_(-1.5)  # modifies its input in place, and says so
        return c
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[1])
    @staticmethod
    def backward(ctx, g):
        return None, g * -1.5

def f(x, y):
    out = Dirty.apply(y, x.clone())  # the clone is made inside the compiled function
    return (out * y).sum(), out

x = torch.tensor(0.7, dtype=torch.float64)
y = torch.tensor(0.3, dtype=torch.float64)
backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
lost = []
for transform in (grad, jacrev):
    expected = transform(f, argnums=1, has_aux=True)(x, y)[1]
    observed = transform(torch.compile(f, backend=backend), argnums=1, has_aux=True)(x, y)[1]
    print(f"{transform.__name__}: expected (eager) {expected.item()}, observed (compiled) {observed.item()}",
          torch.__version__)
    if not torch.allclose(expected, observed):
        lost.append(transform.__name__)
if lost:
    print("REPRODUCED: the in-place update of the Function's dirty input is lost under "
          f"{' and '.join(lost)} of torch.compile")
    sys.exit(1)
