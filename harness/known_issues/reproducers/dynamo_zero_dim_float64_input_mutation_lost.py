"""Known torch issue dynamo-zero-dim-float64-input-mutation-lost (found by the harness; torch only).

torch.compile (AOT backends: aot_eager, inductor) drops an in-place op on a 0-dim float64 tensor
that is an input of the compiled frame: `a.mul_(-1.5); return a` leaves `a` unchanged and returns
its old value, silently, with fullgraph=True. Dynamo gives the 0-dim float64 input a float symbol
(`create_symbol zf.. for L['a'].item()`, TORCH_LOGS=+dynamo), the tensorify pass restarts the
analysis, and the retraced graph has no mul_ at all (TORCH_LOGS=graph_code: `return (l_a_,)`).
float32, float16, bfloat16, complex, a shape (1,) tensor and the `eager` backend are all fine;
`return a.mul_(-1.5)` (the op's own result) is fine too.

The harness meets it in a custom Function's forward: a Function that no input requiring grad
reaches and that calls ctx.mark_dirty breaks Dynamo's graph ("Unsupported autograd.Function
context mark_dirty"), so Dynamo compiles the forward's frame on its own, its inputs are frame
inputs, and the mark_dirty'd input's in-place op is lost (the second form below; a tensor op
before the in-place one is needed there). Seen on 2.13.0; 2.14.1 and 2.15.0 keep the mutation.
Closest upstream work: pytorch/pytorch#179395 (tensorify of method-form in-place ops such as
mul_ on SymFloats); no report of this silent loss was found.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


def scale_in_place(a):
    a.mul_(-1.5)
    return a


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        torch.zeros(())  # any tensor op before the in-place one
        a.mul_(-1.5)
        ctx.mark_dirty(a)  # nothing requires grad: Dynamo breaks the graph here
        return a

    @staticmethod
    def backward(ctx, g):
        return g * -1.5


def through_the_function(x):
    return ScaleInPlace.apply(x.clone())


def main() -> int:
    lost = []
    a = torch.tensor(0.7, dtype=torch.float64)
    out = torch.compile(scale_in_place, backend="aot_eager", fullgraph=True)(a)
    if a.item() != 0.7 * -1.5 or out.item() != 0.7 * -1.5:
        lost.append(f"`a.mul_(-1.5); return a` compiled with fullgraph=True leaves a = {a.item()} and returns "
                    f"{out.item()} (eager: {0.7 * -1.5})")
    torch._dynamo.reset()
    x = torch.tensor(0.7, dtype=torch.float64)
    eager = through_the_function(x)
    compiled = torch.compile(through_the_function, backend="aot_eager")(x)
    if not torch.equal(compiled, eager):
        lost.append(f"a Function's mark_dirty'd input comes back as {compiled.item()} (eager: {eager.item()})")
    if lost:
        print(f"REPRODUCED: torch.compile drops an in-place op on a 0-dim float64 input: {'; '.join(lost)}")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
