"""Known torch issue inductor-complex-empty-view-dtype (found by the harness; torch only).

torch.compile with the inductor backend of an elementwise op on an empty complex tensor
fails to compile: Inductor computes complex arithmetic on a float view of the tensor and
views the result back with aten.view.dtype, whose stride check rejects the empty
tensor's strides ("self.stride(0) must be divisible by 2 to view Float as ComplexFloat
(different element sizes), but got 1" for shape (2, 0); for shape (0,) "self.stride(-1) must
be 1 ...", raised as InductorError at aten.view.dtype). Eager computes the empty result.
Upstream: pytorch/pytorch#190274 (open), fix proposed in pytorch/pytorch#190530
("[Inductor] Replace empty-output ops with empty_strided"). The same graph in float32
compiles.

Exit status 1 and "REPRODUCED" when the bug is present (backend from argv[1], default
inductor); 0 when fixed.
"""
import sys

import torch


def compiled(backend, x):
    torch._dynamo.reset()
    try:
        return "returned", torch.compile(lambda a: a + -0.5 * (a * a), backend=backend, fullgraph=True)(x)
    except Exception as e:  # noqa: BLE001  what the compiler raised is the observation
        lines = [line for line in str(e).splitlines() if "must be" in line or "target:" in line]
        return "raised", f"{type(e).__name__}: {(lines or str(e).splitlines())[0].strip()}"


def reproduces(backend):
    found = False
    for dtype in (torch.complex64, torch.complex128, torch.float32):
        for shape in ((2, 0), (0,)):
            x = torch.zeros(shape, dtype=dtype)
            eager = x + -0.5 * (x * x)
            how, got = compiled(backend, x)
            wrong = how == "raised" or got.shape != eager.shape
            found |= wrong and dtype.is_complex
            print(f"{backend}: {dtype} shape {shape}: compiled {how} "
                  f"{got if how == 'raised' else tuple(got.shape)}; eager returned shape {tuple(eager.shape)}"
                  + (" -- REPRODUCED" if wrong else "") + ("" if dtype.is_complex else " (the workaround)"))
    return found


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "inductor"
    raise SystemExit(1 if reproduces(backend) else 0)
