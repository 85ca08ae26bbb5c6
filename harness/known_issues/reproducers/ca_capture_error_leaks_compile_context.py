"""Torch issue (found by the harness; torch only): a compiled autograd capture that raises leaves
its compile context entered, and the garbage collector later clears another compile's context.

AutogradCompilerInstance.begin_capture (torch/_dynamo/compiled_autograd.py) enters a
`compile_context(CompileContext(...))` by hand (`self.compile_context.__enter__()`) and
end_capture leaves it (`self.compile_context.__exit__(None, None, None)`) as its last step. A
capture that raises in between (here a tensor hook on an output no gradient reaches, which
end_capture's reorder_tensor_pre_hook_nodes trips on: ca-tensor-hook-unreached-output) never
leaves it: the thread's compile context stays set outside any compile. Where the exception's
frames are kept (a test runner, a logger), the abandoned context manager lives in a reference
cycle; when the collector finalizes it, its `finally` restores the context it found (None), at
whatever moment the collection runs. Inside a later torch.compile that clears the running
compile's context, and Dynamo fails with "AssertionError: compile_context is not set" when its
analysis restarts (convert_frame.py, compile_frame: `CompileContext.get().attempt = attempt`).
The review of the change that added the context asked this very question (pytorch/pytorch#141907).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import gc
import sys

import torch
import torch._guards as guards
from torch._dynamo import compiled_autograd


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3


def failed_capture():
    """A capture that raises in end_capture; its exception, kept."""
    x = torch.ones(3, requires_grad=True)
    a, b = TwoOutputs.apply(x)
    b.register_hook(lambda g: g)
    try:
        with compiled_autograd._enable(lambda gm: gm.forward):
            a.sum().backward()
    except AttributeError as e:
        return e
    return None


kept = [failed_capture()]
print(f"the capture raised: {kept[0]!r}")
left = guards.CompileContext.try_get()
print(f"outside any compile, the thread's compile context is {left and left.compile_id}")

seen = {}


def backend(gm, inputs):
    seen["before"] = guards.CompileContext.try_get()
    kept.clear()
    gc.collect()  # what Python's collector may do at any allocation
    seen["after"] = guards.CompileContext.try_get()
    return gm.forward


torch.compile(lambda t: t.sin() + 1, backend=backend)(torch.randn(3))
cleared = seen["before"] is not None and seen["after"] is None
print(f"a later compile's context across a collection: {seen['before']} -> {seen['after']}")
if left is not None or cleared:
    print("REPRODUCED: the failed capture left its compile context entered"
          + ("; collecting it cleared a running compile's context" if cleared else ""))
    sys.exit(1)
print("fixed: no compile context left behind")
