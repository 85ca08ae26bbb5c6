"""How each Function of a graph ran under torch.compile: trace accounting.

A Function that Dynamo traces becomes one `autograd_function_apply` higher-order op in the
graph it hands the backend (its forward and backward as subgraphs; AOT Autograd then
compiles the backward). One it cannot trace runs as plain eager `Function.apply` under
Dynamo's fallback, and is not tested by the compiled path at all. One with no input that
requires grad is inlined: its forward's ops go into the graph, and no backward is compiled.
A custom_op Function (FunctionSpec.api) is one node calling its op, which Dynamo does not
trace into (register_fake gives the shapes) and whose backward AOT builds from its
register_autograd formula: it counts as "traced".

`TraceRecorder` is a backend that records what the backend is given and then compiles it
exactly as torch.compile(backend=<name>) does (the same wrapper objects). Each graph node
names, in its stack trace, the line of the straight-line forward (harness.plain.
graph_forward_source) that applied its Function; so each Function gets a way: "traced"
(an autograd_function_apply node), "inlined" (other nodes, no such op), "eager" (its output's
grad_fn is its own eager backward node) or "unknown" (no evidence: nothing recorded). The loop
form's nodes all name the loop's one apply line, so there only the count of ops is known.

Per example (`example_trace`): "traced" (every Function in the graph, at least one traced),
"partly traced" (at least one traced, some not in the graph), "fallback" (none traced, some
outside the graph) or "inlined" (every Function inlined: nothing requires grad).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from harness.build import BuiltGraph
from harness.plain import graph_forward_source
from harness.spec import CUSTOM_OP_NAMESPACE

WAYS = ("traced", "inlined", "eager", "unknown")
EXAMPLE_TRACES = ("traced", "partly traced", "fallback", "inlined")
#: the higher-order op Dynamo turns a traced Function into
FUNCTION_OP = "autograd_function_apply"
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _backend_wrapper(backend: str) -> Any:
    """What torch.compile(backend=<backend>) itself compiles with (torch/__init__.py, compile)."""
    if backend == "inductor":
        return torch._TorchCompileInductorWrapper("default", None, None)
    return torch._TorchCompileWrapper(backend, "default", None, None)


class _Recording:
    """A torch.compile backend: records each graph, then compiles it with the real backend."""

    def __init__(self, backend: str, recorder: TraceRecorder) -> None:
        self.inner = _backend_wrapper(backend)
        self.compiler_name = getattr(self.inner, "compiler_name", backend)
        self.recorder = recorder

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        self.recorder.scan(gm)
        return self.inner(gm, example_inputs)

    def __getattr__(self, name: str) -> Any:  # get_compiler_config, reset, ...
        return getattr(self.inner, name)


def _applies_a_function(target: Any) -> bool:
    """A traced Function's autograd_function_apply, or a custom_op Function's op (FunctionSpec.api:
    one node calling `afh::...`, whose backward AOT builds from its register_autograd formula)."""
    if isinstance(target, torch._ops.HigherOrderOperator):
        return target.name() == FUNCTION_OP
    return isinstance(target, torch._ops.OpOverload) and target.namespace == CUSTOM_OP_NAMESPACE


class TraceRecorder:
    """Records the graphs of one compiled run of a graph spec; `ways(...)` after the run."""

    def __init__(self, spec: Any) -> None:
        """spec: the graph's, or None for a subject that is no generated graph (nothing is then
        known of which line applies which Function)."""
        self.spec = spec
        self.graphs = 0
        self.function_ops = 0  # autograd_function_apply nodes in the top-level graphs
        self.traced: set[int] = set()
        self.in_graph: set[int] = set()
        #: the eager _forward_cls of the compiled outputs' grad_fn
        self.output_classes: weakref.WeakSet[Any] = weakref.WeakSet()
        source = graph_forward_source(spec) if spec is not None and spec.forward_code == "straight" else None
        self._filename = source.filename if source else None
        self._lines = source.apply_lines if source else {}

    def compiler(self, backend: str, fullgraph: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A ForwardCompiler (harness.run): torch.compile with this recorder in front of `backend`;
        the compiled forward's outputs are kept as the evidence of eager applications."""
        def compile_forward(fn: Callable[..., Any]) -> Callable[..., Any]:
            compiled = torch.compile(fn, backend=_Recording(backend, self), fullgraph=fullgraph)

            def run(*xs: Any) -> Any:
                outs = compiled(*xs)
                # (weak references to the classes only: a reference to an output would keep it
                # alive past the lifetime oracle's checks, and so would one to a class Dynamo's
                # eager backend makes per call, ApplyTemplate, whose closure holds the saved tensors)
                self.output_classes = weakref.WeakSet(
                    cls for o in pytree.tree_leaves(outs) if isinstance(o, torch.Tensor)
                    if (cls := getattr(type(o.grad_fn), "_forward_cls", None)) is not None)
                return outs
            return run
        return compile_forward

    def scan(self, gm: torch.fx.GraphModule) -> None:
        self.graphs += 1
        for module in gm.modules():  # the top-level graph and the op's subgraphs
            if not isinstance(module, torch.fx.GraphModule):
                continue
            for node in module.graph.nodes:
                is_op = node.op == "call_function" and _applies_a_function(node.target)
                if is_op and module is gm:
                    self.function_ops += 1
                n = self._function_of(node)
                if n is not None:
                    self.in_graph.add(n)
                    if is_op:
                        self.traced.add(n)

    def _function_of(self, node: torch.fx.Node) -> int | None:
        """The Function whose application line the node's stack trace starts in (straight form)."""
        trace = node.meta.get("stack_trace") or ""
        for filename, line in _FRAME.findall(trace):
            if filename == self._filename:
                return self._lines.get(int(line))
        return None

    def ways(self, built: BuiltGraph) -> tuple[str, ...]:
        """How each Function ran, from what was recorded and the outputs' grad_fn."""
        eager = {n for n, cls in enumerate(built.functions) if cls in self.output_classes}
        functions = range(len(built.spec.functions))
        if self._filename is None:  # the loop form: only counts are known
            if self.function_ops >= len(functions) and not eager:
                return ("traced",) * len(functions)
            return tuple("eager" if n in eager else "unknown" for n in functions)
        return tuple("traced" if n in self.traced else "inlined" if n in self.in_graph
                     else "eager" if n in eager else "unknown" for n in functions)

    def record(self, built: BuiltGraph, result: Any) -> None:
        """Put the run's trace on its RunResult: {"ways": [...], "example": EXAMPLE_TRACES item}."""
        ways = self.ways(built)
        result.trace = {"ways": list(ways), "example": example_trace(ways, self.function_ops)}


def example_trace(ways: tuple[str, ...], function_ops: int = 0) -> str:
    """One of EXAMPLE_TRACES for an example whose Functions ran `ways` (see the module doc)."""
    traced = "traced" in ways or function_ops > 0
    outside = any(w in ("eager", "unknown") for w in ways)
    if traced:
        return "partly traced" if outside else "traced"
    return "fallback" if outside or not ways else "inlined"


__all__ = ["EXAMPLE_TRACES", "FUNCTION_OP", "WAYS", "TraceRecorder", "example_trace"]
