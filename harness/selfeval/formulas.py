"""Faults in the generated Functions' formulas: what a user's backward or jvp gets wrong.

Each is installed in both code styles: generic Functions by replacing functions of
harness.generic (the derivative table `_derivative`, `_backward`, `_jvp`, `_setup`), plain
ones by changing the source harness.plain writes, as visible lines marked
`# self-test fault <name>` (so a reproducer shows the bug it runs).
"""

from __future__ import annotations

import contextvars
from typing import Any

import torch

from harness import generic, plain
from harness.selfeval._patching import Patches

SCALE = 1.5


def mark(name: str) -> str:
    return f"  # self-test fault {name}"


# --- wrong_backward: the first gradient a backward computes is 1.5 times too large -------------


def _contributing_slots(spec: Any, grads: tuple) -> set[int]:
    """The slots generic._backward accumulates a gradient for, given the incoming grads."""
    slots: set[int] = set()
    for out, g in zip(spec.outputs, grads):
        if g is None or out.kind == "const" or out.non_differentiable:
            continue
        if out.kind == "compute":
            slots.update(t.slot for t in out.terms)
        else:
            slots.add(out.slot)
    return slots


def wrong_backward(p: Patches) -> None:
    def make(original):
        def _backward(cls, ctx, saved_tensors, *grads):
            result = list(original(cls, ctx, saved_tensors, *grads))
            slots = _contributing_slots(cls.spec, grads)
            if slots and min(slots) < len(result) and result[min(slots)] is not None:
                result[min(slots)] = result[min(slots)] * SCALE
            return tuple(result)
        return _backward
    p.wrap(generic, "_backward", make)

    def make_plain(original):
        def _grads_returned(self, c, state):
            touched = [slot for slot, v in state.items() if v != "none"]
            if touched:
                s = min(touched)
                guard = f"if gx{s} is not None: " if state[s] == "maybe" else ""
                c.add(f"{guard}gx{s} = gx{s} * {SCALE}{mark('wrong_backward')}")
            original(self, c, state)
        return _grads_returned
    p.wrap(plain._Writer, "_grads_returned", make_plain)


# --- wrong_jvp: every computed tangent is 1.5 times too large -------------------------------


def wrong_jvp(p: Patches) -> None:
    def make(original):
        def _jvp(cls, ctx, *tangents):
            out = original(cls, ctx, *tangents)
            many = cls.spec.tuple_output
            scaled = [r * SCALE if isinstance(r, torch.Tensor) and o.kind == "compute" else r
                      for r, o in zip(out if many else (out,), cls.spec.outputs)]
            return tuple(scaled) if many else scaled[0]
        return _jvp
    p.wrap(generic, "_jvp", make)

    def make_plain(original):
        def jvp(self, c):
            original(self, c)
            ret = c.lines.pop()  # the return line; the scaling goes just before it
            indent = ret[:len(ret) - len(ret.lstrip())]
            for k, out in enumerate(self.spec.outputs):
                if out.kind == "compute" and not out.non_differentiable:
                    c.lines.append(f"{indent}r{k} = r{k} * {SCALE}{mark('wrong_jvp')}")
            c.lines.append(ret)
        return jvp
    p.wrap(plain._Writer, "jvp", make_plain)


# --- the derivative table -----------------------------------------------------------------------

#: set while a backward formula is being made (forward saving intermediates, or backward)
_FOR_BACKWARD: contextvars.ContextVar[bool] = contextvars.ContextVar("for_backward", default=False)


def _flagged(original):
    def flagged(*args, **kwargs):
        token = _FOR_BACKWARD.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            _FOR_BACKWARD.reset(token)
    return flagged


def _table_entry(p: Patches, op: str, value, source, backward_only: bool) -> None:
    """Replace op's derivative: `value(x)` in generic, `source(x)` in plain (parenthesised)."""
    def make(original):
        def _derivative(name, x):
            if name == op and (not backward_only or _FOR_BACKWARD.get()):
                return value(x)
            return original(name, x)
        return _derivative
    p.wrap(generic, "_derivative", make)

    def make_plain(original):
        def _derivative(name, x):
            if name == op and (not backward_only or _FOR_BACKWARD.get()):
                return source(x)
            return original(name, x)
        return _derivative
    p.wrap(plain, "_derivative", make_plain)
    if backward_only:
        p.wrap(generic, "_setup", _flagged)  # saves the intermediates backward reads
        p.wrap(generic, "_backward", _flagged)
        p.wrap(plain._Writer, "setup", _flagged)
        p.wrap(plain._Writer, "backward", _flagged)


def sin_backward_term_dropped(p: Patches) -> None:
    _table_entry(p, "sin", torch.zeros_like, lambda x: f"torch.zeros_like({x})", backward_only=True)


def tanh_derivative_sign(p: Patches) -> None:
    _table_entry(p, "tanh", lambda x: 1 + torch.tanh(x) ** 2, lambda x: f"(1 + torch.tanh({x}) ** 2)",
                 backward_only=False)


def square_derivative_halved(p: Patches) -> None:
    _table_entry(p, "square", lambda x: x, lambda x: f"({x})", backward_only=False)
