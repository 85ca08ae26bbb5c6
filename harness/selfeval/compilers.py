"""Faults that show only under one of torch's compilers or transforms.

- compiled autograd calls a Function's backward through `call_backward`
  (torch/_dynamo/external_utils.py, imported by name into compiled_autograd.py);
- torch.compile with the aot_eager backend runs AOT Autograd's backward graph through
  the backend's bw_compiler, and compiled autograd copies that graph into its own
  (`proxy_call_aot_backward`);
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


def compiled_autograd_aot_backward_scaled(p: Patches) -> None:
    """Only where compiled autograd captures the backward of a region torch.compile traced
    (GraphSpec.compiled_backward): the AOT backward graph it copies into its own graph returns its
    first gradient scaled (compiled autograd's proxy_call_aot_backward), as a wrong copy would."""
    from torch._dynamo.compiled_autograd import AutogradCompilerInstance

    def make(original):
        def proxy_call_aot_backward(self, *args, **kwargs):
            grads = list(original(self, *args, **kwargs))  # fx proxies of the gradients, None where none
            first = next((i for i, g in enumerate(grads) if isinstance(g, torch.fx.Proxy)), None)
            if first is not None:
                grads[first] = grads[first] * SCALE  # one more node in the captured graph
            return grads
        return proxy_call_aot_backward
    p.wrap(AutogradCompilerInstance, "proxy_call_aot_backward", make)


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


# --- the custom_op form (FunctionSpec.api "custom_op", harness/custom_op.py) -----------------
#
# torch/_library/autograd.py runs a custom_op's register_autograd formula in a generated
# Function ("GeneratedBackwardFor_<ns>_<op>_<overload>") with one input more than the op has
# arguments (its Metadata), whose gradient its backward returns as a trailing None; and
# register_vmap's kernel (custom_ops.py) wraps the rule's outputs through
# custom_function_call_vmap_helper (torch/_functorch/autograd_function.py), which it imports
# when the rule is registered.

_GENERATED_BACKWARD = "GeneratedBackwardFor_"


def _samples_rolled(vmap_rule):
    """A vmap rule whose batched outputs have their samples shifted by one along the batch dim."""
    def rule(info, in_dims, *args, **kwargs):
        outputs, out_dims = vmap_rule(info, in_dims, *args, **kwargs)
        many = isinstance(outputs, tuple)
        outs, dims = (outputs, out_dims) if many else ((outputs,), (out_dims,))
        outs = tuple(o if d is None or not isinstance(o, torch.Tensor) else o.roll(1, d) for o, d in zip(outs, dims))
        return (outs if many else outs[0]), out_dims
    return rule


def compiled_autograd_custom_op_grads_rotated(p: Patches) -> None:
    """Only under compiled autograd, and only for a custom_op's generated backward: an
    off-by-one around the trailing metadata input's None rotates the gradients of the op's
    inputs by one (each lands on the next input, the last one's on the first)."""
    from torch._dynamo import compiled_autograd, external_utils

    def make(original):
        def call_backward(backward_c_function, saved_tensors, *args):
            grads = original(backward_c_function, saved_tensors, *args)
            name = getattr(getattr(backward_c_function, "_forward_cls", None), "__name__", "")
            if name.startswith(_GENERATED_BACKWARD) and isinstance(grads, tuple) and len(grads) >= 3:
                *inputs, metadata = grads
                return (inputs[-1], *inputs[:-1], metadata)
            return grads
        return call_backward
    faulty = make(external_utils.call_backward)
    p.set(external_utils, "call_backward", faulty)
    p.set(compiled_autograd, "call_backward", faulty)


def vmap_custom_op_samples_rolled(p: Patches) -> None:
    """Only under torch.func.vmap, and only for a custom_op's register_vmap rule: the batch
    dimension is put back on the rule's outputs with the samples shifted by one (sample i
    gets sample i-1's value), as an off-by-one in re-adding the batch dim would."""
    import torch._functorch.autograd_function as autograd_function

    from harness import custom_op

    def make(original):
        def helper(interpreter, vmap_function, op, *operands, **kwargs):
            if isinstance(op, torch.autograd.function.FunctionMeta):
                return original(interpreter, vmap_function, op, *operands, **kwargs)

            return original(interpreter, _samples_rolled(vmap_function), op, *operands, **kwargs)
        return helper
    p.wrap(autograd_function, "custom_function_call_vmap_helper", make)
    # register_vmap binds the helper when an op's rule is registered: ops made before (and
    # those made while it is installed) are deregistered, so each side gets its own
    custom_op.clear()
    p.on_undo(custom_op.clear)


def grad_vmap_user_rule_samples_rolled(p: Patches) -> None:
    """Only where vmap runs inside another transform (torch.func.grad of a vmap: the vmap
    level is not the first), and only for an autograd.Function's own vmap staticmethod: the
    batch dimension is put back on its outputs with the samples shifted by one, as re-adding
    it at a nested level with an off-by-one would. generate_vmap_rule goes another way
    (custom_function_call_vmap_generate_rule) and is untouched."""
    import torch._functorch.autograd_function as autograd_function

    def make(original):
        def helper(interpreter, vmap_function, op, *operands, **kwargs):
            if not isinstance(op, torch.autograd.function.FunctionMeta) or interpreter.level() < 2:
                return original(interpreter, vmap_function, op, *operands, **kwargs)

            return original(interpreter, _samples_rolled(vmap_function), op, *operands, **kwargs)
        return helper
    p.wrap(autograd_function, "custom_function_call_vmap_helper", make)


def vmap_rule_batch_dim_taken_as_first(p: Patches) -> None:
    """Only where a vmapped Function's input has its batch dimension anywhere but first (vmap's
    in_dims=-1 over a leaf of one dim or more, GraphSpec.batch_dim): the generated vmap rule maps the
    Function's forward over dim 0 of that input instead, as a rule that forgot to move the batch
    dimension to the front would (functorch's vmapify_autograd_function)."""
    import torch._functorch.autograd_function as autograd_function
    from torch.utils import _pytree as pytree

    def make(original):
        def vmapify_autograd_function(function, in_dims, batch_size, randomness):
            first = pytree.tree_map(lambda d: d if d is None else 0, in_dims)
            return original(function, first, batch_size, randomness)
        return vmapify_autograd_function
    p.wrap(autograd_function, "vmapify_autograd_function", make)


def reductify_takes_one_sample(p: Patches) -> None:
    """Only where a vmapped Function's input is shared by the batch (vmap's in_dims=None) and its
    backward runs under another transform (grad of a vmap, generate_vmap_rule): the batched
    gradient of that input is reduced to its first sample instead of summed over the batch, as a
    reduction written as an index would (functorch's reductify_leaf)."""
    import torch._functorch.autograd_function as autograd_function

    def make(original):
        def reductify_leaf(grad_input, grad_input_bdim, input_bdim, batch_size, *rest):
            if grad_input is not None and grad_input_bdim is not None and input_bdim is None:
                return grad_input.select(grad_input_bdim, 0)
            return original(grad_input, grad_input_bdim, input_bdim, batch_size, *rest)
        return reductify_leaf
    p.wrap(autograd_function, "reductify_leaf", make)
