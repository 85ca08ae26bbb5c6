"""`eager`: the installed torch's own Function.apply (the stock C++ path)."""

from __future__ import annotations

from harness.build import BuiltGraph
from harness.paths import register
from harness.run import RunResult, apply_eager, run_graph
from harness.spec import GraphSpec


class EagerPath:
    name = "eager"
    exact_vs_eager = True

    def available(self) -> str | None:
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return None

    def run(self, built: BuiltGraph) -> RunResult:
        return run_graph(built, apply_eager, self.name)


register(EagerPath())
