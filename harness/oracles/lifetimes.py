"""The lifetime oracle: refcounts and liveness of every tensor of a graph at fixed checkpoints.

The tracker is an observer of the runner (harness.run.Observer): registered for a block of
runs by `tracking_lifetimes()`, it records at each checkpoint the runner announces (in run
order): "start" (leaves made), "apply:f<n>" (after each apply), "forward", "backward" (and
"backward2" after a retained second backward), "drop_outputs" (every non-leaf value, the loss
and the outputs dropped; leaves kept), "drop_all".

Observations, stored in the RunResult as values:
  life:<checkpoint>  role -> (alive, use_count)   compared with eager and between paths
  probe:<checkpoint> role -> (weak_count, node_use_count)   native probes; compared between
                     owned and borrowed only, since eager's ctx owns its node and so reads
                     one higher by design (see docs/lifetimes.md)
use_count is TensorImpl's strong count (`Tensor._use_count()`; a fresh tensor reads 1);
None once the tensor is gone or when the runner holds no reference to read.

Expected-lifetime rules, checked on every path (`rule_violations`):
  * saved intermediates of a node that requires grad are alive after the forward;
  * they are released by a non-retaining backward (and kept by retain_graph until the last);
  * leaf use counts return to their pre-forward value once outputs and graph are dropped;
  * nothing of the graph is alive after every user reference is dropped, and what dies only
    under gc.collect() was held by a reference cycle; what held each such tensor is found then
    (harness/oracles/holders.py) and, where it is a torch object, named in the violation
    ("; holder: ..."), so that a known torch issue explains only what the object it names held
    (`held_by`);
  * on CUDA, the caching allocator's bytes in use return to their value before the graph was
    built, less what the result itself keeps (recorded tensors share storage with outputs):
    `life:released` "cuda_bytes" is (bytes above that after drop_all, bytes above it after
    gc.collect()), both 0 when nothing is left over. Off CUDA it is not recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from harness import devices
from harness.build import BuiltGraph
from harness.dataflow import Dataflow
from harness.oracles import holders as holder_search
from harness.run import Observer, RunResult, observing, registered_observers
from harness.stages import stage

LIFE = "life:"
PROBE = "probe:"


@functools.cache
def lifetime_probes() -> tuple[Callable[[torch.Tensor], int], Callable[[torch.Tensor], int]] | None:
    """The native weak-count and node-count probes, when the extension builds here
    (without them probe counts are simply not recorded, e.g. in a torch-only reproducer)."""
    try:
        from harness import native
    except ModuleNotFoundError:
        return None
    try:
        native.build()
    except native.NativeBuildError:
        return None
    return native.weak_use_count, native.node_use_count


@dataclass
class LifetimeTracker(Observer):
    probes: tuple[Callable[[torch.Tensor], int], Callable[[torch.Tensor], int]] | None = None
    refs: dict[str, Any] = field(default_factory=dict)  # role -> torch._C._WeakTensorRef
    saved: dict[str, int] = field(default_factory=dict)  # saved intermediate role -> Function index
    node_requires_grad: dict[int, bool] = field(default_factory=dict)
    records: dict[str, dict[str, tuple]] = field(default_factory=dict)
    probe_records: dict[str, dict[str, tuple]] = field(default_factory=dict)
    cycle_roles: list[str] = field(default_factory=list)
    leaked_roles: list[str] = field(default_factory=list)
    #: role -> its TensorImpl's address while it lives, by which holders recognise it
    addresses: dict[str, int] = field(default_factory=dict)
    #: what held the cycle and leaked roles (harness/oracles/holders.py)
    holders: holder_search.Holders = field(default_factory=holder_search.Holders)
    #: the CUDA device whose allocator is checked, and its bytes in use before the graph was built
    memory_device: torch.device | None = None
    memory_baseline: int = 0
    #: (above baseline after drop_all, above baseline after gc.collect()); None off CUDA
    memory_excess: tuple[int, int] | None = None
    #: the run watched as an observer (on_run_start), and its record
    built: BuiltGraph | None = None
    result: RunResult | None = None

    #: what only a reference cycle keeps alive must still be alive at drop_all, to be told from a leak
    pauses_gc = True

    @classmethod
    def for_run(cls) -> LifetimeTracker:
        """The observer of one run, with the native probes where they build."""
        return cls(probes=lifetime_probes())

    def on_run_start(self, built: BuiltGraph, result: RunResult) -> None:
        self.built, self.result = built, result
        self.start_memory_baseline(built.device)

    def on_checkpoint(self, name: str, held: dict[str, torch.Tensor]) -> None:
        if name.startswith("apply:f"):
            n = int(name[len("apply:f"):])
            self.node_requires_grad[n] = any(v.requires_grad for r, v in held.items() if r.startswith(f"f{n}."))
        elif name == "forward" and self.built is not None and self.result is not None:
            # which nodes the saved-tensor rules judge (rule_violations): those whose outputs
            # require grad, and of them those a backward runs
            spec = self.built.spec
            self.result.put("life:nodes", "requires_grad",
                            tuple(n for n, rg in sorted(self.node_requires_grad.items()) if rg))
            flow = Dataflow(spec)
            self.result.put("life:nodes", "backward_runs",
                            tuple(n for n in range(len(spec.functions)) if flow.backward_runs(n)))
        self.record(name, held)

    def on_saved(self, index: int, tensors: Sequence[torch.Tensor]) -> None:
        self.observe_saved(index, tensors)

    def on_run_end(self, result: RunResult) -> None:
        with stage("lifetime tracking"):
            if result.status != "error":
                self.check_released()
                self.check_memory(t for roles in result.tensors.values() for t in roles.values())
            self.store(result)

    def start_memory_baseline(self, device: torch.device) -> None:
        """On CUDA, remember the allocator's bytes in use now (before the leaves are made)."""
        baseline = devices.allocated_bytes(device)
        if baseline is not None:
            self.memory_device, self.memory_baseline = device, baseline

    def track(self, role: str, tensor: torch.Tensor) -> None:
        if role not in self.refs:
            self._watch(role, tensor)

    def _watch(self, role: str, tensor: torch.Tensor) -> None:
        self.refs[role] = torch._C._WeakTensorRef(tensor)
        self.addresses[role] = tensor._cdata

    def observe_saved(self, index: int, tensors: Iterable[torch.Tensor]) -> None:
        """Called by generated Functions with their saved intermediates."""
        for i, t in enumerate(tensors):
            role = f"saved:f{index}.{i}"
            self.saved[role] = index
            self._watch(role, t)

    def alive(self, role: str) -> bool:
        return not self.refs[role].expired()

    def record(self, checkpoint: str, held: dict[str, torch.Tensor]) -> None:
        """Counts of the tensors the runner holds, and liveness of everything tracked."""
        with stage("lifetime tracking"):
            self._record(checkpoint, held)

    def _record(self, checkpoint: str, held: dict[str, torch.Tensor]) -> None:
        refs = self.refs  # (the runner records a few dozen roles at each of its checkpoints)
        for role, t in held.items():
            if role not in refs:
                self._watch(role, t)
        # `t` is the runner's own Python object: reading it adds no TensorImpl reference
        self.records[checkpoint] = {role: (not ref.expired(), None if (t := held.get(role)) is None else t._use_count())
                                    for role, ref in refs.items()}  # (alive(role), ...)
        if self.probes is not None:
            weak, node = self.probes
            probe = {role: (weak(t), node(t)) for role, t in held.items()}
            if probe:
                self.probe_records[checkpoint] = probe

    def check_released(self) -> None:
        """After every reference is dropped: what is alive is a cycle (if gc frees it) or a leak,
        and what holds each is found (once per run, only where something is left)."""
        alive = [r for r in self.refs if self.alive(r)]
        if alive:
            self.cycle_roles, self.leaked_roles, self.holders = holder_search.release(alive, self.alive,
                                                                                    self.addresses)

    def check_memory(self, kept: Iterable[torch.Tensor | None]) -> None:
        """After drop_all, on CUDA: allocator bytes above the baseline beyond what `kept` (the
        result's own tensors) holds. Negative readings (garbage of an earlier run freed by our
        gc.collect()) count as 0."""
        if self.memory_device is None:
            return
        kept = list(kept)
        held = devices.held_bytes(kept, self.memory_device)

        def excess() -> int:
            return max(0, devices.allocated_bytes(self.memory_device) - self.memory_baseline - held)
        before_gc = excess()
        if before_gc:
            gc.collect()
        self.memory_excess = (before_gc, excess() if before_gc else 0)

    def store(self, result: Any) -> None:
        # (every observation is a tuple: result.put would file each under values)
        for checkpoint, roles in self.records.items():
            result.values.setdefault(LIFE + checkpoint, {}).update(roles)
        for checkpoint, roles in self.probe_records.items():
            result.values.setdefault(PROBE + checkpoint, {}).update(roles)
        result.put(LIFE + "released", "cycles", tuple(self.cycle_roles))
        result.put(LIFE + "released", "leaks", tuple(self.leaked_roles))
        result.holders = self.holders
        if self.memory_excess is not None:
            result.put(LIFE + "released", "cuda_bytes", self.memory_excess)


@dataclass(frozen=True)
class RuleViolation:
    checkpoint: str
    role: str
    detail: str


def rule_violations(result: Any, backward_mode: str, saved_tensors_hooks: bool = False) -> list[RuleViolation]:
    """The expected-lifetime rules (module docstring) applied to one path's result.

    With saved_tensors_hooks the pack hook decides what is kept (the harness's keeps a
    detached alias), so the rules about saved tensors do not apply."""
    life = {c[len(LIFE):]: roles for c, roles in result.values.items() if c.startswith(LIFE)}
    if not life:
        return []
    out: list[RuleViolation] = []
    released = life.get("released", {})
    for role in released.get("leaks", ()):
        out.append(RuleViolation("drop_all", role, "still alive after every reference was dropped (leak)"
                                 + _held(result, role)))
    for role in released.get("cycles", ()):
        out.append(RuleViolation("drop_all", role, "freed only by gc.collect(): held by a reference cycle"
                                 + _held(result, role)))
    before_gc, after_gc = released.get("cuda_bytes", (0, 0))
    if after_gc:
        out.append(RuleViolation("drop_all", "cuda_bytes", f"{after_gc} bytes of CUDA memory above the baseline "
                                 "after every reference was dropped (leak)"))
    elif before_gc:
        out.append(RuleViolation("drop_all", "cuda_bytes", f"{before_gc} bytes of CUDA memory freed only by "
                                 "gc.collect(): held by a reference cycle"))
    grad_nodes = {int(i) for i in result.values.get("life:nodes", {}).get("requires_grad", ())}
    saved = [r for r in life.get("forward", {}) if r.startswith("saved:") and _node(r) in grad_nodes
             and not saved_tensors_hooks]
    for role in saved:
        if not life["forward"][role][0]:
            out.append(RuleViolation("forward", role, "saved tensor released before backward"))
    errored = result.status == "error"
    after = {"backward": "backward", "grad": "backward", "retain": "backward2"}.get(backward_mode)
    # a partial backward runs only some nodes: the others keep their saved tensors
    ran = {int(i) for i in result.values.get("life:nodes", {}).get("backward_runs", grad_nodes)}
    if after and not errored and after in life:
        for role in (r for r in saved if _node(r) in ran):
            if life[after][role][0]:
                out.append(RuleViolation(after, role, "saved tensor still alive after a non-retaining backward"))
        if backward_mode == "retain":
            for role in saved:
                if not life["backward"][role][0]:
                    out.append(RuleViolation("backward", role, "saved tensor released despite retain_graph=True"))
    start, dropped = life.get("start", {}), life.get("drop_outputs", {})
    for role, (_, count) in start.items():
        if role in dropped and dropped[role][1] != count:
            out.append(RuleViolation("drop_outputs", role,
                                     f"use count {dropped[role][1]}, was {count} before the forward"
                                     + _held(result, role)))
    return out


#: the checkpoints of a run in a user's words
WHEN = {"forward": "after the forward", "backward": "after the backward",
        "drop_outputs": "once the outputs and the graph were dropped", "drop_all": "in the end"}


def in_words(checkpoint: str, role: str, detail: str) -> str:
    """A violation on a run of a user's own Function (harness.function_run's roles) in the user's words."""
    return f"{_role_text(role)} {WHEN.get(checkpoint, 'at ' + checkpoint)}: {detail}"


def _role_text(role: str) -> str:
    kind, _, n = role.rpartition(":") if ":" in role else ("", "", role)
    if kind == "saved":
        return f"saved tensor {n.split('.')[-1]} (as the graph holds it)"
    if kind == "saved_source":
        return f"the tensor passed to save_for_backward as saved tensor {n}"
    if kind == "out":
        return f"output {n}"
    if role.startswith("arg"):
        return f"argument {role[3:]} (the copy the Function was given)"
    if role.startswith("x"):
        return f"argument {role[1:]}'s leaf (what its gradient accumulates into)"
    return role


#: how a lifetime mismatch names the torch objects that held its tensors (separated by HOLDER_SEPARATOR)
HELD_BY = "; holder: "
HOLDER_SEPARATOR = " | "
#: the release checks a holder is named in: the rules' and the comparison with eager's
RELEASE_CHECKPOINTS = ("drop_outputs", "drop_all", LIFE + "drop_outputs", LIFE + "drop_all", LIFE + "released")


def _held(result: Any, *roles: str) -> str:
    """"; holder: H1 | H2", the torch objects found holding `roles` ("" when none is torch's:
    nothing was left alive, or the program itself held it). Where only some roles are held by
    torch's objects, the others' holder is named too: they are not torch's to explain."""
    holders = [result.holders.freed_by.get(r, holder_search.UNKNOWN) for r in roles]
    if not set(holders) & set(holder_search.TORCH_HOLDERS):
        return ""
    return HELD_BY + HOLDER_SEPARATOR.join(sorted(set(holders)))


def with_holders(result: Any, mismatches: list) -> list:
    """Name the holders in the release-check mismatches of `result` against another run (the
    comparison with eager at life:drop_outputs, life:drop_all and life:released): a role's own,
    or for life:released "leaks"/"cycles" those of every role `result` lists there."""
    def named(m: Any) -> Any:
        if m.checkpoint not in RELEASE_CHECKPOINTS[2:] or HELD_BY in m.detail:
            return m
        roles = result.values.get(LIFE + "released", {}).get(m.role, ()) if m.checkpoint == LIFE + "released" \
            else (m.role,)
        held = _held(result, *roles) if roles else ""
        return dataclasses.replace(m, detail=m.detail + held) if held else m
    return [named(m) for m in mismatches]


def held_by(m: Any) -> frozenset[str]:
    """The holders a lifetime mismatch names (none when it names none)."""
    _, named, holders = m.detail.rpartition(HELD_BY)
    return frozenset(holders.split(HOLDER_SEPARATOR)) if named else frozenset()


def _node(role: str) -> int:
    return int(role.split(":")[1].split(".")[0][1:])


def without_lifetimes(values: dict[str, dict[str, Any]], *, keep_life: bool) -> dict[str, dict[str, Any]]:
    """Drop probe observations (and life ones unless keep_life) from a result's values."""
    return {c: v for c, v in values.items()
            if not c.startswith(PROBE) and (keep_life or not c.startswith(LIFE))}


@contextlib.contextmanager
def tracking_lifetimes(enabled: bool = True) -> Iterator[None]:
    """Within this block, every run_graph not told otherwise records lifetimes (or, with
    enabled False, does not); the other observers registered stay as they are."""
    others = [make for make in registered_observers() if make != LifetimeTracker.for_run]
    with observing(*others, *([LifetimeTracker.for_run] if enabled else [])):
        yield


__all__ = ["HELD_BY", "LIFE", "PROBE", "RELEASE_CHECKPOINTS", "WHEN", "LifetimeTracker", "RuleViolation", "held_by", "in_words",
           "lifetime_probes", "rule_violations", "tracking_lifetimes", "with_holders", "without_lifetimes"]
