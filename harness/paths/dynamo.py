"""`dynamo`: torch.compile of one function that applies the whole graph forward.

Dynamo traces into every custom Function (forward and backward, as one
`autograd_function_apply` higher-order op) and the backend builds the backward: with
`aot_eager` (the default) and `inductor`, AOT Autograd makes one joint graph whose
backward runs when the loss is differentiated. Backends: eager, aot_eager, inductor.

Path names: `dynamo` (backend from HARNESS_DYNAMO_BACKEND, default aot_eager) and
`dynamo:<backend>`. The forward is compiled with fullgraph=True first, so a graph break
is never silently passed over. When that run stops at a documented graph break (e.g.
"Unsupported custom jvp"), the example is run again with fullgraph=False: Dynamo's eager
fallback, which splits the graph around what it cannot trace, as users meet it. That
second result is the path's result, compared like any other, and its `note` says so
(e.g. "graph break: Unsupported custom jvp; ran through Dynamo's eager fallback"). The
recompile limit stays `unsupported`. Where the spec asks (GraphSpec.compiled_backward), the
backward runs under compiled autograd, which captures the compiled region's backward. Forward AD
is not compiled (it runs the same eager code as `eager`); a spec that asks for torch.jit.trace is
compiled instead of traced.
"""

from __future__ import annotations

from typing import Any, Callable


from harness.build import BuiltGraph
from harness.paths import PathFamily, Way, graph_observer, register_family
from harness.paths.compiled import backward_captured, compiler_missing, isolated, run_classified
from harness.paths.tracing import TraceRecorder
from harness.run import RunResult, apply_eager
from harness.spec import GraphSpec

BACKENDS = ("eager", "aot_eager", "inductor")
DEFAULT_BACKEND = "aot_eager"
BACKEND_ENV = "HARNESS_DYNAMO_BACKEND"

#: documented: AOT Autograd's backward is once-differentiable; torch raises "torch.compile
#: with aot_autograd does not currently support double backward" (runtime_wrappers.py)
AOT_DOUBLE_BACKWARD = "double backward (AOT Autograd backward graphs are once-differentiable)"

#: the compiler compiled autograd hands the captured backward to, where the spec asks for compiled
#: autograd (GraphSpec.compiled_backward): the graph as captured, which already holds AOT's backward
#: graph copied in (the `compiled` path's default mode, the cheapest that still captures)
COMPILED_BACKWARD_MODE = "capture"

#: how `compiled.limitation` starts the reason of a documented graph break
GRAPH_BREAK = "graph break: "


class DynamoPath:
    exact_vs_eager = False
    #: the compiled forward has no per-apply checkpoints and AOT keeps its own saved
    #: tensors, so lifetimes are held to the rules only, not compared with eager's
    lifetimes_vs_eager = False
    #: compiles the forward: a campaign running it draws mostly graphs Dynamo can trace
    #: (harness.engine.favours_dynamo)
    runs_dynamo = True

    def __init__(self, backend: str, name: str | None = None) -> None:
        self.backend = backend
        self.name = name or f"dynamo:{backend}"
        self.reset_between_runs = True  # off only in isolation tests

    def available(self) -> str | None:
        try:
            import torch._dynamo  # noqa: F401
        except ImportError as e:
            return f"torch {torch.__version__} has no Dynamo ({e}); install torch>=2.13."
        return compiler_missing() if self.backend == "inductor" else None

    def unsupported(self, spec: GraphSpec) -> str | None:
        if spec.backward == "double" and self.backend != "eager":
            return AOT_DOUBLE_BACKWARD
        return None

    def _compile(self, fn: Callable[..., Any], fullgraph: bool, recorder: TraceRecorder) -> Callable[..., Any]:
        return recorder.compiler(self.backend, fullgraph)(fn)

    def _run(self, built: BuiltGraph, fullgraph: bool) -> RunResult:
        """One run of a graph, fullgraph or through the fallback (no second run)."""
        return self._run_once(graph_observer(built, self.name), fullgraph, built)

    def _run_once(self, observe: Callable[[Way], RunResult], fullgraph: bool, built: BuiltGraph | None) -> RunResult:
        recorder = TraceRecorder(None if built is None else built.spec)

        def run(around: Callable[[], Any] | None = None) -> RunResult:
            return run_classified(self.name, lambda: observe(Way(
                apply_eager, around=around, compile_forward=lambda fn: self._compile(fn, fullgraph, recorder),
                recorder=recorder)))
        with isolated(self.reset_between_runs):
            if built is not None and built.spec.compiled_backward:
                result = backward_captured(self.name, COMPILED_BACKWARD_MODE, run)
            else:
                result = run()
        if built is not None and result.status != "unsupported":
            recorder.record(built, result)
        return result

    def run(self, built: BuiltGraph) -> RunResult:
        return self.run_with(graph_observer(built, self.name), built)

    def run_with(self, observe: Callable[[Way], RunResult], built: BuiltGraph | None = None) -> RunResult:
        """`observe` with fullgraph=True, and again through Dynamo's eager fallback where that
        stopped at a documented graph break. With `built` (the graph `observe` runs), each
        run's trace accounting goes into its result."""
        whole = self._run_once(observe, True, built)
        if whole.status != "unsupported" or not whole.reason.startswith(GRAPH_BREAK):
            return whole
        fallback = self._run_once(observe, False, built)
        fallback.note = f"{whole.reason}; ran through Dynamo's eager fallback"
        return fallback


DYNAMO_FAMILY = PathFamily("dynamo", "backend", BACKENDS, DEFAULT_BACKEND, BACKEND_ENV, DynamoPath)
DYNAMO = register_family(DYNAMO_FAMILY)


def dynamo_path(backend: str) -> DynamoPath:
    """The path for one backend, made once per process."""
    return DYNAMO_FAMILY.variant(backend)  # type: ignore[return-value]


__all__ = ["AOT_DOUBLE_BACKWARD", "BACKENDS", "DEFAULT_BACKEND", "DYNAMO", "DynamoPath",
           "dynamo_path"]
