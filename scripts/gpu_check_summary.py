"""The summary lines of scripts/gpu-check.sh, from its campaign JSON files and test log.

    python scripts/gpu_check_summary.py --tests-log pytest.log --tests-rc 0 \
        --campaign cuda=campaign-cuda.json:0 --campaign cpu,cuda=campaign-cpu-cuda.json:0 \
        --wall-seconds 400

Prints the summary; exits 0 when the tests and every campaign passed, else 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

#: the tests whose outcome is the memory-baseline check (harness/oracles/lifetimes.py)
MEMORY_TESTS = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED)\S* (\S*memory\S*)", re.MULTILINE)
#: a campaign failure that is the CUDA memory rule
MEMORY_FAILURE = "cuda_bytes"


def campaign_lines(device: str, file: Path, rc: int) -> tuple[list[str], bool]:
    """(lines, passed) for one campaign's JSON summary."""
    if not file.is_file():
        return [f"campaign on {device}: no summary (exit {rc}); see {file.with_suffix('.log').name}"], False
    data = json.loads(file.read_text())
    lines = [(f"campaign on {device}: {data['examples']} examples ({data['examples_with_backward']} with a "
              f"backward) in {data['seconds']:.0f} s, torch {data['torch']}, exit {rc}"),
             f"  {'path':<26} {'checked':>8} {'ok':>6} {'failed':>7} {'unsupported':>12}"]
    for name, c in data["paths"].items():
        lines.append(f"  {name:<26} {c['checked']:>8} {c['ok']:>6} {c['failed']:>7} "
                     f"{sum(c['unsupported'].values()):>12}")
        lines += [f"  {'':<26}   unsupported: {reason} ({n})" for reason, n in sorted(c["unsupported"].items())]
        lines += [f"  {'':<26}   known torch issue: {issue} ({n})" for issue, n in sorted(c["known"].items())]
    failures = data["failures"]
    memory = [f for f in failures if MEMORY_FAILURE in f["signature"]]
    if "cuda" in device:
        lines.append(f"  memory baseline (CUDA allocator back to its baseline after drop_all, on every "
                     f"lifetime-checked CUDA run): {len(memory)} distinct failure(s)")
    lines.append(f"  {len(failures)} distinct failure(s)" + (":" if failures else ""))
    cross = "," in device  # each path on the CPU and again as <path>@cuda: say where a cause shows
    lines += [f"    x{f['count']} on {','.join(f['paths'])}: {f['signature']}"
              + (f" [{devices_seen(f['paths'])}]" if cross else "") for f in failures]
    return lines, rc == 0 and not failures and data["examples"] > 0


def devices_seen(paths: list[str]) -> str:
    """Where a cause of a cpu,cuda campaign showed: a cause on `<path>@cuda` alone is CUDA's own;
    one on the CPU paths too is the torch release's (or the harness'), whatever the device."""
    on_cuda = sum(p.endswith("@cuda") for p in paths)
    return "CUDA only" if on_cuda == len(paths) else "CPU only" if not on_cuda else "CPU and CUDA"


def test_lines(log: Path, rc: int) -> tuple[list[str], bool]:
    text = log.read_text() if log.is_file() else ""
    tail = next((line for line in reversed(text.splitlines()) if re.search(r"\d+ (passed|failed|error)", line)),
                f"no pytest result line (exit {rc})")
    lines = [f"tests/cuda: {tail.strip('= ')}"]
    lines += [f"  memory-baseline test {name}: {outcome}" for outcome, name in MEMORY_TESTS.findall(text)]
    return lines, rc == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tests-log", type=Path, required=True)
    p.add_argument("--tests-rc", type=int, required=True)
    p.add_argument("--campaign", action="append", default=[], metavar="DEVICE=FILE:RC")
    p.add_argument("--wall-seconds", type=int, required=True)
    args = p.parse_args(argv)
    lines, passed = test_lines(args.tests_log, args.tests_rc)
    for item in args.campaign:
        device, _, rest = item.partition("=")
        file, _, rc = rest.rpartition(":")
        more, ok = campaign_lines(device, Path(file), int(rc))
        lines += more
        passed &= ok
    lines.append(f"wall time: {args.wall_seconds} s (limit 480 s)")
    lines.append("result: " + ("PASSED" if passed else "FAILED"))
    print("\n".join(lines))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
