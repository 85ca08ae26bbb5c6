"""`owned` and `borrowed`: the harness's C++ Function.apply (harness.native), holding
inputs as an owned variable_list or as borrowed pointers. Same Function classes as
eager, so results must be bit-identical to eager's.

A custom_op Function (FunctionSpec.api) is no Function class: torch's dispatcher applies
the op, whose autograd is torch/_library/autograd.py's own Function, applied inside the op's
Autograd kernel, where no caller's apply reaches. These paths call such an op as eager does
and apply the graph's other Functions through C++; a graph of custom_ops only has nothing
for them to run (`unsupported`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from harness import native
from harness.build import BuiltGraph
from harness.generic import GeneratedFunction
from harness.paths import Way, graph_observer, register
from harness.run import RunResult, keyword_split
from harness.spec import GraphSpec


#: torch/_library/autograd.py, make_autograd_impl: a custom_op's autograd Function is applied
#: inside the op's Autograd kernel, by the dispatcher
ALL_CUSTOM_OPS = ("custom_op Functions only: the dispatcher applies a custom_op's autograd Function "
                  "(torch/_library/autograd.py), so the C++ apply has no Function to apply")


class NativePath:
    exact_vs_eager = True

    def __init__(self, holder: str) -> None:
        self.name = self.holder = holder

    def available(self) -> str | None:
        try:
            native.build()
        except native.NativeBuildError as e:
            return str(e)
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        if spec.trace:
            return "tracing (torch.jit.trace records only the stock Function.apply)"
        if spec.functions and all(fn.api == "custom_op" for fn in spec.functions):
            return ALL_CUSTOM_OPS
        return None

    def _apply(self, n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
        if getattr(cls, "is_custom_op", False):
            return cls.apply(*args)  # the dispatcher applies it, as on eager (module doc)
        positional, keywords = keyword_split(cls, args)  # bound to their slots as torch binds them
        return native.apply(cls, *positional, holder=self.holder, **keywords)

    def run_with(self, observe: Callable[[Way], RunResult]) -> RunResult:
        try:
            return observe(Way(self._apply))
        except native.Unsupported as e:  # raised by the C++ apply for what it cannot run faithfully
            return RunResult(self.name, status="unsupported", reason=str(e))

    def run(self, built: BuiltGraph) -> RunResult:
        return self.run_with(graph_observer(built, self.name))


OWNED = register(NativePath("owned"))
BORROWED = register(NativePath("borrowed"))
