"""What holds a tensor that the lifetime oracle finds alive once every reference was dropped.

Torch keeps some tensors by known bugs (harness/known_issues/), and a Function can keep them
itself (in a module-level list, or through a ctx in a reference cycle of its own). A known issue
explains a leak or a cycle only when the torch object it names is what held the tensor, so
`release` takes torch's candidate holders away, one after another, and sees which tensors die:
a tensor dies with the last of its holders, so the one it dies with is named (`Holders.freed_by`),
and where it survives torch's holders it is the program's (or torch's unnamed) to explain:

  1. A full collection under gc.DEBUG_SAVEALL keeps the unreachable objects (what reference
     cycles hold) in gc.garbage instead of freeing them. Among them, the references of one kind
     of torch object after another are cleared, and the garbage let go (which frees only what no
     other cycle holds): `DYNAMO_CTX` (Dynamo's AutogradFunctionContextVariable and
     FakeBackwardCFunction, which keep a Function's real ctx), `APPLY_TEMPLATE` (the class
     autograd_function_apply makes per call, whose closure keeps the saved values),
     `TRACE_STATE` (an InstructionTranslator or OutputGraph), `OTHER_DYNAMO` (any other
     Dynamo object).
  2. The inputs placeholders of compiled backward graphs whose meta['example_value'] is the real
     list of their first call's inputs are emptied (`STOLEN_INPUTS`, a leak).
  3. A plain collection frees the rest of the cycles (`OTHER_CYCLE`: a ctx that refers to itself,
     say); what is still alive is held by something the harness cannot name (`UNKNOWN`).

A tensor two torch objects hold dies with the second one only, so before each is taken away the
tensors it reaches are noted too (`Holders.seen`: a ctx's autograd graph down to the leaves its
AccumulateGrad nodes keep; a placeholder's list): a known issue is witnessed by either, and
explains only what died with its holder.

Only unreachable objects and stale example values are changed, nothing a program can still use,
and the full collection is what the lifetime oracle ran anyway. It runs once per run, and only
where something was left alive.
"""

from __future__ import annotations

import gc
import types
import weakref
from collections.abc import Callable, Iterable

import torch

from harness.run import Holders

#: The holders, as lifetime mismatches name them. A Function's real ctx that Dynamo keeps (in
#: the AutogradFunctionContextVariable it traced the backward with, or a FakeBackwardCFunction),
#: in a reference cycle of Dynamo's objects that a finished trace's SideEffects reach
#: (ca-dynamo-function-ctx-cycle, dynamo-trace-state-cycle)
DYNAMO_CTX = "a Function's real ctx, kept by Dynamo's AutogradFunctionContextVariable in a reference cycle"
#: the saved values that autograd_function_apply keeps in the closure of the Function class it
#: makes per call (a class is always in a reference cycle; dynamo-eager-apply-template-cycle)
APPLY_TEMPLATE = "the saved_values of autograd_function_apply's per-call ApplyTemplate class, in a reference cycle"
#: a cycle of a trace's state: an abandoned trace (a skipped frame's InstructionTranslator), or what
#: a trace leaves behind, its SideEffects and VariableTrackers (a LazyVariableTracker's cache keeps
#: the real input it stands for); dynamo-trace-state-cycle
TRACE_STATE = ("Dynamo's trace state (InstructionTranslator, OutputGraph, SideEffects, VariableTrackers), "
               "in a reference cycle")
#: a cycle through other Dynamo objects, none of a trace's state (no known issue names them)
OTHER_DYNAMO = "other Dynamo objects, in a reference cycle"
#: the inputs placeholder of a compiled backward graph (ca-eager-backend-pins-inputs)
STOLEN_INPUTS = "the inputs placeholder of a compiled backward graph (its meta['example_value'])"
#: a cycle that none of the above is part of (a ctx that refers to itself, say)
OTHER_CYCLE = "a reference cycle of no torch object named here"
#: alive after all of the above
UNKNOWN = "nothing the harness can name"
#: the holders that are torch's own objects (the others are the program's, or unknown)
TORCH_HOLDERS = (DYNAMO_CTX, APPLY_TEMPLATE, TRACE_STATE, OTHER_DYNAMO, STOLEN_INPUTS)
#: what `release` counts as a leak (alive without any reference cycle); the rest are cycles
LEAK_HOLDERS = (STOLEN_INPUTS, UNKNOWN)


def release(roles: Iterable[str], alive: Callable[[str], bool], addresses: dict[str, int]
            ) -> tuple[list[str], list[str], Holders]:
    """Free what holds `roles` (tensors alive after every reference was dropped), as far as a
    holder named above or a reference cycle does: (cycle roles, leaked roles, their holders).

    `alive(role)`: whether the role's tensor is still alive; `addresses`: role -> its TensorImpl's
    address (Tensor._cdata), by which a holder's tensors are recognised. gc is off meanwhile."""
    roles = [r for r in roles if alive(r)]
    found = Holders()
    by_address = {addresses[r]: r for r in roles if r in addresses}

    def died(holder: str) -> None:
        found.freed_by.update({r: holder for r in roles if r not in found.freed_by and not alive(r)})

    def reached(holder: str, tensors: Iterable[torch.Tensor]) -> None:
        for address in _reachable_addresses(tensors):
            if address in by_address:
                found.seen.setdefault(by_address[address], set()).add(holder)

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        garbage = _unreachable()  # the one full collection, unless something outlives torch's holders
        for holder, which, clear in _CYCLE_STEPS:
            picked = [o for o in garbage if which(o)] if any(alive(r) for r in roles) else []
            if not picked:
                continue
            if holder == DYNAMO_CTX:
                reached(holder, _ctxs_of(picked))
            for obj in picked:
                clear(obj)
            del picked, obj  # (picked was not empty)
            garbage = _still_held(garbage)  # (the rest is freed now: what only they held dies)
            died(holder)
        if any(alive(r) for r in roles):
            stolen = _stolen_input_lists()
            reached(STOLEN_INPUTS, (t for inputs in stolen for t in inputs))
            for inputs in stolen:
                inputs.clear()
            del stolen
            died(STOLEN_INPUTS)
        _clear_all(garbage)  # what a plain collection frees: the other cycles
        del garbage
        died(OTHER_CYCLE)
        if any(alive(r) for r in roles):  # (a cycle that clearing cannot break: a class, say)
            gc.collect()
            died(OTHER_CYCLE)
    finally:
        if was_enabled:
            gc.enable()
    found.freed_by.update({r: UNKNOWN for r in roles if r not in found.freed_by})
    leaks = [r for r in roles if found.freed_by[r] in LEAK_HOLDERS]
    return [r for r in roles if r not in leaks], leaks, found


def _stolen_input_lists() -> list[list]:
    """The real input lists that compiled backward graphs keep as their inputs placeholder's
    example value ("steal_arg" placeholders, torch/_dynamo/variables/builder.py)."""
    found = []
    for obj in gc.get_objects():
        if type(obj) is torch.fx.Node and obj.op == "placeholder" and obj.meta.get("steal_arg"):
            value = obj.meta.get("example_value")
            if type(value) is list and any(type(t) in (torch.Tensor, torch.nn.Parameter) for t in value):
                found.append(value)
    return found


def _still_held(garbage: list) -> list:
    """The unreachable objects that letting go of `garbage` leaves alive: those in a reference
    cycle among them, and what those reach (a full collection's own view: gc.get_referents, by
    the objects' tp_traverse). Computed here rather than by another full collection."""
    index = {id(o): i for i, o in enumerate(garbage)}
    edges = [[j for r in gc.get_referents(o) if (j := index.get(id(r))) is not None] for o in garbage]
    return [o for o, held in zip(garbage, _held_by_cycles(edges)) if held]


def _held_by_cycles(edges: list[list[int]]) -> list[bool]:
    """Per node of this graph, whether it is on a cycle or reached from one: what reference
    counting alone never frees. Found as reference counting frees the rest: a node no other node
    refers to goes, and so do the nodes only it referred to, and so on; what is left has a
    referrer on a cycle. Linear in the edges, with no search for the cycles themselves (the
    garbage a Dynamo trace leaves is 15,000-30,000 objects)."""
    referrers = [0] * len(edges)
    for targets in edges:
        for j in targets:
            referrers[j] += 1
    freed = [i for i, n in enumerate(referrers) if n == 0]
    while freed:
        for j in edges[freed.pop()]:
            referrers[j] -= 1
            if referrers[j] == 0:
                freed.append(j)
    return [n > 0 for n in referrers]


def _ctxs_of(holders: list) -> list:
    """The real ctx objects (autograd nodes) that Dynamo's ctx holders keep."""
    ctxs = []
    for holder in holders:
        for value in vars(holder).values() if type(getattr(holder, "__dict__", None)) is dict else ():
            if issubclass(type(value), torch.autograd.function.BackwardCFunction):
                ctxs.append(value)
    return ctxs


def _reachable_addresses(starts: Iterable) -> set[int]:
    """TensorImpl addresses of the given tensors and of the leaves their autograd graphs keep
    (AccumulateGrad nodes' variables), walking from tensors' grad_fn and from nodes."""
    addresses: set[int] = set()
    nodes, seen = [], set()
    for start in starts:
        if isinstance(start, torch.Tensor):
            addresses.add(start._cdata)
            start = start.grad_fn
        if start is not None:
            nodes.append(start)
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            addresses.add(variable._cdata)
        nodes += [n for n, _ in getattr(node, "next_functions", ()) if n is not None]
    return addresses


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


def _from_dynamo(obj: object) -> bool:
    return (type(obj).__module__ or "").startswith("torch._dynamo.")


def _of_dynamo_class(*names: str) -> Callable[[object], bool]:
    return lambda obj: _from_dynamo(obj) and any(cls.__name__ in names for cls in type(obj).__mro__)


def _clear(obj: object) -> None:
    """Drop the references an (unreachable) object holds in its attributes, as a container, or
    as a cell or a frame. A class (in a cycle with its own __mro__) is left to the collector."""
    kind = type(obj)
    if kind in (weakref.ProxyType, weakref.CallableProxyType) or issubclass(kind, type):
        return
    try:
        attributes = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        attributes = None
    if type(attributes) is dict:
        attributes.clear()
    for cls in kind.__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__"):
                try:
                    object.__delattr__(obj, slot)
                except (AttributeError, TypeError):
                    pass
    for container in (dict, list, set):
        if issubclass(kind, container):
            container.clear(obj)
    if kind is types.CellType:
        try:
            del obj.cell_contents
        except ValueError:  # (an empty cell)
            pass
    elif kind is types.FrameType:
        try:
            obj.clear()
        except RuntimeError:  # (still executing)
            pass


def _clear_all(objects: list) -> None:
    for obj in objects:
        _clear(obj)


#: the modules of the objects a trace builds and keeps while it runs (its translator, graph,
#: side effects, variable trackers and their sources)
_TRACE_STATE_MODULES = ("torch._dynamo.symbolic_convert", "torch._dynamo.output_graph", "torch._dynamo.side_effects",
                        "torch._dynamo.variables.", "torch._dynamo.source", "torch._dynamo.codegen",
                        "torch._dynamo.bytecode_transformation")


def _of_trace_state(obj: object) -> bool:
    """An object of a trace's state, or a frame of Dynamo's own code (the exception a trace
    raised at a graph break keeps its traceback, whose frames keep the translator and what the
    user's frames held)."""
    if type(obj) is types.FrameType:
        return "/torch/_dynamo/" in obj.f_code.co_filename.replace("\\", "/")
    return (type(obj).__module__ or "").startswith(_TRACE_STATE_MODULES)


def _apply_template(obj: object) -> bool:
    """A Function class that autograd_function_apply made (torch/_functorch/autograd_function.py)."""
    return (issubclass(type(obj), type) and getattr(obj, "__module__", None) == "torch._functorch.autograd_function"
            and obj.__qualname__.endswith("<locals>.ApplyTemplate"))


def _clear_saved_values(cls: object) -> None:
    """Empty the `saved_values` closure cell of the class's methods."""
    for method in vars(cls).values():
        function = getattr(method, "__func__", method)
        code, closure = getattr(function, "__code__", None), getattr(function, "__closure__", None)
        if code is not None and closure and "saved_values" in code.co_freevars:
            closure[code.co_freevars.index("saved_values")].cell_contents = None


#: step 2's holders in its order, each with which unreachable objects it picks and how it clears them
_CYCLE_STEPS: tuple[tuple[str, Callable[[object], bool], Callable[[object], None]], ...] = (
    (DYNAMO_CTX, _of_dynamo_class("AutogradFunctionContextVariable", "FakeBackwardCFunction"), _clear),
    (APPLY_TEMPLATE, _apply_template, _clear_saved_values),
    (TRACE_STATE, _of_trace_state, _clear),
    (OTHER_DYNAMO, _from_dynamo, _clear),
)

__all__ = [
    "TRACE_STATE",
    "APPLY_TEMPLATE",
    "DYNAMO_CTX",
    "LEAK_HOLDERS",
    "OTHER_CYCLE",
    "OTHER_DYNAMO",
    "STOLEN_INPUTS",
    "TORCH_HOLDERS",
    "UNKNOWN",
    "Holders",
    "release",
]
