"""Execution paths: plug-ins behind one small interface and a registry.

A path applies each Function node of a built graph its own way; `run_graph` does the
rest. A path that cannot run a feature says so with `unsupported(spec)`, and the
harness counts that reason instead of passing the example silently.

A path that can run other subjects than a built graph (a user's own Function with a sample,
harness.function_check) also offers `run_with(observe)`: it hands `observe` its `Way` of
applying Functions and does around that run what it does around a graph's (isolation,
classification of compile failures, a fallback run), so every subject meets the same path code.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

import torch

from harness import devices
from harness.build import Applier, BuiltGraph, build
from harness.run import ForwardCompiler, RunResult, run_graph
from harness.spec import GraphSpec

if TYPE_CHECKING:
    from harness.paths.tracing import TraceRecorder


class Path(Protocol):
    name: str
    #: results are expected bit-identical to eager (same forward/backward code runs)
    exact_vs_eager: bool

    def available(self) -> str | None:
        """None when the path can run here, else why not (with the fix)."""

    def unsupported(self, spec: GraphSpec) -> str | None:
        """None when the path can run this spec, else a short stable reason."""

    def run(self, built: BuiltGraph) -> RunResult:
        """Run the graph; errors of torch or the Functions end up in the result."""


@dataclass(frozen=True)
class Way:
    """How a path applies what it runs (`run_with`)."""

    #: applies one Function
    apply: Applier
    #: wraps the backward phase (None: the backward runs as eager's)
    around: Callable[[], contextlib.AbstractContextManager] | None = None
    #: compiles the whole forward as one function (None: the forward runs as called)
    compile_forward: ForwardCompiler | None = None
    #: what the compiled forward's backend was given (harness.paths.tracing), where it compiles
    recorder: TraceRecorder | None = None

    @property
    def compiles(self) -> bool:
        """Whether the path compiles the forward or the backward (else it runs eager's own
        code apart from `apply`)."""
        return self.around is not None or self.compile_forward is not None


def graph_observer(built: BuiltGraph, name: str) -> Callable[[Way], RunResult]:
    """What `run_with` runs for a built graph: run_graph, the way the path applies it."""
    return lambda way: run_graph(built, way.apply, name, around=way.around, compile_forward=way.compile_forward)


def lifetimes_vs_eager_on(path: Path, spec: GraphSpec) -> bool:
    """Whether `path`'s lifetimes on `spec` are compared with eager's: its `lifetimes_vs_eager`, or
    its own per-spec `lifetimes_vs_eager_on` (compiled: not after an AOT create_graph backward)."""
    per_spec = getattr(path, "lifetimes_vs_eager_on", None)
    return per_spec(spec) if per_spec is not None else getattr(path, "lifetimes_vs_eager", True)


_REGISTRY: dict[str, Path] = {}
#: built-in paths, imported on first use so `import harness` stays light
_BUILTIN = {
    "eager": "harness.paths.eager",
    "owned": "harness.paths.native",
    "borrowed": "harness.paths.native",
    "compiled": "harness.paths.compiled",
    "dynamo": "harness.paths.dynamo",
    **{f"func.{t}{c}": "harness.paths.func"
       for t in ("grad", "vjp", "jvp", "vmap", "vmap.user", "vmap_grad", "grad_vmap", "jacrev", "jacfwd")
       for c in ("", "+dynamo")},
}


class UnknownPathError(ValueError):
    pass


class PathFamily:
    """Parametrised paths "<family>:<variant>" (e.g. "compiled:aot_eager"), each made once
    per process; "<family>" alone runs the variant named by the environment variable `env`
    (read when used), else `default`."""

    def __init__(self, family: str, what: str, variants: tuple[str, ...], default: str, env: str,
                 make: Callable[[str], Path]) -> None:
        self.family, self.what, self.variants, self.default, self.env = family, what, variants, default, env
        self._make = make
        self._made: dict[str, Path] = {}

    def variant(self, name: str) -> Path:
        if name not in self.variants:
            raise UnknownPathError(
                f"unknown {self.what} {name!r} in path '{self.family}:{name}'; valid {self.what}s: "
                f"{', '.join(self.variants)} (e.g. '{self.family}:{self.variants[-1]}').")
        if name not in self._made:
            self._made[name] = self._make(name)
        return self._made[name]

    def selected(self) -> Path:
        name = os.environ.get(self.env) or self.default
        if name not in self.variants:
            raise UnknownPathError(f"{self.env}={name!r} is not a {self.family} {self.what}; "
                                   f"choose one of {', '.join(self.variants)}.")
        return self.variant(name)


class SelectedVariantPath:
    """The path registered under a family's bare name: it runs as the selected variant, so
    results and reports name the variant ("compiled:capture")."""

    def __init__(self, family: PathFamily) -> None:
        self.name = family.family
        self.family = family

    def resolved(self) -> Path:
        return self.family.selected()

    @property
    def exact_vs_eager(self) -> bool:
        return self.resolved().exact_vs_eager

    @property
    def lifetimes_vs_eager(self) -> bool:
        return getattr(self.resolved(), "lifetimes_vs_eager", True)

    def lifetimes_vs_eager_on(self, spec: GraphSpec) -> bool:
        return lifetimes_vs_eager_on(self.resolved(), spec)

    @property
    def needs_backward(self) -> bool:
        return getattr(self.resolved(), "needs_backward", False)

    @property
    def runs_dynamo(self) -> bool:
        return getattr(self.resolved(), "runs_dynamo", False)

    def available(self) -> str | None:
        try:
            return self.resolved().available()
        except UnknownPathError as e:
            return str(e)

    def unsupported(self, spec: GraphSpec) -> str | None:
        return self.resolved().unsupported(spec)

    def run(self, built: BuiltGraph) -> RunResult:
        return self.resolved().run(built)

    def run_with(self, observe: Callable[[Way], RunResult]) -> RunResult:
        return self.resolved().run_with(observe)  # type: ignore[attr-defined]


class OnDevicePath:
    """`<path>@<device>`: a path run on another device than the check's, e.g. "eager@cuda".

    `--device cpu,cuda` checks every example on the CPU with the selected paths and again with
    each of them "@cuda": the same graph (same spec and seed, so the same leaf values, loss
    weights and tangents: they are drawn on the CPU and moved) built on CUDA. Its results are
    judged against the CPU's math oracle and the CPU's eager run, never bit for bit (other
    kernels round differently) but within the per-element error bounds of
    harness.oracles.bounds, which hold on every device (see harness.devices.LIBRARY_ULPS).

    Lifetimes are held to the expected-lifetime rules on their own device, CUDA memory
    included, and not compared with the CPU's checkpoint by checkpoint: the CUDA allocator
    check (`life:released` "cuda_bytes") has no CPU counterpart."""

    exact_vs_eager = False
    lifetimes_vs_eager = False

    def __init__(self, inner: Path, device: str) -> None:
        self.inner, self.device = inner, device
        self.name = f"{inner.name}@{device}"

    def available(self) -> str | None:
        if devices.is_cuda(self.device):
            why = devices.cuda_unavailable_reason()
            if why is not None:
                return why
        return self.inner.available()

    def unsupported(self, spec: GraphSpec) -> str | None:
        return self.inner.unsupported(spec)

    def run(self, built: BuiltGraph) -> RunResult:
        result = self.inner.run(build(built.spec, self.device))
        result.path = self.name
        return result


_ON_DEVICE: dict[tuple[str, str], OnDevicePath] = {}


def on_device(inner: Path, device: str) -> OnDevicePath:
    """`inner` run on `device` (one object per pair, as the registry keeps paths)."""
    if device not in devices.DEVICES:
        raise UnknownPathError(f"unknown device {device!r} in path '{inner.name}@{device}'; "
                               f"valid devices: {', '.join(devices.DEVICES)}.")
    key = (inner.name, device)
    if key not in _ON_DEVICE:
        _ON_DEVICE[key] = OnDevicePath(inner, device)
    return _ON_DEVICE[key]


_FAMILIES: dict[str, PathFamily] = {}


def register(path: Path) -> Path:
    _REGISTRY[path.name] = path
    return path


def register_family(family: PathFamily) -> SelectedVariantPath:
    _FAMILIES[family.family] = family
    return register(SelectedVariantPath(family))  # type: ignore[return-value]


def get(name: str) -> Path:
    base, at, device = name.partition("@")
    if at:  # "<path>@<device>": that path on another device (OnDevicePath)
        return on_device(get(base), device)
    family, colon, variant = name.partition(":")
    if colon and family in _BUILTIN:
        importlib.import_module(_BUILTIN[family])  # registers its family
    if colon and family in _FAMILIES:
        return _FAMILIES[family].variant(variant)
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])  # registers itself
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownPathError(
            f"unknown path {name!r}; valid paths: {', '.join(names())}.") from None


def names() -> list[str]:
    return list(dict.fromkeys([*_BUILTIN, *_REGISTRY]))


def parse(text: str) -> list[Path]:
    """'eager,owned' -> paths; an unknown name lists the valid ones. An opt-in family's name
    selects all of its paths: "func" every "func.<transform>", "func+dynamo" every
    "func.<transform>+dynamo"."""
    selected: list[Path] = []
    for name in (n.strip() for n in text.split(",")):
        family, _, suffix = name.partition("+")
        if family in OPT_IN_FAMILIES and name not in _BUILTIN:
            selected += [get(n) for n in names() if n.partition(".")[0] == family
                         and n.partition("+")[2] == suffix and n != family]
        elif name:
            selected.append(get(name))
    return selected


#: families left out of the default selection (campaigns and tests without --paths): the 18
#: torch.func paths would multiply the cost of every example; name them with --paths
OPT_IN_FAMILIES = ("func",)


def available_names(opt_in: bool = False) -> list[str]:
    """The paths that can run here: by default without the opt-in families."""
    return [n for n in names() if (opt_in or n.partition(".")[0] not in OPT_IN_FAMILIES)
            and get(n).available() is None]


def run_path(path: Path, built: BuiltGraph) -> RunResult:
    from harness.known_issues import avoided_crash

    reason = path.unsupported(built.spec)
    if reason is not None:
        return RunResult(path.name, status="unsupported", reason=reason)
    avoided = avoided_crash(built.spec, path.name)
    if avoided is not None:
        return avoided
    result = path.run(built)
    leaked = _close_leaked_dual_levels()
    if leaked and result.status != "error":
        # torch left forward AD on: what ran after it (the next path, the oracles) would fail
        # with "Nested forward mode AD is not supported". Closed here, and reported on this path.
        result.status, result.error_checkpoint = "error", "forward_ad"
        result.error = RuntimeError(f"the path left {leaked} forward-AD dual level(s) open")
    return result


def _close_leaked_dual_levels() -> int:
    """Exit a forward-AD level still open after a path ran; 1 if there was one, else 0.

    torch supports one level at a time (entering a second raises "Nested forward mode AD is
    not supported"), and a level left open by compiled code can be invisible to the Python
    bookkeeping (torch.autograd.forward_ad._current_level), so this probes the C++ side."""
    import torch.autograd.forward_ad as fwAD

    try:
        level = torch._C._enter_dual_level()
    except RuntimeError as e:
        if "Nested forward mode AD is not supported" not in str(e):
            raise
        torch._C._exit_dual_level(level=0)
        fwAD._current_level = -1
        return 1
    torch._C._exit_dual_level(level=level)
    return 0


__all__ = ["OnDevicePath", "Path", "PathFamily", "SelectedVariantPath", "UnknownPathError", "Way", "available_names", "get",
           "graph_observer", "names", "on_device", "parse", "register", "register_family", "run_path"]
