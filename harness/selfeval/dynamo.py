"""Faults on the Dynamo side: where torch.compile traces a custom Function, and where
compiled autograd captures the backward's hooks.

Dynamo traces `Function.apply` through `AutogradFunctionApplyVariable`
(torch/_dynamo/variables/higher_order_ops.py): a ctx variable
(`AutogradFunctionContextVariable`, torch/_dynamo/variables/misc.py) stands in for ctx,
the forward runs inside `DynamoAutogradFunctionTraceHelper.fwd_trace_helper`
(torch/_functorch/autograd_function.py), the backward is traced on the forward's outputs,
and both become one `autograd_function_apply` higher-order op. Compiled autograd
(torch/_dynamo/compiled_autograd.py, `AutogradCompilerInstance`) puts each hook the
backward meets into its captured graph.

Each fault is narrow: it changes what happens only for one structural class of Functions
(named in its docstring), and only on a path that traces the Function (dynamo) or captures
the backward (compiled). A Function Dynamo does not trace (a jvp, an untraceable forward:
the eager fallback) runs as plain eager `apply` and never sees the fault.
"""

from __future__ import annotations

import operator

import torch

from harness.selfeval._patching import Patches


def _reset_dynamo(p: Patches) -> None:
    """Nothing compiled before the fault is reused, nor with it after."""
    import torch._dynamo

    torch._dynamo.reset()
    p.on_undo(torch._dynamo.reset)


def _ctx_variable():
    from torch._dynamo.variables.misc import AutogradFunctionContextVariable

    return AutogradFunctionContextVariable


def _apply_variable():
    from torch._dynamo.variables.higher_order_ops import AutogradFunctionApplyVariable

    return AutogradFunctionApplyVariable


def dynamo_saved_tensors_reversed(p: Patches) -> None:
    """Dynamo's ctx variable hands the traced backward ctx.saved_tensors in reverse order
    when the forward saved 2 or more tensors (a Function saving one tensor is unaffected)."""
    from torch._dynamo import variables

    def make(original):
        def var_getattr(self, tx, name):
            saved = self.saved_tensors.tensors if self.saved_tensors is not None else []
            if name == "saved_tensors" and len(saved) >= 2:
                return variables.TupleVariable(list(reversed(saved)))
            return original(self, tx, name)
        return var_getattr
    p.wrap(_ctx_variable(), "var_getattr", make)
    _reset_dynamo(p)


def dynamo_mark_non_differentiable_dropped(p: Patches) -> None:
    """Dynamo's ctx variable ignores ctx.mark_non_differentiable: the traced Function's
    marked outputs require grad (Functions that mark nothing are unaffected)."""
    from torch._dynamo import variables

    def make(original):
        def call_method(self, tx, name, args, kwargs):
            if name == "mark_non_differentiable":
                return variables.ConstantVariable.create(None)
            return original(self, tx, name, args, kwargs)
        return call_method
    p.wrap(_ctx_variable(), "call_method", make)
    _reset_dynamo(p)


def _output_of_a_traced_function(variable) -> bool:
    """The tensor variable is (an item of) what an `autograd_function_apply` op returned."""
    from torch._functorch.autograd_function import autograd_function_apply

    node = getattr(getattr(variable, "proxy", None), "node", None)
    while node is not None and node.target is operator.getitem:
        node = node.args[0]
    return node is not None and node.target is autograd_function_apply


def dynamo_needs_input_grad_of_intermediates_false(p: Patches) -> None:
    """Dynamo's ctx variable has ctx.needs_input_grad False for every input that is the
    output of another traced Function (leaves and other inputs keep their flags): a
    backward that reads needs_input_grad returns no gradient for it."""
    original = _ctx_variable().create

    def create(tx, args=None, kwargs=None):
        ctx = original(tx, args, kwargs)
        if ctx.needs_input_grad is not None:
            ctx.needs_input_grad = tuple(needs and not _output_of_a_traced_function(arg)
                                         for needs, arg in zip(ctx.needs_input_grad, args))
        return ctx
    p.set(_ctx_variable(), "create", staticmethod(create))
    _reset_dynamo(p)


def dynamo_input_returned_as_is_not_viewed(p: Patches) -> None:
    """The forward Dynamo traces returns an input that the Function returns as-is
    (`return x`) as that very input instead of a view of it (torch's custom_function.cpp
    makes it one): Functions without such an output are unaffected."""
    from torch._functorch.autograd_function import DynamoAutogradFunctionTraceHelper

    def fwd_trace_helper(orig_fwd):
        def inner(*args, **kwargs):
            with torch.no_grad():
                return orig_fwd(*args, **kwargs)
        return inner
    p.set(DynamoAutogradFunctionTraceHelper, "fwd_trace_helper", staticmethod(fwd_trace_helper))
    _reset_dynamo(p)


def _with_first_two_grads_swapped(backward):
    """`backward` called with its first two gradient arguments swapped."""
    def swapped(ctx, *grads):
        tensors = [i for i, g in enumerate(grads) if g is not None]
        if len(tensors) >= 2:
            first, second = tensors[:2]
            grads = list(grads)
            grads[first], grads[second] = grads[second], grads[first]
        return backward(ctx, *grads)
    return swapped


def dynamo_apply_grad_outputs_swapped(p: Patches) -> None:
    """The backward Dynamo traces for a Function of 2 or more tensor outputs gets the
    gradients of its first two tensor outputs swapped (a Function of one tensor output is
    unaffected)."""
    import types

    from torch._dynamo.variables.builder import SourcelessBuilder

    def make(original):
        def prepare_fn_vt(self, tx, ctx, method_name, args):
            fn_vt, fn_args = original(self, tx, ctx, method_name, args)
            if method_name == "backward" and isinstance(self.bwd_fn, types.FunctionType) \
                    and sum(a.is_tensor() for a in args) >= 2:
                fn_vt = SourcelessBuilder.create(tx, _with_first_two_grads_swapped(self.bwd_fn))
            return fn_vt, fn_args
        return prepare_fn_vt
    p.wrap(_apply_variable(), "prepare_fn_vt", make)
    _reset_dynamo(p)


def _with_first_grad_scaled(backward):
    """`backward` whose first tensor gradient is SCALE times too large."""
    from harness.selfeval.compilers import _scale_first

    def scaled(ctx, *grads):
        return _scale_first(backward(ctx, *grads))
    return scaled


def dynamo_traced_backward_scaled(p: Patches) -> None:
    """The backward Dynamo traces into a Function's `autograd_function_apply` op returns its
    first tensor gradient 1.5 times too large (the Function's eager backward, and every
    Function Dynamo does not trace, are unaffected)."""
    import types

    from torch._dynamo.variables.builder import SourcelessBuilder

    def make(original):
        def prepare_fn_vt(self, tx, ctx, method_name, args):
            fn_vt, fn_args = original(self, tx, ctx, method_name, args)
            if method_name == "backward" and isinstance(self.bwd_fn, types.FunctionType):
                fn_vt = SourcelessBuilder.create(tx, _with_first_grad_scaled(self.bwd_fn))
            return fn_vt, fn_args
        return prepare_fn_vt
    p.wrap(_apply_variable(), "prepare_fn_vt", make)
    _reset_dynamo(p)


def _compiler_instance():
    from torch._dynamo.compiled_autograd import AutogradCompilerInstance

    return AutogradCompilerInstance


def ca_tensor_pre_hook_skipped(p: Patches) -> None:
    """Compiled autograd leaves out the tensor hooks (Tensor.register_hook) of the
    backward it captures: the gradient passes unchanged (node hooks and retain_grad are
    unaffected)."""
    p.set(_compiler_instance(), "tensor_pre_hook", lambda self, inputs, hook_id, i: inputs)
    _reset_dynamo(p)  # also forgets compiled autograd's cached graphs


def ca_node_post_hook_skipped(p: Patches) -> None:
    """Compiled autograd leaves out the post-hooks on a node (grad_fn.register_hook) of the
    backward it captures (pre-hooks and tensor hooks are unaffected)."""
    p.set(_compiler_instance(), "post_hook", lambda self, outputs, inputs, hook_id: outputs)
    _reset_dynamo(p)
