"""torch.func.jacfwd(f, has_aux=True) on an input with zero elements raises
"IndexError: index 0 is out of bounds for dimension 0 with size 0" at
`flat_aux = [value[0] for value in flat_aux]` (torch/_functorch/eager_transforms.py, jacfwd):
the aux values are vmapped over the empty basis and then indexed at 0. jacrev with aux, and
jacfwd without aux, return the empty Jacobian.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import jacfwd, jacrev


def main() -> int:
    x = torch.randn(0)
    jacobian, aux = jacrev(lambda x: (x.sin(), x), has_aux=True)(x)
    assert jacobian.shape == (0, 0) and aux.shape == (0,)
    assert jacfwd(lambda x: x.sin())(x).shape == (0, 0)
    try:
        jacfwd(lambda x: (x.sin(), x), has_aux=True)(x)
    except IndexError as e:
        if "out of bounds for dimension 0 with size 0" in str(e):
            print(f"REPRODUCED: IndexError: {e}")
            return 1
        raise
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
