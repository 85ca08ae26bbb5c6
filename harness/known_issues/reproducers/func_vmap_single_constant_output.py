"""torch.func.vmap over a custom autograd.Function with generate_vmap_rule=True whose forward
returns ONE non-tensor value (not a tuple) raises "TypeError: Value after * must be an
iterable, not int": vmapify_autograd_function's generated forward
(torch/_functorch/autograd_function.py) ends with `return *outputs, out_dims`, which handles a
Tensor or a tuple only. Eager returns the value; the same Function returning `(x * 2, 2)`
runs under vmap. A string is iterable, so it is unpacked instead: 'tag' comes back from vmap
(and jacfwd, which vmaps) as 't', silently. A one-element list of a tensor (`return [x * 2]`,
which eager returns as it is) is unpacked as well: vmap raises "AssertionError: flat_bdims must
not be None".

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import vmap


class Two(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return 2  # one non-tensor output

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None


class PairWithTwo(Two):
    @staticmethod
    def forward(x):
        return x * 2, 2


class Tag(Two):
    @staticmethod
    def forward(x):
        return "tag"  # one non-tensor output that is iterable


class Listed(Two):
    @staticmethod
    def forward(x):
        return [x * 2]  # one tensor in a list


def main() -> int:
    assert Two.apply(torch.randn(3)) == 2  # eager
    assert vmap(lambda x: PairWithTwo.apply(x)[0])(torch.randn(2, 3)).shape == (2, 3)  # a tuple works
    tags = []
    vmap(lambda x: tags.append(Tag.apply(x)) or x)(torch.randn(2, 3))
    if tags != ["tag"]:
        print(f"REPRODUCED: a Function returning 'tag' returned {tags[0]!r} under vmap")
    listed_raised = False
    assert isinstance(Listed.apply(torch.randn(3)), list)  # eager returns the list
    try:
        vmap(lambda x: Listed.apply(x)[0])(torch.randn(2, 3))
    except AssertionError as e:
        if "flat_bdims must not be None" not in str(e):
            raise
        print(f"REPRODUCED: a Function returning [x * 2] raised AssertionError: {e}")
        listed_raised = True
    try:
        vmap(lambda x: (x * Two.apply(x)))(torch.randn(2, 3))
    except TypeError as e:
        if "Value after * must be an iterable" in str(e):
            print(f"REPRODUCED: TypeError: {e}")
            return 1
        raise
    if tags != ["tag"] or listed_raised:
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
