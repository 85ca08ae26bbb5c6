"""Which paths check each fuzzed example: the cheap ones always, a compiling family on a share.

A compiled example costs 20-30 times a cheap one (compiled autograd and torch.compile trace and
compile per graph: ~500 ms against ~20 ms on 2 cores), so a campaign that runs every path on
every example checks the cheap paths (eager, the native applies, the torch.func transforms) only
as often as the compiling ones. Instead, each fuzzed example runs every cheap path, and at most
one compiling family: the one furthest behind its share of the checking time, when it is not
ahead of the cheap paths' time. Each family (the cheap paths together, compiled autograd,
torch.compile, torch.func under torch.compile) so gets about the same part of the time, and the
summary says how many examples each path checked and where the time went.

An example's cost is measured whole (its check and gradcheck); a compiling family is charged
what the example cost beyond the cheap paths' running average, the cheap paths the rest. A
campaign with no cheap path, or with no compiling one, runs every path on every example, as
do replays, seeds and shrinking (they run the paths a cause names), and `fuzz --every-path`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.paths import Path
from harness.spec import GraphSpec

#: how much each new cheap-only example moves the running average of their cost
AVERAGE_WEIGHT = 0.1


def compiling_family(path: Path) -> str | None:
    """The family of a path that compiles ("compiled autograd", "torch.compile", "torch.func +
    torch.compile"); None for a cheap one (eager, owned, borrowed, a torch.func transform)."""
    inner = getattr(path, "inner", path)  # a path on another device (paths.OnDevicePath)
    if getattr(inner, "needs_backward", False):
        return "compiled autograd"
    if getattr(inner, "runs_dynamo", False):
        return "torch.func + torch.compile" if getattr(inner, "runs_torch_func", False) else "torch.compile"
    return None


@dataclass
class BudgetSplit:
    """The paths of each fuzzed example of one campaign process (`paths_for`), and the time
    spent per family (`charge`)."""

    paths: list[Path]
    every_path: bool = False
    cheap: list[Path] = field(init=False)
    families: dict[str, list[Path]] = field(init=False)
    spent: dict[str, float] = field(init=False)  # seconds charged to each compiling family
    spent_cheap: float = 0.0
    cheap_average: float | None = None  # seconds of a cheap-only example

    def __post_init__(self) -> None:
        self.cheap = [p for p in self.paths if compiling_family(p) is None]
        self.families = {}
        for p in self.paths:
            family = compiling_family(p)
            if family is not None:
                self.families.setdefault(family, []).append(p)
        self.spent = dict.fromkeys(self.families, 0.0)

    @property
    def splits(self) -> bool:
        """Whether examples run different paths (else every path runs every example)."""
        return not self.every_path and bool(self.cheap) and bool(self.families)

    def paths_for(self, spec: GraphSpec) -> tuple[list[Path], str | None]:
        """The paths that check `spec`, and the compiling family among them (None: cheap only)."""
        if not self.splits:
            return self.paths, None
        # a family spends its turn only where one of its paths can run the example (compiled
        # autograd needs a backward, torch.compile refuses double backward, ...)
        useful = [f for f, ps in self.families.items() if any(p.unsupported(spec) is None for p in ps)]
        if not useful:
            return self.cheap, None
        behind = min(useful, key=lambda f: self.spent[f])
        if self.spent[behind] > self.spent_cheap:
            return self.cheap, None
        chosen = {id(p) for p in self.cheap + self.families[behind]}
        return [p for p in self.paths if id(p) in chosen], behind  # in the campaign's order

    def charge(self, family: str | None, seconds: float) -> None:
        """An example that ran the cheap paths and `family` took `seconds`."""
        if family is None:
            self.cheap_average = seconds if self.cheap_average is None else (
                (1 - AVERAGE_WEIGHT) * self.cheap_average + AVERAGE_WEIGHT * seconds)
            self.spent_cheap += seconds
            return
        cheap_part = min(seconds, self.cheap_average or 0.0)
        self.spent_cheap += cheap_part
        self.spent[family] += seconds - cheap_part


__all__ = ["AVERAGE_WEIGHT", "BudgetSplit", "compiling_family"]
