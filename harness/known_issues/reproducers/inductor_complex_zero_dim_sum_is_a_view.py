"""Known torch issue inductor-complex-zero-dim-sum-is-a-view (found by the harness; torch only).

torch.compile with the inductor backend returns the sum of two 0-dim complex tensors as a
view: its `_base` is a 1-element tensor, where eager (and the eager and aot_eager backends)
return a fresh tensor. Inductor's complex add decomposition (torch/_inductor/decomposition.py,
`add`) reshapes 0-dim operands to shape (1,), adds them as real pairs and returns `result[0]`.
The value is right; the output's identity is not (`out._is_view()`, `out._base`). Shape (1,)
and real dtypes are not affected.

Exit status 1 and "REPRODUCED" when the compiled sum is a view; 0 when it is fresh.
"""
import torch


def add(x):
    return x + x


if __name__ == "__main__":
    x = torch.randn((), dtype=torch.complex128)
    out = torch.compile(add, backend="inductor", fullgraph=True)(x)
    print(f"eager: _base {add(x)._base}; inductor: _base {None if out._base is None else tuple(out._base.shape)}")
    if out._base is not None:
        print("REPRODUCED: inductor's 0-dim complex sum is a view of a 1-element tensor")
        raise SystemExit(1)
    print("not reproduced")
