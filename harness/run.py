"""Run a built graph with one way of applying its Functions and record what happened.

The same runner serves every path and the math oracle: only the `Applier` (how one
Function node is applied) differs, so hooks, losses and backward modes are identical.

What watches a run from outside (the lifetime oracle) is an `Observer`: the runner announces
each point of the run to the observers registered for it, the way pytest calls its hooks on
each plug-in, and knows nothing of what they do there. Whoever sets up the runs registers
them (`observing`), so a path runs the same code whether anything watches it or not.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.autograd.forward_ad as fwAD
import torch.utils.checkpoint

from harness import devices, generic, plain
from harness.build import SECOND_ORDER_WEIGHTS, Applier, BuiltGraph
from harness.spec import Arg, parameter_name

#: compiles a function of the leaf values that applies the whole graph (e.g. torch.compile)
ForwardCompiler = Callable[[Callable[..., tuple]], Callable[..., tuple]]

# in the order they run: forward AD comes last, so a forward-AD failure still lets the
# backward checkpoints be compared
CHECKPOINTS = ("forward", "backward", "double_backward", "forward_ad")
#: the roles that are gradients (RunResult): a leaf's .grad, autograd.grad's, a second backward's,
#: a double backward's, a retained one
GRADIENT_ROLES = ("grad:", "grad2:", "agrad:", "dgrad:", "retained:")


@dataclass
class Holders:
    """What held the tensors an observer found alive once every reference was dropped (the
    lifetime oracle's search, harness/oracles/holders.py, names the holders)."""

    #: role -> the holder whose removal freed the tensor
    freed_by: dict[str, str] = field(default_factory=dict)
    #: role -> the torch holders seen reaching the tensor before they were taken away
    seen: dict[str, set[str]] = field(default_factory=dict)

    def named(self) -> set[str]:
        """Every holder found, freeing or seen."""
        return set(self.freed_by.values()).union(*self.seen.values())


@dataclass
class RunResult:
    """Raw observations of one run, grouped by checkpoint, then by role.

    Roles: "out:f0.1" (a Function output), "grad:x0" (.grad of a leaf), "agrad:x0"
    (autograd.grad), "grad2:x0" (.grad after a second, retained backward), "dgrad:x0"
    (double backward), "retained:f0.1", "tangent:f0.1", "hook3" (what hook 3 saw).
    """

    path: str
    status: str = "ok"  # ok | unsupported | error
    reason: str = ""  # unsupported: why
    error: BaseException | None = None
    error_checkpoint: str = ""
    note: str = ""  # how the path got this result, when not the plain way (e.g. a fallback)
    #: under torch.compile: how each Function ran (harness.paths.tracing.TraceRecorder.record)
    trace: dict[str, Any] | None = None
    tensors: dict[str, dict[str, torch.Tensor | None]] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what held the tensors the lifetime oracle found alive once every reference was dropped
    #: (harness/oracles/holders.py; compared with nothing)
    holders: Holders = field(default_factory=Holders)

    def put(self, checkpoint: str, role: str, value: Any) -> None:
        if value is None or isinstance(value, torch.Tensor):
            self.tensors.setdefault(checkpoint, {})[role] = None if value is None else value.detach()
        else:
            self.values.setdefault(checkpoint, {})[role] = value

    def describe_error(self) -> str:
        return f"{type(self.error).__name__} at {self.error_checkpoint}: {self.error}"


class RunStopped(Exception):
    """A block of `recording_errors` raised: the error is in the result, and the run ends."""


@contextlib.contextmanager
def recording_errors(result: RunResult, checkpoint: str) -> Iterator[None]:
    """Errors raised in this block by torch or by the Functions are observations of the path
    under test: they go into `result` as raised at `checkpoint` (one of CHECKPOINTS), and
    RunStopped ends the run. The runner's own bookkeeping stays outside these blocks."""
    try:
        yield
    except (RuntimeError, TypeError, ValueError, AssertionError, IndexError, NotImplementedError,
            AttributeError) as e:
        if isinstance(e, AttributeError) and not _raised_in_the_graph_forward(e):
            raise  # the harness's own code: a bug of the harness
        result.status, result.error, result.error_checkpoint = "error", e, checkpoint
        raise RunStopped from e


def _raised_in_the_graph_forward(e: BaseException) -> bool:
    """`e` was raised in the straight-line forward (harness/plain.py graph_forward_source) itself:
    the program a compiled path compiles, whose lines eager runs without error (a Function's
    output that came back no tensor, say, fails there at `.clone()`): an observation of the path."""
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(plain.GRAPH_FORWARD_FILE)


class Observer:
    """Watches one run of run_graph. The runner calls each method at its point of the run; this
    class ignores every call, and an observer overrides the ones it needs.

    The checkpoints announced, in run order: "start" (leaves made), "apply:f<n>" (after each
    Function is applied, when the forward runs node by node: not under tracing or a compiled
    forward), "forward", "backward" (and "backward2" after a retained second backward),
    "drop_outputs" (the runner dropped every non-leaf value, the loss and the outputs; leaves
    kept) and "drop_all" (it dropped everything). A run that stops at an error announces no more.
    """

    #: keep Python's cyclic gc off for the whole run, its on_run_end included, so that what only
    #: a reference cycle keeps alive is still alive when the observer looks
    pauses_gc = False

    def on_run_start(self, built: BuiltGraph, result: RunResult) -> None:
        """Before the leaves are made; `result` is this run's, filled in as it goes."""

    def on_checkpoint(self, name: str, held: dict[str, torch.Tensor]) -> None:
        """At a checkpoint (see the class doc): `held` is every tensor the runner holds now, by role."""

    def on_saved(self, index: int, tensors: Sequence[torch.Tensor]) -> None:
        """Generated Function `index` saved these intermediates for its backward (announced
        only where the forward runs as written: not under a compiled or checkpointed forward)."""

    def on_run_end(self, result: RunResult) -> None:
        """After the run: the runner holds nothing of it any more and gc is as it was before."""


#: makes the observer of one run
ObserverFactory = Callable[[], Observer]

_OBSERVERS: contextvars.ContextVar[tuple[ObserverFactory, ...]] = contextvars.ContextVar("observers", default=())


@contextlib.contextmanager
def observing(*factories: ObserverFactory) -> Iterator[None]:
    """Within this block, each run_graph not told otherwise is watched by a fresh observer from
    each of `factories`, and by no other."""
    token = _OBSERVERS.set(tuple(factories))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def registered_observers() -> tuple[ObserverFactory, ...]:
    """The observer factories `observing` registered here."""
    return _OBSERVERS.get()


def _announce(observers: Sequence[Observer], name: str, held: dict[str, torch.Tensor]) -> None:
    for observer in observers:
        observer.on_checkpoint(name, held)


def function_output_refs(built: BuiltGraph) -> list[str]:
    return [r for r in built.spec.value_refs() if r.startswith("f")]


def forward(built: BuiltGraph, applier: Applier, leaves: Sequence[torch.Tensor],
            consts: dict[str, Any] | None = None,
            after_apply: Callable[[int, list, dict[str, torch.Tensor]], None] | None = None,
            ) -> dict[str, torch.Tensor]:
    """Apply every Function in order; returns every tensor value by ref."""
    spec = built.spec
    values = leaf_values(built, leaves)
    for n, (fn, cls) in enumerate(zip(spec.functions, built.functions)):
        args = [_argument(a, values) for a in fn.args]
        with torch.no_grad() if fn.grad_mode == "no_grad" else contextlib.nullcontext():
            if fn.keyword_args and applier is apply_eager:
                # torch's apply binds them by name itself. Decided here, from the spec in this
                # frame: Dynamo cannot read a Function class's attributes (a graph break)
                positional, keywords = fn.keyword_split(args)
                out = cls.apply(*positional, **keywords)
                # (a stale local would keep this Function's arguments alive through the next
                # applies, which the other appliers do not: the lifetimes compared would differ)
                del positional, keywords
            else:
                out = applier(n, cls, args)
        outs = out if fn.tuple_output else (out,)
        if not isinstance(outs, tuple) or len(outs) != len(fn.outputs):
            raise RuntimeError(f"Function {n} returned {type(out).__name__} of the wrong arity")
        _store_outputs(built, n, fn.unpack_outputs(out), values, consts)
        if after_apply is not None:
            after_apply(n, args, values)
    return values


def _store_outputs(built: BuiltGraph, n: int, outs: Sequence[Any], values: dict[str, torch.Tensor],
                   consts: dict[str, Any] | None) -> None:
    """Function n's outputs into `values` (tensors) and `consts` (the others), each checked
    against its kind in the spec."""
    for k, o in enumerate(outs):
        kind = built.spec.functions[n].outputs[k].kind
        if isinstance(o, torch.Tensor) != (kind != "const"):
            # an observation of the path (the runner must not fail later on a missing value)
            raise RuntimeError(f"Function {n} returned {type(o).__name__} for its output {k}, "
                               f"a {'constant' if kind == 'const' else 'tensor'} in its spec")
        if isinstance(o, torch.Tensor):
            values[f"f{n}.{k}"] = o
        elif consts is not None:
            consts[f"f{n}.{k}"] = o


def apply_eager(n: int, cls: type, args: Sequence[Any]) -> Any:
    """The installed torch's own Function.apply (the `eager` path's Applier). Arguments by slot:
    `forward` passes a spec's `keyword_args` by keyword itself (FunctionSpec.keyword_split)."""
    return cls.apply(*args)


def keyword_split(cls: type, args: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """How a Function's `apply` is called with `args`: FunctionSpec.keyword_split of the spec the
    class was built from (all positional for a class without one: a user's own Function)."""
    spec = getattr(cls, "spec", None)
    return spec.keyword_split(args) if spec is not None else (tuple(args), {})


def positional(cls: type, args: Sequence[Any], keywords: dict[str, Any]) -> tuple[Any, ...]:
    """The arguments of a call `apply(*args, **keywords)` back in their slots, as keyword_split
    makes such calls: the keywords name the parameters after the positional ones, in any order,
    and a parameter left out takes its default (FunctionSpec.keyword_default). An Applier takes
    its arguments by slot."""
    spec = getattr(cls, "spec", None)
    if spec is None:
        if keywords:
            raise TypeError(f"apply() got keyword arguments {sorted(keywords)} for a class without a spec")
        return tuple(args)
    defaults = spec.parameter_defaults()
    rest = range(len(args), len(spec.args))
    missing = [parameter_name(i) for i in rest if parameter_name(i) not in keywords and i not in defaults]
    unknown = sorted(set(keywords) - {parameter_name(i) for i in rest})
    if missing or unknown:
        raise TypeError(f"apply() got keyword arguments {sorted(keywords)}: missing {missing}, unknown {unknown}")
    return (*args, *(keywords[parameter_name(i)] if parameter_name(i) in keywords else defaults[i] for i in rest))


class _AppliedBy:
    """A Function class as the straight-line forward sees it when another Applier than
    apply_eager applies it (a native path under torch.jit.trace): `.apply` goes through it."""

    def __init__(self, applier: Applier, n: int, cls: type) -> None:
        self.applier, self.n, self.cls = applier, n, cls

    def apply(self, *args: Any, **keywords: Any) -> Any:
        return self.applier(self.n, self.cls, positional(self.cls, args, keywords))


def straight_forward(built: BuiltGraph, applier: Applier) -> Callable[..., tuple]:
    """The graph's forward as one generated straight-line function of the leaf values
    (harness.plain.graph_forward_source), returning every Function output in spec order."""
    functions = [cls if applier is apply_eager else _AppliedBy(applier, n, cls)
                 for n, cls in enumerate(built.functions)]
    return plain.graph_forward(plain.graph_forward_source(built.spec), functions)


def named_outputs(built: BuiltGraph, outs: Sequence[Any], values: dict[str, torch.Tensor],
                  consts: dict[str, Any]) -> None:
    """The straight-line forward's flat outputs into `values` and `consts`, by ref."""
    at = 0
    for n, fn in enumerate(built.spec.functions):
        _store_outputs(built, n, outs[at:at + len(fn.outputs)], values, consts)
        at += len(fn.outputs)


def _argument(arg: Arg, values: dict[str, torch.Tensor]) -> Any:
    """What a Function receives for `arg` (see harness.spec.Arg)."""
    if arg.ref is None:
        return arg.const
    if arg.listed:
        return [values[arg.ref]]
    if not arg.clone:
        return values[arg.ref]
    copy = values[arg.ref].clone()
    return copy.view_as(copy) if arg.view else copy


def leaf_values(built: BuiltGraph, leaves: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Leaves by ref, and the views "x<i>[<j>]" of leaves that have views."""
    values: dict[str, torch.Tensor] = {}
    for i, leaf in enumerate(built.spec.leaves):
        if leaf.views:
            values.update({f"x{i}[{j}]": leaves[i][j] for j in range(leaf.views)})
        else:
            values[f"x{i}"] = leaves[i]
    return values


def _jit_traced(whole_forward: Callable[..., tuple]) -> Callable[..., tuple]:
    """A ForwardCompiler: the forward recorded by torch.jit.trace on the first call's inputs,
    then run from the trace (`_compiled_forward` passes views of leaves in, as it does for
    torch.compile, so hooks on a view see the tensor the trace used)."""
    def traced(*xs: torch.Tensor) -> tuple:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings about constants are expected here
            return torch.jit.trace(whole_forward, xs, check_trace=False, strict=False)(*xs)
    return traced


def _compiled_forward(built: BuiltGraph, applier: Applier, leaves: Sequence[torch.Tensor],
                      consts: dict[str, Any], compile_forward: ForwardCompiler) -> dict[str, torch.Tensor]:
    """The whole forward as one function of the leaf values, compiled by `compile_forward`:
    the straight-line function (spec.forward_code "straight") or the interpreter loop.

    Views of leaves are made here, outside the compiled function, and passed in: hooks on
    a view must see the very tensor the graph used, as on every other path."""
    inputs = leaf_values(built, leaves)
    values = dict(inputs)
    if built.spec.forward_code == "straight":
        named_outputs(built, compile_forward(straight_forward(built, applier))(*inputs.values()), values, consts)
        return values
    refs = function_output_refs(built)

    def whole_forward(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        given = iter(xs)  # regrouped as `forward` reads leaves: a viewed leaf as its views
        grouped = [tuple(next(given) for _ in range(leaf.views)) if leaf.views else next(given)
                   for leaf in built.spec.leaves]
        values = forward(built, applier, grouped, consts)  # type: ignore[arg-type]
        return tuple(values[r] for r in refs)

    values.update(zip(refs, compile_forward(whole_forward)(*inputs.values())))
    return values


def _checkpointed(compile_forward: ForwardCompiler | None) -> ForwardCompiler:
    """The whole forward inside one non-reentrant `torch.utils.checkpoint` region (the kind
    torch recommends), compiled by `compile_forward` where a path compiles it."""
    def compiler(whole_forward: Callable[..., tuple]) -> Callable[..., tuple]:
        def region(*xs: torch.Tensor) -> tuple:
            return torch.utils.checkpoint.checkpoint(whole_forward, *xs, use_reentrant=False)
        return region if compile_forward is None else compile_forward(region)
    return compiler


def _install_hooks(built: BuiltGraph, values: dict[str, torch.Tensor], leaves: Sequence[torch.Tensor],
                   result: RunResult) -> Callable[[], None]:
    """Register the spec's hooks; returns a function that records what they saw."""
    seen: dict[str, list[Any]] = {}
    retained: list[str] = []
    for h, hook in enumerate(built.spec.hooks):
        key = f"hook{h}"
        seen[key] = []
        if hook.kind == "saved_tensors":
            continue
        target = leaves[int(hook.target[1:])] if hook.kind == "post_accumulate" else values[hook.target]
        if not target.requires_grad:
            seen[key].append("skipped: does not require grad")
            continue
        if hook.kind == "tensor":
            target.register_hook(lambda g, rec=seen[key]: (rec.append("fired"), None if g is None else g * 2)[1])
        elif hook.kind == "retain_grad":
            target.retain_grad()
            retained.append(hook.target)
        elif hook.kind in ("pre", "post"):
            node = target.grad_fn
            if node is None:
                seen[key].append("skipped: leaf")
            elif hook.kind == "pre":
                node.register_prehook(lambda gO, rec=seen[key]: rec.append("fired"))
            else:
                node.register_hook(lambda gI, gO, rec=seen[key]: rec.append("fired"))
        elif hook.kind == "post_accumulate":
            target.register_post_accumulate_grad_hook(
                lambda p, rec=seen[key]: rec.append("grad None" if p.grad is None else p.grad.detach().clone()))

    def record(checkpoint: str) -> None:
        for key, events in seen.items():
            tensors = [e for e in events if isinstance(e, torch.Tensor)]
            for i, t in enumerate(tensors):
                result.put(checkpoint, f"{key}.grad{i}", t)
            result.put(checkpoint, key, tuple(e for e in events if isinstance(e, str)))
        for ref in retained:
            result.put(checkpoint, f"retained:{ref}", values[ref].grad)
    return record


@contextlib.contextmanager
def _saved_tensor_hooks(built: BuiltGraph) -> Iterator[None]:
    if any(h.kind == "saved_tensors" for h in built.spec.hooks):
        # pack into a list and back: exercises the hook path without changing values.
        # Detach, as torch documents: a packed graph output would otherwise keep its own
        # grad_fn alive in a cycle that gc cannot see (pytorch/pytorch#189025).
        with torch.autograd.graph.saved_tensors_hooks(lambda t: [t.detach()], lambda p: p[0]):
            yield
    else:
        yield


def run_graph(built: BuiltGraph, applier: Applier, path: str,
              around: Callable[[], contextlib.AbstractContextManager] | None = None,
              observers: Sequence[ObserverFactory] | None = None,
              compile_forward: ForwardCompiler | None = None) -> RunResult:
    """Forward, hooks, backward (per the spec's mode) and forward AD; see RunResult.

    `around` (optional) wraps the backward phase, e.g. in compiled autograd.
    `compile_forward` (optional) compiles the whole forward as one function, e.g. with
    torch.compile (it then replaces tracing).
    `observers` make the observers that watch this run (see Observer); by default those
    registered by `observing()`, so paths need not pass them through.
    """
    if built.spec.checkpoint:
        compile_forward = _checkpointed(compile_forward)
    result = RunResult(path)
    watching = [make() for make in (registered_observers() if observers is None else observers)]
    gc_was_enabled = gc.isenabled()
    if any(o.pauses_gc for o in watching):
        gc.disable()
    if watching and compile_forward is None:
        # (Under checkpoint, saved tensors are dropped after the forward and recomputed at
        # backward by design, so the saved-tensor rules do not apply either.)
        # Under torch.compile the generated forward is traced, not run: an observer would
        # see fake tensors, and Dynamo graph-breaks on it ("Attempted to call function
        # marked as skipped"); what AOT Autograd saves at run time is its own choice.
        generic.SAVED_OBSERVER = functools.partial(_announce_saved, watching)
    for observer in watching:
        observer.on_run_start(built, result)
    try:
        try:
            with devices.exact_float_math(built.device):
                _run(built, applier, result, around or contextlib.nullcontext, watching, compile_forward)
        except RunStopped:
            pass
        finally:
            devices.synchronize(built.device)  # every kernel done before a result is read
            _record_strides(result)
            generic.SAVED_OBSERVER = None
        # still with gc paused: an automatic collection here would free what only a reference
        # cycle keeps alive before the observers' release checks could find what holds it
        for observer in watching:
            observer.on_run_end(result)
    finally:
        if gc_was_enabled:
            gc.enable()
    return result


def _announce_saved(observers: Sequence[Observer], index: int, tensors: Sequence[torch.Tensor]) -> None:
    for observer in observers:
        observer.on_saved(index, tensors)


def _run(built: BuiltGraph, applier: Applier, result: RunResult,
         around: Callable[[], contextlib.AbstractContextManager], observers: Sequence[Observer],
         compile_forward: ForwardCompiler | None = None) -> None:
    spec = built.spec
    leaves = built.make_leaves()
    consts: dict[str, Any] = {}
    after_apply = None
    if observers:
        _announce(observers, "start", {f"x{i}": t for i, t in enumerate(leaves)})

        def after_apply(n: int, args: list, values: dict[str, torch.Tensor]) -> None:
            held = {f"arg{n}.{i}": a for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
            held.update({r: v for r, v in values.items() if r.startswith(f"f{n}.")})
            _announce(observers, f"apply:f{n}", held)
    side_effects_before = _side_effects(built)
    with recording_errors(result, "forward"), torch.enable_grad(), _saved_tensor_hooks(built):
        if compile_forward is not None:
            values = _compiled_forward(built, applier, leaves, consts, compile_forward)
        elif spec.trace:
            values = _compiled_forward(built, applier, leaves, consts, _jit_traced)
        else:
            values = forward(built, applier, leaves, consts, after_apply)
    for ref in function_output_refs(built):
        result.put("forward", f"out:{ref}", values[ref])
        result.put("forward", f"requires_grad:{ref}", values[ref].requires_grad)
    _record_output_metadata(built, values, leaves, result)
    if any(fn.untraceable == "side_effect" for fn in spec.functions):
        after = _side_effects(built)
        result.put(META + "forward", "side_effects",
                   tuple(sorted(i for n, calls in after.items() for i in calls[len(side_effects_before[n]):])))
    for ref, value in consts.items():
        result.put("forward", f"const:{ref}", value)
    leaf_refs = {f"x{i}": t for i, t in enumerate(leaves)}
    if observers:
        _announce(observers, "forward", {**values, **leaf_refs})
    with recording_errors(result, "forward"), torch.enable_grad():
        for ref in spec.mutated_outputs:  # the user's in-place update after the forward
            values[ref].mul_(2.0)
    record_hooks = _install_hooks(built, values, leaves, result)
    if spec.backward != "none":
        with around():
            _backward(built, values, leaves, result, observers)
        record_hooks("backward")
    if spec.forward_ad:
        _forward_ad(built, applier, result)
    if observers:
        if spec.backward == "double":
            _break_documented_grad_cycles(built, values)
        values.clear()  # drop outputs, views and every non-leaf value
        _announce(observers, "drop_outputs", leaf_refs)
        leaf_refs.clear()
        del leaves
        _announce(observers, "drop_all", {})


def _break_documented_grad_cycles(built: BuiltGraph, values: dict[str, torch.Tensor]) -> None:
    """Reset the retained `.grad` of non-leaf values after a create_graph backward.

    torch documents that a backward with create_graph=True "will create a reference cycle
    between the parameter and its gradient which can cause a memory leak ... make sure to
    reset the .grad fields of your parameters to None after use to break the cycle"
    (torch.autograd.backward and Tensor.backward, Note). retain_grad() makes a non-leaf
    collect .grad the same way, so under `double` its gradient's graph can hold the tensor
    itself (plain torch leaks identically). Removing exactly that documented edge, as the
    docs tell users to, keeps every other reference judged by the lifetime rules."""
    for hook in built.spec.hooks:
        if hook.kind == "retain_grad" and not values[hook.target].is_leaf:
            values[hook.target].grad = None


#: checkpoint prefix of metadata observations (strides, aliasing, versions, autograd flags),
#: compared per path by harness.oracles.metadata
META = "meta:"


def _side_effects(built: BuiltGraph) -> dict[str, list[int]]:
    """What the forwards with untraceable="side_effect" appended so far, by list: generic
    Functions to generic.FORWARD_CALLS (one shared list), plain ones each to the `forward_calls`
    list its own source defines (in the namespace its class was made in)."""
    lists: dict[str, list[int]] = {}
    for n, (fn, cls) in enumerate(zip(built.spec.functions, built.functions)):
        # the code whose module holds the list: a Function's forward, a custom_op's wrapper (whose
        # source, plain style, defines the op's kernel beside it; a generic op's kernel is
        # generic.forward_values). The error bounds' stand-ins run no forward
        forward = getattr(cls, "apply" if getattr(cls, "is_custom_op", False) else "forward", None)
        if fn.untraceable == "side_effect" and forward is not None:
            calls = getattr(forward, "__globals__", {}).get("forward_calls")
            if isinstance(calls, list):
                lists[f"f{n}"] = list(calls)
            else:
                lists["generic"] = list(generic.FORWARD_CALLS)
    return lists


def _record_output_metadata(built: BuiltGraph, values: dict[str, torch.Tensor],
                            leaves: Sequence[torch.Tensor], result: RunResult) -> None:
    """What the forward promises about each Function output besides its values."""
    named: dict[int, str] = {}  # TensorImpl -> the first value that is it
    for i, leaf in enumerate(leaves):
        named.setdefault(leaf._cdata, f"x{i}")
    for ref, value in values.items():
        if ref.startswith("f"):
            break
        named.setdefault(value._cdata, ref)
    for ref in function_output_refs(built):
        out = values[ref]
        result.put(META + "forward", f"alias:{ref}", _alias(out, named))
        named.setdefault(out._cdata, ref)
        result.put(META + "forward", f"version:{ref}", out._version)
        result.put(META + "forward", f"grad_fn:{ref}", out.grad_fn is not None)
        result.put(META + "forward", f"is_leaf:{ref}", out.is_leaf)


def _record_untouched_grads(leaves: Sequence[torch.Tensor], result: RunResult) -> None:
    """Autograd never writes the .grad of a leaf that does not require grad."""
    for i, leaf in enumerate(leaves):
        if not leaf.requires_grad:
            result.put(META + "backward", f"grad_is_none:x{i}", leaf.grad is None)


def _alias(out: torch.Tensor, named: dict[int, str]) -> str:
    """'is <ref>' (the same tensor), 'view of <ref>' (its _base), or 'fresh'."""
    if out._cdata in named:
        return f"is {named[out._cdata]}"
    if out._base is not None:
        return f"view of {named.get(out._base._cdata, 'an unnamed tensor')}"
    return "fresh"


def _record_strides(result: RunResult) -> None:
    """The significant strides of every recorded tensor, as plain values (`meta:<checkpoint>`)."""
    for checkpoint, roles in list(result.tensors.items()):
        for role, t in roles.items():
            if t is not None:
                result.put(META + checkpoint, f"stride:{role}", significant_strides(t))


def significant_strides(t: torch.Tensor) -> tuple[int | None, ...]:
    """Strides, None where they carry no meaning: a dimension of length 1, or any dimension
    of an empty tensor. torch's own stride checks compare the same ones
    (torch/_prims_common `_check_strides_helper`, significant_only)."""
    if t.numel() == 0:
        return (None,) * t.dim()
    return tuple(s if n > 1 else None for n, s in zip(t.shape, t.stride()))


def weighted_sum(value: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """(value * weight).sum(), a real scalar: for complex values its real part, Re(sum(v w)),
    since backward starts only from a real scalar ("grad can be implicitly created only for
    real scalar outputs"). The gradient it sends to `value` is conj(weight) in torch's
    convention (the conjugate Wirtinger derivative; docs: Autograd for Complex Numbers)."""
    total = (value * weight).sum()
    return total.real if total.is_complex() else total


def _loss(built: BuiltGraph, values: dict[str, torch.Tensor]) -> torch.Tensor | None:
    refs = [r for r in function_output_refs(built) if values[r].requires_grad]
    if not refs:
        return None
    weights = built.weights(len(function_output_refs(built)))
    by_ref = dict(zip(function_output_refs(built), weights))
    return sum(weighted_sum(values[r], by_ref[r]) for r in refs)  # type: ignore[return-value]


def _backward(built: BuiltGraph, values: dict[str, torch.Tensor], leaves: Sequence[torch.Tensor],
              result: RunResult, observers: Sequence[Observer] = ()) -> None:
    spec = built.spec
    grad_leaves = [(f"x{i}", t) for i, t in enumerate(leaves) if t.requires_grad]
    # a partial backward differentiates only the chosen leaves; the others keep .grad None
    chosen = [(f"x{i}", leaves[i]) for i in spec.grad_leaves] or grad_leaves
    inputs = [t for _, t in chosen]
    with torch.enable_grad():
        loss = _loss(built, values)
    if loss is None or not grad_leaves:
        result.put("backward", "skipped", "nothing requires grad")
        _record_untouched_grads(leaves, result)
        return
    mode = spec.backward
    backward_inputs = inputs if spec.grad_leaves else None  # without inputs=, as users mostly call it
    with recording_errors(result, "backward"):
        if mode in ("backward", "retain"):
            loss.backward(retain_graph=mode == "retain", inputs=backward_inputs)
        elif mode == "grad":
            grads = torch.autograd.grad(loss, inputs, allow_unused=True)
            for (name, _), g in zip(chosen, grads):
                result.put("backward", f"agrad:{name}", g)
        else:  # double
            grads = torch.autograd.grad(loss, inputs, allow_unused=True, create_graph=True)
            for (name, _), g in zip(chosen, grads):
                result.put("backward", f"agrad:{name}", g)
    for name, t in grad_leaves:
        result.put("backward", f"grad:{name}", t.grad if t.grad is None else t.grad.clone())
    # (here, with the backward's other records: a second backward that raises must not leave
    # the "backward" checkpoint's metadata short of what eager's has)
    _record_untouched_grads(leaves, result)
    if observers:
        _announce(observers, "backward", {**values, **dict(grad_leaves)})
    if mode == "retain":
        with recording_errors(result, "backward"):
            loss.backward(inputs=backward_inputs)
        for name, t in grad_leaves:
            result.put("backward", f"grad2:{name}", t.grad)
        if observers:
            _announce(observers, "backward2", {**values, **dict(grad_leaves)})
    if mode == "double":
        weights = built.weights(len(grads), offset=SECOND_ORDER_WEIGHTS)
        terms = [weighted_sum(g, w) for g, w in zip(grads, weights) if g is not None and g.requires_grad]
        if not terms:  # the first-order gradients are constants: no second-order ones
            for name, _ in chosen:
                result.put("double_backward", f"dgrad:{name}", None)
            return
        with recording_errors(result, "double_backward"):
            second = torch.autograd.grad(sum(terms), inputs, allow_unused=True)
        for (name, _), g in zip(chosen, second):
            result.put("double_backward", f"dgrad:{name}", g)


def _forward_ad(built: BuiltGraph, applier: Applier, result: RunResult) -> None:
    leaves = built.make_leaves()
    with recording_errors(result, "forward_ad"), fwAD.dual_level(), torch.enable_grad():
        duals = [leaf if t is None else fwAD.make_dual(leaf, t) for leaf, t in zip(leaves, built.leaf_tangents(leaves))]
        values = forward(built, applier, duals)
        for ref in function_output_refs(built):
            result.put("forward_ad", f"tangent:{ref}", fwAD.unpack_dual(values[ref]).tangent)


__all__ = ["CHECKPOINTS", "META", "Holders", "Observer", "ObserverFactory", "RunResult", "RunStopped", "apply_eager",
           "forward", "function_output_refs", "keyword_split", "observing", "positional", "recording_errors",
           "registered_observers", "run_graph", "weighted_sum"]
