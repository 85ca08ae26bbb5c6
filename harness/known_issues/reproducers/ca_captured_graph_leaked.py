"""Torch issue (found by the harness; torch only): compiled autograd never frees a captured
backward graph, not even after torch._dynamo.reset() and gc.collect().

Each time compiled autograd captures a backward (a cache miss), the C++ side calls the
compiler's end_capture(), which returns a new reference to a tuple (runtime_wrapper,
compiled_fn). `_compiled_autograd_impl` (torch/csrc/dynamo/python_compiled_autograd.cpp)
keeps a reference to each item in its cache node (Py_NewRef) but never releases the tuple
itself (`PyObject* res = check(call_end_capture(...))`, no Py_DECREF). The tuple holds
runtime_wrapper, a closure over the AutogradCompilerInstance, so the whole capture stays
alive: the FX graph and its GraphModule, the tracer, the ShapeEnv with its symbols, fake
tensors. clear_cache() (called by torch._dynamo.reset()) drops the cache node's references,
the leaked one remains; nothing outside C++ refers to the tuple, so gc.collect() cannot
free it either. The harness's compiled path resets before every example, so every example
with a backward leaks its graphs: about 2.5 MB an example in a fuzz campaign (torch 2.13).
No custom Function is needed.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
Usage: python ca_captured_graph_leaked.py [BACKWARDS]   (default 100)
"""
import gc
import resource
import sys
import types
import weakref

import torch
import torch._dynamo
from torch._dynamo import compiled_autograd

captured = []  # a weak reference to each captured backward graph


def compiler(gm):
    captured.append(weakref.ref(gm))
    return gm.forward


def one_backward(scale):
    torch._dynamo.reset()  # forget every compiled artifact: compiled autograd's cache too
    x = torch.randn(4, 4, requires_grad=True)
    with compiled_autograd._enable(compiler):
        (x * scale).sin().sum().backward()


def leaked_tuples():
    """Tuples (runtime_wrapper, compiled_fn) that end_capture returned and nothing in Python refers to."""
    everything = gc.get_objects()
    returned = [o for o in everything if type(o) is tuple and len(o) == 2
                and isinstance(o[0], types.FunctionType) and o[0].__name__ == "runtime_wrapper"]
    return [t for t in returned if all(r is everything or r is returned for r in gc.get_referrers(t))]


if __name__ == "__main__":
    backwards = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    one_backward(1.0)  # the first one imports and warms up
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for i in range(1, backwards):
        one_backward(float(i + 1))
    torch._dynamo.reset()
    gc.collect()
    alive = sum(ref() is not None for ref in captured)
    held = len(leaked_tuples())
    if alive:
        print(f"REPRODUCED (torch {torch.__version__}): {alive} of {len(captured)} captured backward graphs "
              f"are alive after torch._dynamo.reset() and gc.collect(); {held} (runtime_wrapper, compiled_fn) "
              "tuples from end_capture have no referrer in Python (held by C++); peak memory grew "
              f"{(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / (backwards - 1):.0f} KiB "
              "a backward")
        raise SystemExit(1)
    print(f"not reproduced (torch {torch.__version__}): every captured graph was freed")
