"""Fuzzing workers started before the campaign's own process imports torch.

A worker's start-up is mostly imports (torch, torch._dynamo, Hypothesis: about 5 s on these
2-core machines), and so is the command line's own before it can start one (choosing the paths
needs torch too). Started one after the other, both are taken from the budget; `fuzz` therefore
starts its first workers at once, as `python -m harness.workers -`: each imports what a worker
needs, then waits for its config file's path on stdin (harness.workers.run_parallel writes it
there). A worker given no path (stdin closed: the command line stopped on bad input, or ran no
campaign) exits without doing anything.

This module imports neither torch nor the rest of the harness, so that it can run first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: what a prestarted worker reads its config file's path from: its first argument
WAIT_FOR_CONFIG = "-"


@dataclass
class Prestarted:
    """A worker process waiting for its config: its records come on `read_fd`; `write_fd` is the
    number of the pipe's writing end in the worker (the config's "fd"), closed in this process.
    `taken`: a campaign took it (harness.workers.run_parallel), and it is that campaign's to stop."""

    process: subprocess.Popen
    read_fd: int
    write_fd: int
    taken: bool = False


def prestart_workers(count: int, scratch: Path) -> list[Prestarted]:
    """`count` workers importing side by side with this process; each one's output goes to
    scratch/w<i>.0.log, as a worker harness.workers starts itself would write."""
    started = []
    for index in range(count):
        read_fd, write_fd = os.pipe()
        with open(scratch / f"w{index}.0.log", "w") as log:
            process = subprocess.Popen([sys.executable, "-m", "harness.workers", WAIT_FOR_CONFIG],
                                       pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=log,
                                       stdin=subprocess.PIPE, text=True)
        os.close(write_fd)
        started.append(Prestarted(process, read_fd, write_fd))
    return started


def stop_unused(started: list[Prestarted]) -> None:
    """Stops the workers no campaign took: killed at once, not left to finish their imports."""
    for worker in started:
        if not worker.taken:
            worker.taken = True
            worker.process.kill()
            worker.process.wait()
            if worker.process.stdin is not None:
                worker.process.stdin.close()
            os.close(worker.read_fd)


__all__ = ["WAIT_FOR_CONFIG", "Prestarted", "prestart_workers", "stop_unused"]
