"""Compiled autograd segfaults when retain_grad() is set on a non-leaf tensor (here a view of a
leaf) whose every incoming gradient is None, because a custom Function's backward returns None
for it. The compiled backward graph calls torch._C._dynamo.autograd_compiler.call_cpp_tensor_pre_hooks,
which runs VariableHooks::retain_grad's hook on the undefined gradient (gdb: SIGSEGV in
std::_Function_handler<... VariableHooks::retain_grad ...>::_M_invoke, called from
CompiledNodeArgs::add_cpp_single_tensor_pre_hook's lambda). Eager runs the same backward:
x.grad and v.grad stay None. autograd.grad crashes the same way.

The crash is run in a child process, so that this script can report it.
Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import subprocess
import sys

import torch

CHILD = r"""
import torch
from torch._dynamo import compiled_autograd


class NoneGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for a


def run(compiled):
    x = torch.randn(2, 3, requires_grad=True)
    v = x[0]  # a non-leaf: a view of a leaf
    v.retain_grad()
    loss = NoneGrad.apply(v).sum()
    if compiled:
        with compiled_autograd._enable(lambda gm: gm.forward):
            loss.backward()
    else:
        loss.backward()
    assert x.grad is None and v.grad is None


run(compiled=False)  # eager
print("eager ok", flush=True)
run(compiled=True)
print("compiled ok", flush=True)
"""


def main() -> int:
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    if "eager ok" not in child.stdout:
        raise AssertionError(f"eager failed: {child.stderr[-2000:]}")
    if child.returncode < 0:
        print(f"REPRODUCED: the compiled backward died with signal {-child.returncode} "
              f"(eager ran it: x.grad and v.grad None)")
        return 1
    if child.returncode != 0:
        raise AssertionError(f"unexpected failure: {child.stderr[-2000:]}")
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
