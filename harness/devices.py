"""Devices a run uses, and the care a GPU needs before its results can be compared.

`--device` takes "cpu", "cuda" or "cpu,cuda" (`parse_devices`). On CUDA, every run of a
graph happens inside `exact_float_math` (no TF32, no reduced-precision reductions: torch
documents both as trading accuracy for speed, so they would move results outside the
error bounds of harness.oracles.bounds), and the device is synchronised before anything
is read (`synchronize`). The lifetime oracle reads `allocated_bytes` to check that the
allocator returns to its baseline once a graph is dropped.

On CPU every function here is a no-op: CPU runs stay bit-identical to runs without them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import torch

DEVICES = ("cpu", "cuda")

#: documented worst-case error, in ulps, of sin, cos and tanh on CUDA, float32 and float64 alike
#: (CUDA C++ Programming Guide, "Mathematical Functions": sinf, cosf, tanhf, sin, cos, tanh, 2 ulps
#: over the full range; Triton's libdevice calls the same functions). The error bounds
#: (harness.oracles.bounds.LIBRARY_ULPS) must be at least this for CUDA results to be held to them.
CUDA_LIBRARY_ULPS = 2

#: the CUDA caching allocator hands out blocks in multiples of this many bytes
#: (c10/cuda/CUDACachingAllocator.cpp, kMinBlockSize), and memory_allocated counts blocks
CUDA_BLOCK_BYTES = 512


class DeviceError(ValueError):
    """A --device value that cannot run here; the message is one sentence with the fix."""


def cuda_unavailable_reason() -> str | None:
    """None when CUDA can run here, else one sentence saying why not and what to use."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        why = f"torch {torch.__version__} is a CPU-only build"
    else:
        why = f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU"
    return f"CUDA is not available here: {why}; use --device cpu."


def parse_devices(text: str) -> tuple[str, ...]:
    """'cpu', 'cuda' or 'cpu,cuda' -> the devices, each checked to be usable here."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in DEVICES]
    if not names or unknown:
        raise DeviceError(f"--device {text!r} is not a device list; use cpu, cuda or cpu,cuda.")
    if len(set(names)) != len(names):
        raise DeviceError(f"--device {text!r} names a device twice; use cpu, cuda or cpu,cuda.")
    if "cuda" in names:
        why = cuda_unavailable_reason()
        if why is not None:
            raise DeviceError(why)
    return names


def is_cuda(device: str | torch.device) -> bool:
    return torch.device(device).type == "cuda"


@contextlib.contextmanager
def exact_float_math(device: str | torch.device) -> Iterator[None]:
    """On CUDA: TF32 and fp16/bf16 reduced-precision reductions off, restored afterwards.

    TF32 (matmul and cuDNN convolution/RNN float32 inputs rounded to 10 mantissa bits) and
    allow_{fp16,bf16}_reduced_precision_reduction (cuBLAS reducing in the narrow type) are in
    the torch docs, "TensorFloat-32 (TF32) on Ampere (and later) devices" and "Reduced Precision
    Reduction". Neither is in the rounding model of the error bounds, so comparisons run with
    both off. On CPU nothing is touched.

    TF32 is set through the `fp32_precision` attributes where torch has them, and only through
    them: torch refuses to read the legacy setting (`get_float32_matmul_precision`) once both
    APIs were used ("mix of the legacy and new APIs"), and Dynamo restores the matmul precision
    through the new one after every frame it compiles (torch/_dynamo/convert_frame.py), so a
    legacy save and restore here broke every run after the first compile (seen on an H200, torch
    2.11). Older torch has the legacy API alone."""
    if not is_cuda(device):
        yield
        return
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    reductions = (matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction)
    with _ieee_float32(matmul, cudnn):
        try:
            matmul.allow_fp16_reduced_precision_reduction = False
            matmul.allow_bf16_reduced_precision_reduction = False
            yield
        finally:
            matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction = reductions


@contextlib.contextmanager
def _ieee_float32(matmul: Any, cudnn: Any) -> Iterator[None]:
    """float32 matmuls, convolutions and RNNs in IEEE float32 (no TF32), restored afterwards."""
    if hasattr(matmul, "fp32_precision"):  # the new API (torch >= 2.9)
        settings = (matmul, cudnn.conv, cudnn.rnn)
        saved = [s.fp32_precision for s in settings]
        try:
            for s in settings:
                s.fp32_precision = "ieee"
            yield
        finally:
            for s, precision in zip(settings, saved):
                s.fp32_precision = precision
        return
    saved_legacy = (matmul.allow_tf32, cudnn.allow_tf32, torch.get_float32_matmul_precision())
    try:
        matmul.allow_tf32 = cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = saved_legacy[:2]
        torch.set_float32_matmul_precision(saved_legacy[2])


def synchronize(device: str | torch.device) -> None:
    """Wait for the device's queued work (kernels run asynchronously) before reading results
    or the allocator's counters. No-op on CPU."""
    if is_cuda(device):
        torch.cuda.synchronize(device)


def allocated_bytes(device: str | torch.device) -> int | None:
    """Bytes the CUDA caching allocator has handed out on `device`; None off CUDA."""
    if not is_cuda(device):
        return None
    synchronize(device)
    return torch.cuda.memory_allocated(device)


def held_bytes(tensors: Iterable[torch.Tensor | None], device: str | torch.device) -> int:
    """What `memory_allocated` counts for the storages of `tensors` on `device`: each
    distinct storage once, rounded up to the allocator's block size (empty ones take none)."""
    target = torch.device(device)
    if target.index is None and target.type == "cuda":
        target = torch.device("cuda", torch.cuda.current_device())
    storages: dict[int, int] = {}
    for t in tensors:
        if t is None or t.device != target:
            continue
        storage = t.untyped_storage()
        if storage.nbytes():
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(-(-n // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES for n in storages.values())


__all__ = ["CUDA_BLOCK_BYTES", "CUDA_LIBRARY_ULPS", "DEVICES", "DeviceError", "allocated_bytes", "cuda_unavailable_reason",
           "exact_float_math", "held_bytes", "is_cuda", "parse_devices", "synchronize"]
