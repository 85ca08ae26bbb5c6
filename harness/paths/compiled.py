"""`compiled`: eager forward, backward under compiled autograd, with a selectable compiler.

Compiled autograd captures the whole backward graph into an FX graph when backward
runs; every custom Function node is proxied into it as an opaque `call_backward` (and
AOT backward graphs are spliced in). The captured graph is then handed to a compiler:

  capture    the captured graph is run as is (the cheapest mode that still proxies
             every Function node; the default)
  eager      torch.compile(graph, backend="eager"): Dynamo traces into each Function's
             backward
  aot_eager  ... and AOT Autograd functionalizes it
  inductor   ... and Inductor generates code (needs a C++ compiler)

Path names: `compiled` (mode from HARNESS_COMPILED_MODE, default capture) and
`compiled:<mode>`. The results are compared with eager's under tolerance.

This module also holds what the compiled paths share (see `dynamo.py`): the isolation of
one example from the next (Dynamo and compiled-autograd state are reset before every
run, and Dynamo's configuration is patched only inside the run) and the classification
of compile failures into documented limitations (`unsupported`) and failures.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
from typing import Any, Callable, Iterator

import torch

from harness.build import BuiltGraph
from harness.paths import PathFamily, Way, graph_observer, register_family
from harness.paths.eager import apply_eager
from harness.run import RunResult, RunStopped
from harness.spec import GraphSpec

MODES = ("capture", "eager", "aot_eager", "inductor")
DEFAULT_MODE = "capture"
MODE_ENV = "HARNESS_COMPILED_MODE"

#: the stable reason when a compile hits Dynamo's recompile limit (it would otherwise
#: fall back to eager silently)
RECOMPILE_LIMIT = "recompile limit"


# --- isolation ---------------------------------------------------------------------------

#: Dynamo configuration for every compiled run: hitting the recompile limit raises
#: instead of silently running eager; errors are never suppressed into eager fallbacks.
_DYNAMO_CONFIG = {"fail_on_recompile_limit_hit": True, "suppress_errors": False}


def reset_compile_state() -> None:
    """Forget every compiled artifact, as a fresh process would (Dynamo's code caches,
    guards, compiled autograd's graph cache and counters)."""
    import torch._dynamo

    torch._dynamo.reset()  # also resets compiled autograd (torch._dynamo.compiled_autograd.reset)
    torch._dynamo.utils.counters.clear()


@contextlib.contextmanager
def isolated(reset: bool = True) -> Iterator[None]:
    """One example's compiled run: fresh state before, Dynamo configuration restored after, and
    no compile context left behind for the next example (`close_abandoned_compile_context`)."""
    import torch._dynamo

    if reset:
        reset_compile_state()
    try:
        with torch._dynamo.config.patch(_DYNAMO_CONFIG), _guard_latency_not_profiled():
            yield
    finally:
        close_abandoned_compile_context()


def close_abandoned_compile_context() -> None:
    """Known torch issue ca-capture-error-leaks-compile-context: compiled autograd enters a compile
    context by hand in `begin_capture` and leaves it in `end_capture` (torch/_dynamo/compiled_autograd.py);
    a capture that raises in between (ca-tensor-hook-unreached-output, say) never leaves it. The thread's
    compile context stays set outside any compile, and when the garbage collector later finalizes the
    abandoned context manager, its `finally` resets the thread's compile context to None: at whatever
    moment the collector runs, possibly inside another example's torch.compile, which then fails with
    "AssertionError: compile_context is not set" when its analysis restarts. So that no example is
    judged on what an earlier one left, the abandoned context is closed here, at once (it restores what
    was there before the capture). Called outside any compile."""
    import gc
    import types

    import torch._guards as guards

    code = guards.compile_context.__wrapped__.__code__  # the generator behind the context manager
    left = guards.CompileContext.try_get()
    while left is not None:  # (a capture that raised inside another abandoned one: each in turn)
        for holder in gc.get_referrers(left):
            if type(holder) is types.GeneratorType and holder.gi_code is code and holder.gi_frame is not None:
                holder.close()
        if guards.CompileContext.try_get() is left:
            raise RuntimeError("a compile context is left set after a compiled run and no abandoned "
                               "compile_context holds it; the harness cannot keep examples apart")
        left = guards.CompileContext.try_get()


@contextlib.contextmanager
def _guard_latency_not_profiled() -> Iterator[None]:
    """Dynamo times the guards of every frame it compiles, for its compile metrics only
    (torch/_dynamo/guards.py: `profile_guard_manager`, after `guard_manager.check` has run
    them). It flushes the CPU cache first: a dynamo example took 1.66-1.69x as long with it
    (`profile --paths dynamo`, 40 examples, side by side, 2026-12-01). The latency is logged
    and nothing reads it back, so it is skipped; the guards themselves still run."""
    import torch._dynamo.guards as guards

    profiled = getattr(guards, "profile_guard_manager", None)
    if profiled is None:
        yield
        return
    guards.profile_guard_manager = lambda *args, **kwargs: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = profiled


# --- classification of compile failures --------------------------------------------------
#
# Dynamo documents every graph break it can raise in graph_break_registry.json, each with
# hints. A graph break is
#   * a documented limitation (-> unsupported, reason "graph break: <gb_type>") unless
#   * a hint says "This is likely to be a Dynamo bug" (-> a failure, reported as raised), or
#   * a hint says "Your code may result in an error when running in eager": the traced
#     code raises; what it raised (unwrapped from Dynamo's exceptions) is this run's
#     error, compared with eager's for error parity.
# An error that is no graph break (a backend crash, a wrong result) is always a finding.


@functools.cache
def _graph_break_registry() -> dict[str, frozenset[str]]:
    """Dynamo's own registry of documented graph breaks: gb_type -> all its hints."""
    import torch._dynamo

    path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
    with open(path) as f:
        registry = json.load(f)
    hints: dict[str, set[str]] = {}
    for entries in registry.values():
        for entry in entries:  # one gb_type may be registered at several sites
            hints.setdefault(entry["Gb_type"], set()).update(entry.get("Hints", []))
    return {gb_type: frozenset(h) for gb_type, h in hints.items()}


def _graph_break_kind(gb_type: str) -> str:
    """'limitation', 'user_error', 'dynamo_bug' or 'undocumented'."""
    from torch._dynamo import graph_break_hints

    hints = _graph_break_registry().get(gb_type)
    if hints is None:
        return "undocumented"
    if any(h in hints for h in graph_break_hints.DYNAMO_BUG):
        return "dynamo_bug"
    if any(h in hints for h in graph_break_hints.USER_ERROR):
        return "user_error"
    return "limitation"


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and what it was raised from (or while handling), innermost last."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _raised_by_traced_code(error: BaseException) -> BaseException:
    """The error the traced code raised, out of Dynamo's wrappers; `error` if none is found."""
    from torch._dynamo import exc

    for e in _chain(error):
        if isinstance(e, exc.ObservedException):  # Dynamo's stand-in for a Python exception
            builtin = next((t for t, observed in exc.observed_exception_map.items()
                            if type(e) is observed), None)
            if builtin is not None:
                unwrapped = builtin(str(e))
                unwrapped.__cause__ = error
                return unwrapped
        elif not isinstance(e, exc.TorchDynamoException):
            return e
    return error


def limitation(error: BaseException) -> str | None:
    """The stable short reason when `error` is a documented limitation of torch.compile,
    else None (the error is then a finding, compared with eager's)."""
    from torch._dynamo.exc import FailOnRecompileLimitHit, Unsupported

    for e in _chain(error):
        if isinstance(e, FailOnRecompileLimitHit):
            return RECOMPILE_LIMIT
        if isinstance(e, Unsupported) and e.gb_type:
            if e.gb_type == "Dynamo recompile limit exceeded":
                return RECOMPILE_LIMIT
            documented = _graph_break_kind(e.gb_type) == "limitation"
            return f"graph break: {e.gb_type}" if documented else None
    return None


def _user_error(error: BaseException) -> BaseException | None:
    """What the traced code raised, when Dynamo reports `error` as a graph break that the
    code would raise in eager too; else None."""
    from torch._dynamo.exc import Unsupported

    for e in _chain(error):
        if isinstance(e, Unsupported) and e.gb_type:
            raises_in_eager_too = _graph_break_kind(e.gb_type) == "user_error"
            return _raised_by_traced_code(e) if raises_in_eager_too else None
    return None


def classified(result: RunResult) -> RunResult:
    """A documented limitation becomes `unsupported`; an error the traced code raised is
    unwrapped from Dynamo's graph break, so it can be compared with eager's."""
    if result.status == "error" and result.error is not None:
        reason = limitation(result.error)
        if reason is not None:
            return RunResult(result.path, status="unsupported", reason=reason)
        raised = _user_error(result.error)
        if raised is not None:
            result.error = raised
    return result


def run_classified(path_name: str, run: Callable[[], RunResult]) -> RunResult:
    """`run()` with the recompile-limit failure (not an error of torch or the Functions, so
    the runner lets it through) turned into `unsupported`."""
    from torch._dynamo.exc import FailOnRecompileLimitHit

    try:
        return classified(run())
    except FailOnRecompileLimitHit:
        return RunResult(path_name, status="unsupported", reason=RECOMPILE_LIMIT)


def compiler_missing() -> str | None:
    """None when Inductor can build its CPU kernels here, else why not (with the fix)."""
    cxx = os.environ.get("CXX") or "g++"
    if shutil.which(cxx) or shutil.which("c++") or shutil.which("clang++"):
        return None
    return (f"inductor needs a C++ compiler and found none ({cxx!r} is not on PATH); "
            "install g++ or set CXX.")


# --- the compiled path ------------------------------------------------------------------


def compiler_fn(mode: str) -> Callable[[torch.fx.GraphModule], Callable[..., Any]]:
    """What compiled autograd hands each captured backward graph to."""
    if mode == "capture":
        # the graph's own forward: calling the module would also print FX's source excerpt
        # of every error to stderr
        return lambda gm: gm.forward
    # fullgraph: a graph break inside a Function's backward is reported, never silently
    # split into eagerly run pieces
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


@contextlib.contextmanager
def _compiled_autograd(mode: str, escaped: list[BaseException]) -> Iterator[None]:
    """The backward phase under compiled autograd. An exception that the runner does not
    record as an observation (it records RuntimeError, TypeError, ...) but that escapes
    from here was raised by compiled autograd itself (e.g. StopIteration out of one of its
    graph passes): it is noted in `escaped`, so the path reports it as this run's error."""
    from torch._dynamo import compiled_autograd

    # `_enable` is the context manager in torch 2.13 and 2.14 (private; the public route,
    # torch._dynamo.config.compiled_autograd, needs a torch.compile'd training step)
    try:
        with compiled_autograd._enable(compiler_fn(mode)):
            yield
    except RunStopped:
        raise  # the runner's own signal: the error is already recorded
    except Exception as e:
        escaped.append(e)
        raise


def captures() -> int:
    """Backward graphs compiled autograd has captured since the last reset."""
    return torch._dynamo.utils.counters["compiled_autograd"]["captures"]


class CompiledPath:
    exact_vs_eager = False  # compiled kernels may round differently
    #: AOT Autograd builds the backward of the AOT modes: after a create_graph backward, the graph of
    #: the first-order gradients is AOT's, which saves its own tensors (as on `dynamo`), so the use
    #: counts from the backward on are not eager's; the lifetime rules still apply
    AOT_MODES = ("aot_eager", "inductor")
    #: checks nothing of an example without a backward (a campaign of such paths skips them)
    needs_backward = True

    def __init__(self, mode: str, name: str | None = None) -> None:
        self.mode = mode
        self.name = name or f"compiled:{mode}"
        #: reset Dynamo and compiled autograd before every run (off only in isolation tests)
        self.reset_between_runs = True

    def available(self) -> str | None:
        try:
            import torch._dynamo  # noqa: F401
            from torch._dynamo import compiled_autograd  # noqa: F401
        except ImportError as e:
            return f"torch {torch.__version__} has no compiled autograd ({e}); install torch>=2.13."
        return compiler_missing() if self.mode == "inductor" else None

    def lifetimes_vs_eager_on(self, spec: GraphSpec) -> bool:
        return not (self.mode in self.AOT_MODES and spec.backward == "double")

    def unsupported(self, spec: GraphSpec) -> str | None:
        if spec.backward == "none":
            return f"{NO_BACKWARD} (nothing for compiled autograd to run)"
        return None

    def run(self, built: BuiltGraph) -> RunResult:
        return self.run_with(graph_observer(built, self.name))

    def run_with(self, observe: Callable[[Way], RunResult]) -> RunResult:
        with isolated(self.reset_between_runs):
            return _no_backward_ran(backward_captured(self.name, self.mode, lambda around: run_classified(
                self.name, lambda: observe(Way(apply_eager, around=around)))))


def backward_captured(name: str, mode: str, run: Callable[[Callable[[], Any]], RunResult]) -> RunResult:
    """`run(around)`: one run of path `name` whose backward phase `around` puts under compiled autograd,
    with compiler `mode` (MODES). An exception compiled autograd itself raised is the run's error at
    backward, and a backward that ran while compiled autograd captured nothing is an error too: it ran
    eagerly, which must not pass as a tested example."""
    escaped: list[BaseException] = []
    before = captures()
    try:
        result = run(lambda: _compiled_autograd(mode, escaped))
    except Exception as e:
        if not escaped or e is not escaped[0]:
            raise  # not from compiled autograd: a bug of the harness itself
        return RunResult(name, status="error", error=e, error_checkpoint="backward")
    if result.status == "ok" and not _backward_skipped(result) and captures() == before:
        result.status, result.error_checkpoint = "error", "backward"
        result.error = RuntimeError("compiled autograd captured no backward graph: the backward ran eagerly")
    return result


#: how the reason begins where an example has nothing for compiled autograd to run: no backward is
#: called, or nothing requires grad (a floor of checked examples counts only the others)
NO_BACKWARD = "no backward"


def nothing_to_run(status: str, reason: str | None) -> bool:
    """An outcome of a compiled path that had no backward to capture."""
    return status == "unsupported" and (reason or "").startswith(NO_BACKWARD)


def _backward_skipped(result: RunResult) -> bool:
    return "skipped" in result.values.get("backward", {})


def _no_backward_ran(result: RunResult) -> RunResult:
    if result.status == "ok" and _backward_skipped(result):
        return RunResult(result.path, status="unsupported",
                         reason=f"{NO_BACKWARD} (nothing requires grad)")
    return result


COMPILED_FAMILY = PathFamily("compiled", "mode", MODES, DEFAULT_MODE, MODE_ENV, CompiledPath)
COMPILED = register_family(COMPILED_FAMILY)


def compiled_path(mode: str) -> CompiledPath:
    """The path for one mode, made once per process."""
    return COMPILED_FAMILY.variant(mode)  # type: ignore[return-value]


__all__ = ["COMPILED", "DEFAULT_MODE", "MODES", "RECOMPILE_LIMIT", "CompiledPath", "backward_captured", "classified",
           "close_abandoned_compile_context", "compiled_path", "isolated", "limitation", "reset_compile_state", "run_classified"]
