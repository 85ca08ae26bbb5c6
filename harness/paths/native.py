"""`owned` and `borrowed`: the harness's C++ Function.apply (harness.native), holding
inputs as an owned variable_list or as borrowed pointers. Same Function classes as
eager, so results must be bit-identical to eager's."""

from __future__ import annotations

from typing import Any, Sequence

from harness import native
from harness.build import BuiltGraph, GeneratedFunction
from harness.paths import register
from harness.run import RunResult, run_graph
from harness.spec import GraphSpec


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
        return None

    def _apply(self, n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
        return native.apply(cls, *args, holder=self.holder)

    def run(self, built: BuiltGraph) -> RunResult:
        try:
            return run_graph(built, self._apply, self.name)
        except native.Unsupported as e:
            return RunResult(self.name, status="unsupported", reason=str(e))


OWNED = register(NativePath("owned"))
BORROWED = register(NativePath("borrowed"))
