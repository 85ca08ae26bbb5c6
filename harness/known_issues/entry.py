"""What a registry entry is (KnownIssue) and the witnesses and damage shared by every family."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec

REPRODUCERS = Path(__file__).resolve().parent / "reproducers"


def torch_release() -> tuple[int, int, int]:
    """(major, minor, patch) of the installed torch, ignoring local tags like +cpu."""
    parts = re.match(r"(\d+)\.(\d+)\.(\d+)", torch.__version__)
    assert parts, torch.__version__
    return int(parts[1]), int(parts[2]), int(parts[3])


Trigger = Callable[[GraphSpec], bool]
Witness = Callable[[GraphSpec, RunResult, list[Mismatch]], bool]
Damage = Callable[[GraphSpec, Mismatch], bool]
Workaround = Callable[[GraphSpec], GraphSpec]

#: what an entry's bug does to a user, worst first (the `kind` of a KnownIssue), judged on valid code
#: with torch's default settings:
#:   silent wrong result  values (outputs, gradients, tangents) or what user code sees run (hooks)
#:                        differ from eager autograd or torch's documented semantics, with no error
#:   wrong metadata       values agree, but requires_grad, grad_fn, None-vs-zeros gradients, a dtype,
#:                        view identity or a ctx attribute differ
#:   crash                code eager runs raises (an internal assert, an exception) or kills the process
#:   missing error        code torch documents as an error (a wrong gradient count or shape, a saved
#:                        tensor modified in place) runs without it, or raises an error that no longer
#:                        says what is wrong
#:   leak                 tensors stay alive after the last reference is dropped (until gc.collect(),
#:                        torch._dynamo.reset(), or forever)
#:   limitation           torch.compile falls back to eager (a graph break: an error only under
#:                        fullgraph=True) with right results, or torch documents the behaviour
KINDS = ("silent wrong result", "wrong metadata", "crash", "missing error", "leak", "limitation")


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    #: torch releases it affects: [first, last] inclusive; last None means "still open"
    first: tuple[int, int, int]
    last: tuple[int, int, int] | None
    #: path names, or families: "compiled" covers every "compiled:<mode>"
    paths: tuple[str, ...]
    reproducer: str  # file name in harness/known_issues/reproducers/
    trigger: Trigger
    witness: Witness
    damage: Damage
    #: the checkpoints and roles `damage` accepts, in words (for reports and docs)
    damages: str
    workaround: Workaround
    #: paths (or families) on which the bug needs another structure than `trigger`'s, with
    #: that trigger (func.jacfwd gives tangents to fewer leaves than eager's forward AD)
    path_triggers: dict[str, Trigger] = dataclasses.field(default_factory=dict)
    #: the bug kills the process (a segfault) at this checkpoint: where its trigger holds, the
    #: path does not run the example at all (`avoided_crash`); its reproducer, run in a
    #: subprocess by the tests, is the witness that the crash is still there
    crashes_at: str | None = None
    #: the trigger holds for every custom Function whose backward runs on the entry's paths (the
    #: backend or Dynamo's own state is the cause, no graph structure is needed), and the witness
    #: and damage read only the result: so `check_function` applies the entry to a user's own
    #: Function, whose structure no spec describes (`function_hits`)
    any_function: bool = False
    #: the upstream reports of this very bug: "pytorch/pytorch#N (a note)" (an issue, or a pull
    #: request fixing it; several allowed), or "documented limitation: <where torch documents it>";
    #: () when a search of PyTorch's tracker found none (a report is still to be filed); None when
    #: nobody has searched yet
    upstream: tuple[str, ...] | None = None
    #: close cousins upstream that are not a report of this bug (another trigger or form, an older
    #: or fixed case, the pull request that introduced the behaviour), each "pytorch/pytorch#N (how
    #: it relates)": worth linking from a report, never counted as one
    related: tuple[str, ...] = ()
    #: one of KINDS: what the bug does to a user ("" while an entry is not yet classified)
    kind: str = ""

    def upstream_text(self) -> str:
        """The upstream reference in words, as `known` and docs/bugs.md print it."""
        if self.upstream is None:
            return "not searched"
        return ", ".join(self.upstream) or "not reported"

    def related_text(self) -> str:
        return ", ".join(self.related) or "none found"

    def affects_installed_torch(self) -> bool:
        v = torch_release()
        return self.first <= v and (self.last is None or v <= self.last)

    def affects_path(self, path: str) -> bool:
        return bool({path.partition("@")[0], path_family(path)} & set(self.paths))

    def affects_run(self, spec: GraphSpec, path: str) -> bool:
        """`affects_path`, and a compiled autograd entry ("compiled") on `dynamo` where the spec runs
        the backward under compiled autograd there (GraphSpec.compiled_backward): the same capture."""
        return self.affects_path(path) or (spec.compiled_backward and path_family(path) == "dynamo"
                                           and "compiled" in self.paths)

    def triggered(self, spec: GraphSpec, path: str) -> bool:
        """The bug's structure is in `spec`, as `path` runs it."""
        trigger = self.path_triggers.get(path.partition("@")[0]) or self.path_triggers.get(path_family(path))
        return (trigger or self.trigger)(spec)

    def hit(self, spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        """The bug happened on this path: its structure is there and its witness is seen."""
        return (self.affects_run(spec, result.path) and self.affects_installed_torch()
                and self.triggered(spec, result.path) and self.witness(spec, result, mismatches))


class AvoidedCrash(RuntimeError):
    """The error a path reports instead of running an example that would crash the process."""

    def __init__(self, issue: KnownIssue) -> None:
        super().__init__(f"not run: it would crash the process (known torch issue {issue.id}, "
                         f"harness/known_issues/reproducers/{issue.reproducer})")
        self.issue = issue.id


def crash_avoided(issue_id: str) -> Witness:
    """The witness of a crash entry: the path reported that it avoided this entry's crash
    (harness.paths.run_path)."""
    return lambda spec, result, mismatches: (result.status == "error" and isinstance(result.error, AvoidedCrash)
                                             and result.error.issue == issue_id)


def path_family(path: str) -> str:
    """The family an entry's `paths` may name for `path`: "compiled" for "compiled:<mode>",
    "func+dynamo" for every "func.<transform>+dynamo", "func" for every "func.<transform>"
    ("<path>@<device>" is that path on another device)."""
    path = path.partition("@")[0]
    if path.startswith("func."):
        return "func+dynamo" if path.endswith("+dynamo") else "func"
    return path.partition(":")[0]


# --- witnesses and damage, by shape -------------------------------------------------------


#: How Dynamo words the message of an exception raised in code it traces (the torch.compile
#: modes of `compiled`, the `dynamo` paths), which harness.paths.compiled unwraps back to the
#: builtin type but not to the message: "ConstantVariable(str: 'msg')" (optionally inside
#: "LazyVariableTracker(realized: ...)") for an exception Dynamo raises on the code's behalf,
#: such as an index past a list's end; "raised exception TypeName('msg')" for one the code
#: raises itself.
_DYNAMO_WORDING = re.compile(r"(?P<lazy>LazyVariableTracker\(realized: )?ConstantVariable\(str: (?P<constant>.*)\)"
                             r"(?(lazy)\))|raised exception (?P<type>\w+)\((?P<argument>.*)\)", re.DOTALL)


def message_as_raised(error: BaseException) -> str:
    """The message `error` was raised with: str(error), or, where Dynamo worded it, the one
    string argument inside Dynamo's wording (of the same exception type)."""
    text = str(error)
    wording = _DYNAMO_WORDING.fullmatch(text)
    if wording is None or wording["type"] not in (None, type(error).__name__):
        return text
    try:
        message = ast.literal_eval(wording["constant"] or wording["argument"])
    except (ValueError, SyntaxError):  # not one literal: several arguments, or a non-constant
        return text
    return message if isinstance(message, str) else text


def raised(checkpoint: str | tuple[str, ...], message: str, error_type: type[BaseException] | None = None
           ) -> Witness:
    """The path itself raised at `checkpoint` (or at one of several), with this message (and
    type): as the code raised it, or as Dynamo words it (`message_as_raised`), so the same bug
    is recognised under every compiled mode and backend."""
    pattern = re.compile(message, re.S)
    checkpoints = (checkpoint,) if isinstance(checkpoint, str) else checkpoint

    def witness(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        return (result.status == "error" and result.error_checkpoint in checkpoints
                and (error_type is None or isinstance(result.error, error_type))
                and any(pattern.search(text) is not None
                        for text in {str(result.error), message_as_raised(result.error)}))
    return witness


def damaged_without_error(damage: Damage) -> Witness:
    """The path ran through without an error, and one of its mismatches is one `damage` says the
    bug causes: the witness of a silent wrong result."""
    return lambda spec, result, mismatches: result.status != "error" and any(damage(spec, m) for m in mismatches)


def error_at(*checkpoints: str) -> Damage:
    """Only the error report itself (what completed before it is still compared)."""
    return lambda spec, m: m.role == "error" and m.checkpoint in checkpoints
