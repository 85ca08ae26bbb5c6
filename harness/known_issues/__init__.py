"""Real torch bugs the harness has found, each as data plus three small predicates.

An entry says
  * trigger(spec): the exact graph structure the bug needs (harness/dataflow.py derives it
    from the spec); it is necessary: without it the bug cannot happen;
  * witness(spec, result, mismatches): the bug's own evidence in one path's result;
  * damage(spec, mismatch): which mismatches the bug can cause (checkpoints and roles);
  * workaround(spec): the smallest change to the spec that avoids the bug.

`harness.check` calls a path "known" only when an entry's trigger holds, its witness is
seen, and every mismatch on that path is damage it explains; any other mismatch fails the
path, with the known issue named beside it. It then runs the workaround variant on that
path, so the rest of the example is still checked there. Each entry names a standalone
reproducer in `harness/known_issues/reproducers/`; `tests/test_known_issues.py` runs every one on the installed
torch and checks that it reproduces on the versions the entry names, so a fix is noticed.

The entries live by family, each beside the predicates only it uses: `eager` (eager autograd
and forward AD), `compiled_autograd`, `dynamo`, `aot_autograd` (AOTAutograd and the backends
below it), `func` (torch.func, alone and under torch.compile); `dynamo_ctx`, `dynamo_lists` and
`func_dynamo` hold part of the `dynamo` and `func` entries, which those two join in. `shared` holds the predicates
several modules use, `entry` the KnownIssue record and the witnesses every family uses.
"""

from __future__ import annotations

from harness.known_issues import aot_autograd, compiled_autograd, dynamo, eager, func
from harness.known_issues.entry import (
    REPRODUCERS,
    AvoidedCrash,
    KnownIssue,
    message_as_raised,
    path_family,
    torch_release,
)
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec

KNOWN_ISSUES: tuple[KnownIssue, ...] = (eager.ENTRIES + compiled_autograd.ENTRIES + dynamo.ENTRIES
                                        + aot_autograd.ENTRIES + func.ENTRIES)


def avoided_crash(spec: GraphSpec, path: str) -> RunResult | None:
    """The result of a path that must not run `spec` because a known crash would kill the
    process: an AvoidedCrash at the crash's checkpoint (what ran before it is not compared),
    which the entry's witness (`crash_avoided`) recognises. None: run it."""
    for k in KNOWN_ISSUES:
        if (k.crashes_at and k.affects_run(spec, path) and k.affects_installed_torch()
                and k.triggered(spec, path)):
            return RunResult(path, status="error", error=AvoidedCrash(k), error_checkpoint=k.crashes_at)
    return None


def hits(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> list[KnownIssue]:
    """The known issues that happened on this path's run."""
    return [k for k in KNOWN_ISSUES if k.hit(spec, result, mismatches)]


def function_hits(result: RunResult, mismatches: list[Mismatch]) -> list[KnownIssue]:
    """The known issues that happened on a path's run of a user's own Function (check_function):
    the entries that need no graph structure (`any_function`), on the path, torch and witness."""
    return [k for k in KNOWN_ISSUES if k.any_function and k.affects_path(result.path)
            and k.affects_installed_torch() and k.witness(None, result, mismatches)]


def explained(spec: GraphSpec, issues: list[KnownIssue], m: Mismatch) -> bool:
    return any(k.damage(spec, m) for k in issues)


def workaround(spec: GraphSpec, issues: list[KnownIssue]) -> GraphSpec:
    """The spec with every given issue's workaround applied."""
    for k in issues:
        spec = k.workaround(spec)
    return spec


def trigger_rates(examples: int) -> list[tuple[KnownIssue, float]]:
    """Each entry with its share of `examples` generated specs whose structure triggers it."""
    from hypothesis import HealthCheck, given, settings

    from strategies import graphs

    specs: list[GraphSpec] = []

    @settings(max_examples=examples, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(graphs())
    def draw(spec: GraphSpec) -> None:
        specs.append(spec)

    draw()
    return [(k, sum(map(k.trigger, specs)) / max(1, len(specs))) for k in KNOWN_ISSUES]


def reproduce(issue: KnownIssue) -> tuple[str, str]:
    """Run an entry's reproducer on the installed torch: (state, last line it printed).

    state is "present" (exit 1 and REPRODUCED), "fixed" (exit 0) or "broken": the reproducer
    itself failed some other way, which says nothing about the bug and must be looked at."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(REPRODUCERS / issue.reproducer)], capture_output=True,
                          text=True, timeout=600, check=False)
    if done.returncode == 1 and "REPRODUCED" in done.stdout:
        state = "present"
    elif done.returncode == 0:
        state = "fixed"
    else:
        state = "broken"
    lines = (done.stdout + done.stderr).strip().splitlines() or [f"exit status {done.returncode}"]
    return state, lines[-1]


def by_ids(ids: list[str] | None = None) -> list[KnownIssue]:
    """The entries with these ids, in the registry's order (every entry when none is given)."""
    if not ids:
        return list(KNOWN_ISSUES)
    unknown = sorted(set(ids) - {k.id for k in KNOWN_ISSUES})
    if unknown:
        raise ValueError(f"no known issue {', '.join(unknown)}: `python -m harness known --list` prints every id")
    return [k for k in KNOWN_ISSUES if k.id in ids]


#: the releases docs/bugs.md reports on (the project's tested torch versions, docs/versions.md)
RELEASES = ((2, 13, 0), (2, 14, 1), (2, 15, 0))


def affects(issue: KnownIssue, release: tuple[int, int, int]) -> bool:
    """The registry's claim (first/last) for a release; `known` checks it on the installed one."""
    return issue.first <= release and (issue.last is None or release <= issue.last)


def bug_list() -> str:
    """docs/bugs.md: every entry in one row, from the registry (python -m harness known --bugs)."""
    import collections

    from harness.known_issues.entry import KINDS

    releases = [".".join(map(str, r)) for r in RELEASES]
    reported = sum(bool(k.upstream) for k in KNOWN_ISSUES)
    fixed = sum(k.last is not None and k.last < RELEASES[-1] for k in KNOWN_ISSUES)
    kinds = collections.Counter(k.kind for k in KNOWN_ISSUES)
    silent = sum(k.kind == "silent wrong result" and not k.upstream for k in KNOWN_ISSUES)
    lines = [
        "# Torch bugs found by the harness",
        "",
        "Generated from the registry (`harness/known_issues/`) by `python -m harness known --bugs`;",
        "`tests/test_known_issues.py` checks that it matches. Present/fixed per release is the",
        "registry's first/last, which `python -m harness known` checks against each entry's",
        "standalone reproducer on the installed torch (`not yet`: the release predates the bug).",
        "Kind: what the bug does to a user (`KINDS` in harness/known_issues/entry.py says what each means).",
        "Upstream: the pytorch/pytorch issues or pull requests about this very bug, `not reported` where a",
        "search of PyTorch's tracker found none (a report is still to be filed), `not searched` where",
        "nobody looked yet. Related: cousins upstream (another trigger or form, a fixed older case, the",
        "pull request that introduced the behaviour), which are not reports of it. The upstream-ready",
        "reports: `python -m harness known --report all --out DIR`.",
        "",
        f"{len(KNOWN_ISSUES)} entries; {reported} with an upstream reference; {fixed} fixed in torch {releases[-1]}.",
        "By kind: " + ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k]) + f"; {silent} of the "
        f"{kinds['silent wrong result']} silent wrong results have no upstream report.",
        "",
        "| Id | Kind | What | Upstream | Related | " + " | ".join(releases) + " |",
        "|---|---|---|---|---|" + "---|" * len(releases),
    ]
    for k in KNOWN_ISSUES:
        title = k.title if len(k.title) <= 160 else k.title[:160].rsplit(" ", 1)[0] + " ..."
        states = ["present" if affects(k, r) else "not yet" if r < k.first else "fixed" for r in RELEASES]
        cells = [f"`{k.id}`", k.kind or "not classified", title, k.upstream_text(), k.related_text()]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells + states) + " |")
    return "\n".join(lines) + "\n"


def run_reproducers(ids: list[str] | None = None) -> list[tuple[KnownIssue, str, str]]:
    """(entry, state, last line) for every entry (or those of `ids`); see `reproduce`."""
    return [(issue, *reproduce(issue)) for issue in by_ids(ids)]


__all__ = [
    "KNOWN_ISSUES",
    "RELEASES",
    "REPRODUCERS",
    "AvoidedCrash",
    "KnownIssue",
    "affects",
    "avoided_crash",
    "bug_list",
    "by_ids",
    "explained",
    "function_hits",
    "hits",
    "message_as_raised",
    "path_family",
    "reproduce",
    "run_reproducers",
    "torch_release",
    "trigger_rates",
    "workaround",
]

