"""`<path>@<device>`: a path run on another device than the check's, e.g. "eager@cuda".

`--device cpu,cuda` checks every example on the CPU with the selected paths and again with
each of them "@cuda": the same graph (same spec and seed, so the same leaf values, loss
weights and tangents: they are drawn on the CPU and moved) built on CUDA. Its results are
judged against the CPU's math oracle and the CPU's eager run, never bit for bit (other
kernels round differently) but within the per-element error bounds of
harness.oracles.bounds, which hold on every device (see harness.devices.LIBRARY_ULPS).

Lifetimes are held to the expected-lifetime rules on their own device, CUDA memory
included, and not compared with the CPU's checkpoint by checkpoint: the CUDA allocator
check (`life:released` "cuda_bytes") has no CPU counterpart.
"""

from __future__ import annotations

from harness import devices
from harness.build import BuiltGraph, build
from harness.paths import Path, UnknownPathError
from harness.run import RunResult
from harness.spec import GraphSpec


class OnDevicePath:
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


_MADE: dict[tuple[str, str], OnDevicePath] = {}


def on_device(inner: Path, device: str) -> OnDevicePath:
    """`inner` run on `device` (one object per pair, as the registry keeps paths)."""
    if device not in devices.DEVICES:
        raise UnknownPathError(f"unknown device {device!r} in path '{inner.name}@{device}'; "
                               f"valid devices: {', '.join(devices.DEVICES)}.")
    key = (inner.name, device)
    if key not in _MADE:
        _MADE[key] = OnDevicePath(inner, device)
    return _MADE[key]


__all__ = ["OnDevicePath", "on_device"]
