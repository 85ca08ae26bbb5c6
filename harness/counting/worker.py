"""The process callgrind runs: import torch once, then count many regions.

    python -m harness.counting.worker SPEC.json OUT.json

SPEC (written by `harness.counting.callgrind`) lists cases and regions in order. For
each region the worker prepares everything outside collection (inputs, argument tuples,
the graphs a backward region consumes), warms the region through the same loop code
(see `Counter`), then switches collection on around the counted repetitions, in chunks,
dumping each chunk under ``<region label>.<k>``. Loop-only regions (the same loops with
the counted call removed) let the parent subtract loop and toggle overhead exactly.

OUT records, per region, whether it was dumped, unsupported (with the reason) or raised
(the workload's own error, recorded so the batch goes on); errors of the worker itself
propagate.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


class RegionUnsupported(Exception):
    """This region cannot run here; the message is the reason."""


# --- collection control -----------------------------------------------------------------


class ClientRequests:
    """Callgrind client requests through the small C helper built by the parent.

    Instrumentation starts only after torch is imported (valgrind runs with
    --instr-atstart=no), which makes start-up several times faster, and every dump is
    labelled, so dump files map to regions by name.
    """

    def __init__(self, library: str) -> None:
        lib = ctypes.CDLL(library)
        for name in ("cg_start_instrumentation", "cg_toggle_collect", "cg_nop", "cg_dump_stats_at"):
            getattr(lib, name).restype = None
        lib.cg_dump_stats_at.argtypes = [ctypes.c_char_p]
        lib.cg_running_on_valgrind.restype = ctypes.c_int
        self.under_valgrind = bool(lib.cg_running_on_valgrind())
        self.start_instrumentation: Callable[[], None] = lib.cg_start_instrumentation
        self.start: Callable[[], Any] = lib.cg_toggle_collect
        self.stop: Callable[[], Any] = lib.cg_toggle_collect
        # Same kind of callable as start/stop, so warm-up specialises the same call sites.
        self.nop: Callable[[], Any] = lib.cg_nop
        self._dump = lib.cg_dump_stats_at

    def dump(self, label: str) -> None:
        self._dump(label.encode())


# --- the counted loops ------------------------------------------------------------------
# Each pair differs only by the counted call; the parent subtracts the loop-only region.


def _forward_region(call: Callable[..., Any], args: tuple[Any, ...], outs: list[Any],
                    start: Callable[[], Any], stop: Callable[[], Any]) -> None:
    start()
    for i in range(len(outs)):
        outs[i] = call(*args)  # outputs stay alive: their teardown is not part of apply
    stop()


def _forward_loop_region(call: Callable[..., Any], args: tuple[Any, ...], outs: list[Any],
                         start: Callable[[], Any], stop: Callable[[], Any]) -> None:
    start()
    for i in range(len(outs)):
        outs[i] = args
    stop()


def _backward_region(run_backward: Callable[..., Any], items: list[tuple[Any, Any]],
                     start: Callable[[], Any], stop: Callable[[], Any]) -> None:
    start()
    for outputs, grads in items:
        run_backward(outputs, grads, False, False, (), True, True)
    stop()


def _backward_loop_region(run_backward: Callable[..., Any], items: list[tuple[Any, Any]],
                          start: Callable[[], Any], stop: Callable[[], Any]) -> None:
    start()
    for outputs, grads in items:
        pass
    stop()


# --- paths --------------------------------------------------------------------------------


class Paths:
    """How each path applies one Function: directly (single-Function workloads) and as a
    graph applier. Native paths call the extension's C entry (``apply_<holder>(cls,
    args)``) when the facade exposes it, so the facade's Python frame is not counted."""

    def __init__(self, native_module: Any, native_reason: str | None) -> None:
        self._native = native_module
        self._native_reason = native_reason
        entries = getattr(native_module, "_apply_fns", None) or {}
        self._entries: dict[str, Callable[..., Any]] = dict(entries)
        self.native_entry = ("extension" if self._entries else "facade") if native_module else None

    @staticmethod
    def backward_engine(path: str) -> Callable[[], contextlib.AbstractContextManager[Any]]:
        """What the backward runs under: compiled autograd with the capture-only compiler
        (the captured graph runs as it is; `harness.paths.compiled`'s default mode) on the
        compiled path, the eager engine otherwise."""
        if path != "compiled":
            return contextlib.nullcontext
        from torch._dynamo import compiled_autograd

        from harness.paths.compiled import compiler_fn

        return lambda: compiled_autograd._enable(compiler_fn("capture"))

    def _require_native(self) -> Any:
        if self._native is None:
            raise RegionUnsupported(self._native_reason or "harness.native is not available")
        return self._native

    def direct(self, path: str, cls: Any,
               make_inputs: Callable[[], tuple]) -> tuple[Callable[..., Any], Callable[[], tuple]]:
        """(call, make_args): the counted call is ``call(*make_args())``."""
        if path in ("eager", "compiled"):  # compiled autograd runs the eager forward
            return cls.apply, make_inputs
        native = self._require_native()
        entry = self._entries.get(path)
        if entry is None:
            return functools.partial(native.apply, cls, holder=path), make_inputs
        # What the facade does per call (binding forward's defaults) happens outside the region.
        bind = getattr(native, "_bind_default_args", lambda c, args: args)
        return functools.partial(entry, cls), lambda: (bind(cls, make_inputs()),)

    def applier(self, path: str) -> Callable[[int, Any, Sequence[Any]], Any]:
        if path in ("eager", "compiled"):
            return lambda n, cls, args: cls.apply(*args)
        native_apply = self._require_native().apply
        return lambda n, cls, args: native_apply(cls, *args, holder=path)


def _unsupported_reason(native: Any, error: BaseException) -> str | None:
    unsupported = getattr(native, "Unsupported", None) if native is not None else None
    if isinstance(error, RegionUnsupported) or (unsupported is not None and isinstance(error, unsupported)):
        return str(error) or type(error).__name__
    return None


# --- regions ------------------------------------------------------------------------------


def _call_and_args(workload: Any, path: str, paths: Paths) -> tuple[Callable[..., Any], Callable[[], tuple]]:
    if workload.function is not None:
        return paths.direct(path, workload.function, workload.make_inputs)
    call = functools.partial(workload.graph, paths.applier(path))
    return call, lambda: (workload.make_inputs(),)


def _differentiable(outputs: Any) -> tuple[Any, ...]:
    import torch

    flat = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return tuple(o for o in flat if isinstance(o, torch.Tensor) and o.requires_grad)


class Counter:
    """Runs one region: prepare, warm, count in chunks, dump each chunk.

    Warm-up runs at least as many repetitions as are counted, through the same loop
    code, and frees what it made before counting: Python's specialising interpreter
    then settles on this case's types, and malloc's thread cache (enlarged through
    GLIBC_TUNABLES by the parent) holds enough freed blocks of every size the region
    allocates, so its cost depends little on which regions ran before. The counted
    repetitions run in `chunks` equal chunks, each dumped as ``<label>.<k>``: the parent
    takes the median chunk, so a one-off event (an arena or a table growing) in one
    chunk does not move the result.
    """

    def __init__(self, control: Any, reps: int, warmup: int, chunks: int) -> None:
        import torch

        self.control = control
        self.chunk_reps = reps // chunks
        self.chunks = chunks
        self.warmup = max(warmup, reps)
        self.run_backward = torch.autograd.Variable._execution_engine.run_backward

    def forward(self, call: Callable[..., Any] | None, args: tuple, label: str,
                loop_only: bool = False) -> None:
        region: Callable[..., None] = _forward_loop_region if loop_only else _forward_region
        c = self.control
        warm: list[Any] = [None] * self.warmup
        region(call, args, warm, c.nop, c.nop)
        # One warm output stays alive: its graph keeps the inputs' grad accumulators, so
        # every counted apply finds them (the steady state), not only the later ones.
        keep_alive = warm[-1]
        del warm
        counted = [[None] * self.chunk_reps for _ in range(self.chunks)]
        for k, outs in enumerate(counted):
            region(call, args, outs, c.start, c.stop)
            c.dump(f"{label}.{k}")
        del keep_alive

    def backward(self, call: Callable[..., Any] | None, make_args: Callable[[], tuple] | None,
                 label: str,
                 engine: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
                 ) -> None:
        """Count the backward of fresh graphs made by ``call(*make_args())``. `engine` is
        entered around the warm-up and around each counted chunk (outside collection):
        under compiled autograd the warm-up's first backward captures the graph and every
        later one, counted or not, runs the cached graph. A capture inside a counted
        chunk (a cache miss) makes the region fail instead of counting the capture."""
        region: Callable[..., None]
        keep: list[Any]
        if call is None or make_args is None:
            region, keep = _backward_loop_region, []
            warm = [((), ())] * self.warmup
            counted = [[((), ())] * self.chunk_reps for _ in range(self.chunks)]
        else:
            region = _backward_region
            warm, warm_keep = self._graphs(call, make_args, self.warmup)
            counted, keep = [], []
            for _ in range(self.chunks):
                items, inputs = self._graphs(call, make_args, self.chunk_reps)
                counted.append(items)
                keep.append(inputs)
        c = self.control
        with engine():
            region(self.run_backward, warm, c.nop, c.nop)
        del warm  # frees the warm graphs (and their inputs) before counting
        if call is not None:
            del warm_keep
        captures = _captures()
        for k, items in enumerate(counted):
            with engine():
                region(self.run_backward, items, c.start, c.stop)
            c.dump(f"{label}.{k}")
        del keep
        if _captures() != captures:
            raise RuntimeError(f"compiled autograd captured {_captures() - captures} new graph(s) "
                               "during the counted repetitions (a cache miss): the count would "
                               "include capture, so it is not reported")

    @staticmethod
    def _graphs(call: Callable[..., Any], make_args: Callable[[], tuple],
                count: int) -> tuple[list[tuple[Any, Any]], list[Any]]:
        """`count` fresh graphs: (differentiable outputs, their grads), and their inputs."""
        import torch

        items, inputs = [], []
        for _ in range(count):
            args = make_args()
            outputs = _differentiable(call(*args))
            if not outputs:
                raise RegionUnsupported("no differentiable outputs to backward through")
            items.append((outputs, tuple(torch.ones_like(o) for o in outputs)))
            inputs.append(args)
        return items, inputs


def _warm_compiled_autograd() -> None:
    """One throwaway capture before instrumentation starts: the first capture in a
    process imports and initialises most of Dynamo and FX, which under instrumentation
    would cost minutes. Its graph (a Function of its own) is never counted."""
    import torch

    class Warm(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            return grad

    with Paths.backward_engine("compiled")():
        Warm.apply(torch.ones(2, requires_grad=True)).sum().backward()


def _captures() -> int:
    """Compiled autograd's graph captures so far in this process (0 before any)."""
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    if dynamo_utils is None:
        return 0
    return int(dynamo_utils.counters["compiled_autograd"]["captures"])


def _run_region(counter: Counter, region: dict[str, Any], workloads: dict[int, Any],
                paths: Paths, native: Any) -> dict[str, Any]:
    phase, label = region["phase"], region["label"]
    record: dict[str, Any] = {"label": label}
    # Python's method cache is global and keyed by type version tags and name addresses;
    # entries left by earlier regions would collide with this region's differently in
    # each selection. Start every region from an empty cache.
    sys._clear_type_cache()
    if phase == "forward-loop":
        counter.forward(None, (), label, loop_only=True)
        return {**record, "status": "dumped"}
    if phase == "backward-loop":
        counter.backward(None, None, label)
        return {**record, "status": "dumped"}
    workload = workloads[region["case"]]
    if isinstance(workload, BaseException):
        return {**record, "status": "error", "reason": _describe(workload)}
    try:
        call, make_args = _call_and_args(workload, region["path"], paths)
        if phase == "forward":
            counter.forward(call, make_args(), label)
        else:
            counter.backward(call, make_args, label, paths.backward_engine(region["path"]))
    except Exception as e:  # noqa: BLE001  the workload's own error: recorded (bench exits 1), batch goes on
        reason = _unsupported_reason(native, e)
        if reason is not None:
            return {**record, "status": "unsupported", "reason": reason}
        return {**record, "status": "error", "reason": _describe(e)}
    return {**record, "status": "dumped"}


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2:
        print("usage: python -m harness.counting.worker SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec_path, out_path = argv
    with open(spec_path) as f:
        spec = json.load(f)

    import torch

    from harness.counting.callgrind import load_native
    from harness.counting.cases import CaseSpec, resolve_factory

    torch.set_num_threads(1)
    control = ClientRequests(spec["client_requests"])
    native, native_reason = load_native(spec["paths"])
    paths = Paths(native, native_reason)

    workloads: dict[int, Any] = {}
    inputs: dict[int, int | None] = {}
    for index, plain in enumerate(spec["cases"]):
        case = CaseSpec.from_plain(plain)
        try:
            workloads[index] = resolve_factory(case.factory)(**case.params)
            inputs[index] = len(workloads[index].make_inputs())
        except Exception as e:  # noqa: BLE001  a bad factory fails its own regions, not the batch
            workloads[index], inputs[index] = e, None

    if "compiled" in spec["paths"]:
        _warm_compiled_autograd()
    counter = Counter(control, spec["reps"], spec["warmup"], spec["chunks"])
    # Nothing below creates cycles; a collection inside a region would be counted.
    gc.collect()
    gc.freeze()
    gc.disable()
    ready = time.time()
    control.start_instrumentation()
    records = []
    for region in spec["regions"]:
        t0 = time.perf_counter()
        record = _run_region(counter, region, workloads, paths, native)
        record["seconds"] = time.perf_counter() - t0
        records.append(record)
    finished = time.time()

    result = {
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "under_valgrind": control.under_valgrind,
        "native_entry": paths.native_entry,
        "ready_at": ready,
        "finished_at": finished,
        "inputs": {str(k): v for k, v in inputs.items()},
        "regions": records,
    }
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
