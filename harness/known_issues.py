"""Real torch bugs the harness has found, each with a precise signature.

A failure that matches an entry is reported as *known* (counted, not failing), so CI
stays green while an unknown failure still fails. Each entry names a standalone
reproducer in `known_issues/`; `tests/test_known_issues.py` runs every one on the
installed torch and checks it still reproduces on the versions the entry names, so a
fixed bug gets noticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec

REPRODUCERS = Path(__file__).resolve().parent.parent / "known_issues"


def torch_release() -> tuple[int, int, int]:
    """(major, minor, patch) of the installed torch, ignoring local tags like +cpu."""
    parts = re.match(r"(\d+)\.(\d+)\.(\d+)", torch.__version__)
    assert parts, torch.__version__
    return int(parts[1]), int(parts[2]), int(parts[3])


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    #: torch releases it affects: [first, last] inclusive; last None means "still open"
    first: tuple[int, int, int]
    last: tuple[int, int, int] | None
    paths: tuple[str, ...]
    checkpoint: str
    #: "error": the path raised, and `message` matches the error text;
    #: "mismatch": the path ran, `message` matches every reported mismatch (downstream
    #: values inherit the damage) and `witness` matches at least one (the bug itself)
    symptom: str
    message: re.Pattern[str]
    #: the spec features that trigger it
    triggers: Callable[[GraphSpec], bool]
    reproducer: str  # file name in known_issues/
    witness: re.Pattern[str] | None = None

    def affects_installed_torch(self) -> bool:
        v = torch_release()
        return self.first <= v and (self.last is None or v <= self.last)

    def matches(self, spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        if result.path not in self.paths or not self.triggers(spec) or not self.affects_installed_torch():
            return False
        if self.symptom == "error":
            return (result.status == "error" and result.error_checkpoint == self.checkpoint
                    and self.message.search(str(result.error)) is not None)
        return (all(m.checkpoint == self.checkpoint and self.message.search(str(m)) for m in mismatches)
                and any(self.witness is None or self.witness.search(str(m)) for m in mismatches))


def _aliasing_output_before_another(spec: GraphSpec) -> bool:
    return spec.forward_ad and any(
        fn.jvp and any(o.kind in ("input", "view") and any(
            p.kind not in ("const",) and not p.non_differentiable for p in fn.outputs[k + 1:])
            for k, o in enumerate(fn.outputs))
        for fn in spec.functions)


def _returns_input_without_materialized_tangent(spec: GraphSpec) -> bool:
    return spec.forward_ad and any(
        fn.jvp and not fn.materialize_grads and any(o.kind in ("input", "view", "dirty") for o in fn.outputs)
        for fn in spec.functions)


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="fwad-input-as-is-none-tangent",
        title=("Forward AD: a custom Function with set_materialize_grads(False) that returns an "
               "input without a tangent as-is, and whose jvp returns None for it, hits an INTERNAL "
               "ASSERT in autograd_meta.cpp instead of leaving the output without a tangent"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo"),
        checkpoint="forward_ad",
        symptom="error",
        message=re.compile(r"INTERNAL ASSERT FAILED at .*autograd_meta\.cpp.*Expected both tensor and its "
                           r"forward grad to be floating point or complex", re.S),
        triggers=_returns_input_without_materialized_tangent,
        reproducer="fwad_input_as_is_none_tangent.py",
    ),
    KnownIssue(
        id="fwad-view-drops-later-tangents",
        title=("Forward AD: when a custom Function returns a view of (or as-is) an input that has no "
               "tangent, every later output silently loses its tangent: _process_forward_mode_AD in "
               "custom_function.cpp ends the output loop with `return` where `continue` is meant"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo"),
        checkpoint="forward_ad",
        symptom="mismatch",
        message=re.compile(r"vs math: forward_ad tangent:f\d+\.\d+: "),
        witness=re.compile(r"forward_ad tangent:f\d+\.\d+: got None, expected a tensor$"),
        triggers=_aliasing_output_before_another,
        reproducer="fwad_view_of_tangentless_input_drops_later_tangents.py",
    ),
)


def match(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> KnownIssue | None:
    return next((k for k in KNOWN_ISSUES if k.matches(spec, result, mismatches)), None)


__all__ = ["KNOWN_ISSUES", "KnownIssue", "match", "torch_release"]
