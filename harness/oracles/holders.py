"""What holds a tensor that the lifetime oracle finds alive once every reference was dropped.

Torch keeps some tensors on purpose or by known bugs (harness/known_issues/), and a Function
can keep them itself (a module-level list, a ctx in a reference cycle of its own). A known
issue explains a leak or a cycle only when the holder it names is the one found here, so the
holder is found by taking that very holder away and seeing which tensors die, one candidate
after another (`release`):

  1. A full collection under gc.DEBUG_SAVEALL keeps what a reference cycle held (the
     unreachable objects) in gc.garbage instead of freeing it. Among those objects, the
     references of Dynamo's SideEffects are cleared first, then those of an abandoned trace
     (its InstructionTranslators and OutputGraph), then those of every other Dynamo object,
     and the garbage is let go after each step: a tensor that dies at a step was held by that
     holder's cycle (`SIDE_EFFECTS`, `ABANDONED_TRACE`, `OTHER_DYNAMO`). A plain collection
     frees the rest: a tensor that dies then was held by a cycle of other objects
     (`OTHER_CYCLE`, e.g. a ctx that refers to itself).
  2. What is still alive is a leak. The compiled backward graphs' inputs placeholders whose
     meta['example_value'] is the real list of their first call's inputs (what
     ca-eager-backend-pins-inputs names) are emptied: a tensor that dies then was held there
     (`STOLEN_INPUTS`). Whatever survives that has no holder the harness can name.

Only unreachable objects and those stale example values are changed, nothing a program can
still use; the full collection is what the lifetime oracle runs anyway. It runs once per run,
and only where something is left alive.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable

import torch

#: the holders, as lifetime mismatches name them. A Function's real ctx that a finished trace's
#: AutogradFunctionContextVariable keeps, in a reference cycle of Dynamo's objects (its SideEffects
#: reach it through a SideEffectsProxyDict; ca-dynamo-function-ctx-cycle):
DYNAMO_CTX = "a Function's real ctx, kept by Dynamo's AutogradFunctionContextVariable in a reference cycle"
#: a cycle of an abandoned trace (a skipped frame's InstructionTranslator; dynamo-trace-state-cycle)
ABANDONED_TRACE = "Dynamo's abandoned trace (InstructionTranslator, OutputGraph), in a reference cycle"
#: a cycle through other Dynamo objects (no known issue names them)
OTHER_DYNAMO = "other Dynamo objects, in a reference cycle"
#: the inputs placeholder of a compiled backward graph (ca-eager-backend-pins-inputs)
STOLEN_INPUTS = "the inputs placeholder of a compiled backward graph (its meta['example_value'])"
#: a cycle no Dynamo object is part of (a ctx that refers to itself, say)
OTHER_CYCLE = "a reference cycle outside Dynamo"
#: alive after all of the above: nothing the harness can name holds it
UNKNOWN = "nothing the harness can name"
#: the holders that are torch's own objects (the others are the program's, or unknown)
TORCH_HOLDERS = (DYNAMO_CTX, ABANDONED_TRACE, OTHER_DYNAMO, STOLEN_INPUTS)

#: the classes (or their bases) of the Dynamo objects a trace's holders are made of
_CTX_TYPES = ("AutogradFunctionContextVariable", "FakeBackwardCFunction")
_TRACE_TYPES = ("InstructionTranslatorBase", "OutputGraph", "SubgraphTracer")


def release(roles: Iterable[str], alive: Callable[[str], bool]) -> tuple[list[str], list[str], dict[str, str]]:
    """Free what `roles` (tensors alive after every reference was dropped) are held by, as far as
    it is a reference cycle or a holder named above: (cycle roles, leaked roles, role -> holder).

    `alive(role)` tells whether a role's tensor is still alive. gc is off meanwhile."""
    roles = list(roles)
    holders: dict[str, str] = {}

    def died(holder: str) -> None:
        for role in roles:
            if role not in holders and not alive(role):
                holders[role] = holder

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        # torch's own holders are taken away first: a tensor that something else holds too
        # (the Function's own list or cycle) survives them, and is not theirs to explain
        stolen = _stolen_input_lists()
        for inputs in stolen:
            inputs.clear()
        del stolen
        died(STOLEN_INPUTS)  # a leak: it died with no collection
        garbage = _unreachable()
        for holder, which in _CYCLE_STEPS:
            if _clear_each(garbage, which):
                del garbage  # what only the cleared references kept alive dies now
                died(holder)
                garbage = _unreachable()
        del garbage
        gc.collect()
        died(OTHER_CYCLE)
        holders.update({r: UNKNOWN for r in roles if r not in holders})
        cycles = [r for r in roles if holders[r] not in (STOLEN_INPUTS, UNKNOWN)]
        leaks = [r for r in roles if holders[r] in (STOLEN_INPUTS, UNKNOWN)]
    finally:
        if was_enabled:
            gc.enable()
    return cycles, leaks, holders


def _ctx_holder(obj: object) -> bool:
    return _named(obj, _CTX_TYPES)


def _trace(obj: object) -> bool:
    return _named(obj, _TRACE_TYPES)


#: step 1's holders in its order, each with the garbage objects whose references it clears
_CYCLE_STEPS = ((DYNAMO_CTX, _ctx_holder), (ABANDONED_TRACE, _trace), (OTHER_DYNAMO, lambda o: _from_dynamo(o)))


def _clear_each(objects: list, which: Callable[[object], bool]) -> bool:
    """Clear the references of each object `which` picks; whether there was one."""
    picked = [o for o in objects if which(o)]
    for obj in picked:
        _clear(obj)
    return bool(picked)


def _unreachable() -> list:
    """The objects a full collection finds unreachable, kept alive in the returned list."""
    saved = len(gc.garbage)
    debug = gc.get_debug()
    gc.set_debug(debug | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
    finally:
        gc.set_debug(debug)
    found = gc.garbage[saved:]
    del gc.garbage[saved:]
    return found


def _named(obj: object, names: tuple[str, ...]) -> bool:
    return _from_dynamo(obj) and any(cls.__name__ in names for cls in type(obj).__mro__)


def _from_dynamo(obj: object) -> bool:
    return (type(obj).__module__ or "").startswith("torch._dynamo.")


def _clear(obj: object) -> None:
    """Drop every reference an (unreachable) object holds in its attributes or as a container."""
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        attributes.clear()
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__"):
                try:
                    object.__delattr__(obj, slot)
                except (AttributeError, TypeError):
                    pass
    for container in (dict, list, set):
        if isinstance(obj, container):
            container.clear(obj)


def _stolen_input_lists() -> list[list]:
    """The real input lists that compiled backward graphs' placeholders keep as example values
    ("steal_arg" placeholders, torch/_dynamo/variables/builder.py)."""
    found = []
    for obj in gc.get_objects():
        if type(obj) is torch.fx.Node and obj.op == "placeholder" and obj.meta.get("steal_arg"):
            value = obj.meta.get("example_value")
            if isinstance(value, list) and any(type(t) is torch.Tensor or type(t) is torch.nn.Parameter
                                               for t in value):
                found.append(value)
    return found


__all__ = ["ABANDONED_TRACE", "DYNAMO_CTX", "OTHER_CYCLE", "OTHER_DYNAMO", "STOLEN_INPUTS", "TORCH_HOLDERS", "UNKNOWN",
           "release"]
