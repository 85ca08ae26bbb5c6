"""`eager`: the installed torch's own Function.apply (the stock C++ path)."""

from __future__ import annotations

from typing import Callable

from harness.build import BuiltGraph
from harness.paths import Way, graph_observer, register
from harness.run import RunResult, apply_eager
from harness.spec import GraphSpec


class EagerPath:
    name = "eager"
    exact_vs_eager = True

    def available(self) -> str | None:
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return None

    def run_with(self, observe: Callable[[Way], RunResult]) -> RunResult:
        return observe(Way(apply_eager))

    def run(self, built: BuiltGraph) -> RunResult:
        return self.run_with(graph_observer(built, self.name))


register(EagerPath())
