"""Which paths and devices a command checks: `--paths` and `--device` read into path objects
that can run here, with a one-sentence error (SystemExit) that names the fix.

The command line (harness.cli), the nightly campaign and its HypoFuzz target read them the
same way. harness.paths and harness.devices are imported when used, so that importing the
command line (`python -m harness --help`) does not import torch.
"""

from __future__ import annotations

import time


def selected_paths(text: str | None, built: list[float] | None = None) -> list:
    """The paths named (all available ones when None), each able to run here. built: gets the
    seconds the availability checks took (a one-time cost: the native paths' builds the extension)."""
    from harness import paths

    began = time.perf_counter()
    try:
        # (available_names asks every path whether it can run: the native ones build the extension)
        selected = paths.parse(text) if text else [paths.get(n) for n in paths.available_names()]
    except paths.UnknownPathError as e:
        raise SystemExit(f"error: {e}") from None
    for p in selected:
        why = p.available()
        if why is not None:
            raise SystemExit(f"error: path {p.name!r} cannot run here: {why}")
    if built is not None:
        built.append(time.perf_counter() - began)
    return selected


def selected_devices(text: str) -> tuple[str, ...]:
    """`--device` ("cpu", "cuda", "cpu,cuda") as device names."""
    from harness.devices import DeviceError, parse_devices

    try:
        return parse_devices(text)
    except DeviceError as e:
        raise SystemExit(f"error: {e}") from None


def on_devices(paths: list, devices: tuple[str, ...]) -> tuple[list, str]:
    """The first device checks every path; each further one adds every path again as
    "<path>@<device>" (harness.paths.OnDevicePath), judged against the first device's results."""
    from harness.paths import on_device

    return paths + [on_device(p, d) for d in devices[1:] for p in paths], devices[0]


def campaign_paths(paths: str | None, device: str) -> tuple[list, str]:
    """The paths and device a campaign checks, exactly as `fuzz --paths --device` gives them."""
    devices = selected_devices(device)  # first, so that a missing GPU is the error reported
    return on_devices(selected_paths(paths), devices)


__all__ = ["campaign_paths", "on_devices", "selected_devices", "selected_paths"]
