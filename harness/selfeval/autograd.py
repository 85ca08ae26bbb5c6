"""Faults in torch's autograd as a custom Function sees it from Python.

Stock torch runs a Function's backward and jvp through the node class
`torch.autograd.function.BackwardCFunction` (the engine calls its `apply`, forward AD
its `apply_jvp`) and registers node hooks through its methods. These faults replace
those methods, so they hit the eager path's custom Functions only: the math oracle
(plain autograd, no custom Function) and the native path's own node are untouched.
One replaces `Function.apply` itself, where it binds keyword arguments.
"""

from __future__ import annotations

import torch
from torch.autograd.function import BackwardCFunction, _is_setup_context_defined

from harness.selfeval._patching import Patches

SCALE = 1.5


def jvp_tangent_scaled(p: Patches) -> None:
    """Forward AD hands the Function's jvp input tangents 1.5 times too large."""
    def make(original):
        def apply_jvp(self, *tangents):
            return original(self, *(t * SCALE if isinstance(t, torch.Tensor) else t for t in tangents))
        return apply_jvp
    p.wrap(BackwardCFunction, "apply_jvp", make)


class _NoHandle:
    """What a dropped registration returns in place of a RemovableHandle."""

    def remove(self) -> None:
        pass


def every_grad_scaled(p: Patches) -> None:
    """Every gradient a custom Function's backward returns reaches the engine 1.5 times too
    large (what dtype sensitivity is measured with: harness.oracles.bounds)."""
    def make(original):
        def apply(self, *grads):
            result = original(self, *grads)
            if isinstance(result, tuple):
                return tuple(r * SCALE if isinstance(r, torch.Tensor) else r for r in result)
            return result * SCALE if isinstance(result, torch.Tensor) else result
        return apply
    p.wrap(BackwardCFunction, "apply", make)


def node_hooks_not_called(p: Patches) -> None:
    """Pre- and post-hooks registered on a custom Function's node are dropped."""
    p.set(BackwardCFunction, "register_hook", lambda self, fn: _NoHandle())
    p.set(BackwardCFunction, "register_prehook", lambda self, fn: _NoHandle())


def output_hooks_not_called(p: Patches) -> None:
    """Tensor hooks on a custom Function's outputs are dropped (a hook may change the
    gradient, so values differ too)."""
    def make(original):
        def register_hook(self, hook):
            if isinstance(self.grad_fn, BackwardCFunction):
                return _NoHandle()
            return original(self, hook)
        return register_hook
    p.wrap(torch.Tensor, "register_hook", make)


def double_backward_detached(p: Patches) -> None:
    """Under create_graph=True the gradients a Function's backward returns are cut from
    the graph: the first-order values are right, the second order misses them."""
    def make(original):
        def apply(self, *grads):
            result = original(self, *grads)
            if not torch.is_grad_enabled():
                return result
            if isinstance(result, tuple):
                return tuple(r.detach() if isinstance(r, torch.Tensor) else r for r in result)
            return result.detach() if isinstance(result, torch.Tensor) else result
        return apply
    p.wrap(BackwardCFunction, "apply", make)


def grad_outputs_swapped(p: Patches) -> None:
    """The engine hands a Function of several outputs the first two output gradients in
    swapped order (when they are tensors of one shape)."""
    def make(original):
        def apply(self, *grads):
            if (len(grads) >= 2 and all(isinstance(g, torch.Tensor) for g in grads[:2])
                    and grads[0].shape == grads[1].shape):
                grads = (grads[1], grads[0], *grads[2:])
            return original(self, *grads)
        return apply
    p.wrap(BackwardCFunction, "apply", make)


def keyword_args_bound_in_call_order(p: Patches) -> None:
    """Function.apply of a setup_context-style Function binds keyword arguments in the order the
    call gives them, after the positional ones, instead of by name (bind_default_args): one
    keyword argument, or several given in the forward's order, still land in place."""
    original = torch.autograd.Function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        if kwargs and _is_setup_context_defined(cls.setup_context):
            return original(cls, *args, *kwargs.values())
        return original(cls, *args, **kwargs)
    p.set(torch.autograd.Function, "apply", classmethod(apply))
