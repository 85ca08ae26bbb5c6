"""Faults that show only under one of torch's compilers or transforms.

- compiled autograd calls a Function's backward through `call_backward`
  (torch/_dynamo/external_utils.py, imported by name into compiled_autograd.py);
- torch.compile with the aot_eager backend runs AOT Autograd's backward graph through
  the backend's bw_compiler;
- torch.func transforms apply a Function through `custom_function_call`
  (torch/_functorch/autograd_function.py, imported by name into torch.autograd.function).
"""

from __future__ import annotations

import torch

from harness.selfeval._patching import Patches

SCALE = 1.5


def _scale_first(values):
    """`values` (a tensor, a tuple or a list) with its first tensor times SCALE."""
    if isinstance(values, torch.Tensor):
        return values * SCALE
    scaled = list(values)
    first = next((i for i, v in enumerate(scaled) if isinstance(v, torch.Tensor)), None)
    if first is not None:
        scaled[first] = scaled[first] * SCALE
    return scaled if isinstance(values, list) else tuple(scaled)


def compiled_autograd_backward_scaled(p: Patches) -> None:
    """Compiled autograd's call into a Function's backward scales its first gradient."""
    from torch._dynamo import compiled_autograd, external_utils

    def make(original):
        def call_backward(backward_c_function, saved_tensors, *args):
            return _scale_first(original(backward_c_function, saved_tensors, *args))
        return call_backward
    faulty = make(external_utils.call_backward)
    p.set(external_utils, "call_backward", faulty)
    p.set(compiled_autograd, "call_backward", faulty)


def aot_backward_miscompiled(p: Patches) -> None:
    """torch.compile (backend aot_eager): every gradient the compiled backward graph
    returns is scaled, as a miscompiled graph's would be."""
    import torch._dynamo
    from torch._dynamo.backends import debugging, registry

    def bw_compiler(gm, example_inputs):
        run_graph = debugging.boxed_nop(gm, example_inputs)

        def run(args):
            grads = run_graph(args)
            return type(grads)(g * SCALE if isinstance(g, torch.Tensor) else g for g in grads)
        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    def aot_eager(gm, example_inputs, **kwargs):
        return debugging.aot_eager(gm, example_inputs, bw_compiler=bw_compiler, **kwargs)

    registry.lookup_backend("aot_eager")  # registers the stock backends first
    p.set_item(registry._COMPILER_FNS, "aot_eager", aot_eager)
    torch._dynamo.reset()  # nothing compiled before may be reused
    p.on_undo(torch._dynamo.reset)


def func_transform_output_scaled(p: Patches) -> None:
    """Under a torch.func transform, a Function's first output is scaled (needs the
    func.* paths to be seen by a campaign)."""
    import torch.autograd.function as function_module

    def make(original):
        def custom_function_call(autograd_function, *args, **kwargs):
            return _scale_first(original(autograd_function, *args, **kwargs))
        return custom_function_call
    p.wrap(function_module, "custom_function_call", make)
