"""torch.compile (backend aot_eager) of torch.func.jvp whose function takes a view (x[2],
x[:2], x.view_as(x)) of a primal whose storage holds elements it does not use (here every
other column of a wider tensor: 3 columns of 6, or 1 of 2, a primal of shape (3, 1) and
strides (2, 2); shape (1,) and stride (2,) too, which is non-overlapping and dense) while its
tangent is contiguous fails with
"!this_view_meta->has_fw_view() INTERNAL ASSERT FAILED ... Expected the output of forward
differentiable view operations to have the tangent have the same layout as primal"
(torch/csrc/autograd/autograd_meta.cpp), raised as BackendCompilerFailed (or, on 2.13, at
times as Dynamo's TorchRuntimeError while propagating fake tensors). Eager torch.func.jvp,
the `eager` backend, a contiguous or transposed primal, one made by as_strided over exactly
its own elements (shape (3, 1), strides (1, 7)), and an elementwise op on the gapped primal
all work. The failed call also leaves a forward-AD dual level open in torch's
C++ state, so the next forward AD raises "Nested forward mode AD is not supported".

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import jvp


def row(x):
    return x[2] * 1


def dual_level_left_open():
    try:
        level = torch._C._enter_dual_level()
    except RuntimeError as e:
        if "Nested forward mode AD is not supported" not in str(e):
            raise
        torch._C._exit_dual_level(level=0)
        return True
    torch._C._exit_dual_level(level=level)
    return False


def failed_on(columns: int) -> bool:
    """jvp of a view of every other column of a (3, 2 * columns) tensor, compiled: did it fail?"""
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(3, 2 * columns, dtype=torch.float64, generator=gen)[:, ::2]  # a primal with gaps
    t = torch.rand(3, columns, dtype=torch.float64, generator=gen)  # its tangent, contiguous
    expected = jvp(row, (x,), (t,))
    torch._dynamo.reset()
    try:
        got = torch.compile(lambda x, t: jvp(row, (x,), (t,)), backend="aot_eager")(x, t)
    except RuntimeError as e:
        if "tangent have the same layout as primal" in str(e):
            print(f"{columns} column(s): {type(e).__name__}: has_fw_view() INTERNAL ASSERT FAILED; "
                  f"a dual level left open: {dual_level_left_open()}")
            return True
        raise
    assert all(torch.equal(a, b) for a, b in zip(got, expected)), (got, expected)
    return False


def main() -> int:
    failed = [columns for columns in (3, 1) if failed_on(columns)]
    if failed:
        print(f"REPRODUCED: with {' and '.join(map(str, failed))} column(s) of a tensor twice as wide")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
