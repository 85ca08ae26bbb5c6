"""Source-level reduction of a plain reproducer (harness/repro.py) with pysource-minimize.

Hypothesis shrinks the spec; what is left is Python source, and a Python-aware reducer
deletes from it what the failure does not need: statements, arguments, whole Functions,
branches, terms. pysource-minimize (on PyPI) works on the AST and keeps every candidate
compilable; it was chosen over shrinkray after measuring both on real reproducers
(docs/reduce.md).

The reducer may change the code above the script's CHECK_LINE only: the comparison below it
stays as written. A candidate is kept when it still fails the same way: exit status 1 and the
same FAILS line (the same path, reference, checkpoint and role; for an error, the same
exception types at the same checkpoints; for a metadata fact, the same values), and, for a
value compared under the harness's error bound, an error at least min(the original's
multiple of its bound, MARGIN) times the bound, so that a reduced computation whose rounding
merely differs from the original's (whose bound the script carries) never counts.

Each candidate runs in a child process with a timeout: forked from this process when torch is
imported here already (no second import of torch, about 1-2 s a candidate), else a fresh
interpreter. Reduction stops at its deadline with the smallest failing candidate so far.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

#: the lines of a plain reproducer (harness/repro.py writes them) around what the reducer may
#: change: the data before it and the comparison after it stay as written
CODE_LINE = "# Above, the data; below, the code (harness reduce deletes from it what the failure does not need):"
CHECK_LINE = "# The comparison that failed (harness reduce keeps it as written):"
#: how the script says that it failed (the reducer keeps candidates that print the same line)
FAILS = "FAILS: "
#: a value candidate must still exceed its bound by min(the original's multiple, MARGIN)
MARGIN = 100.0
#: the reducer in use, recorded in a reduced script's docstring
REDUCER = "pysource-minimize"
_RATIO = re.compile(r"^worst error / bound: (\S+)$", re.M)


def with_note(text: str, note: str) -> str:
    """The script with one more line at the end of its docstring."""
    end = text.find('"""', 3)
    return text[:end] + "\n" + note + text[end:]


def fails_line(output: str) -> str:
    """The script's FAILS line, or ""."""
    return next((line for line in output.splitlines() if line.startswith(FAILS)), "")


def ratio_of(output: str) -> float | None:
    m = _RATIO.search(output)
    return None if m is None else float(m[1])


def run_script(text: str, *, timeout: float, fresh: bool = False, filename: str = "<reproducer>"
               ) -> tuple[int | None, str]:
    """(exit status, stdout and stderr) of the script run as __main__ in a child process, or
    (None, output so far) when it ran past `timeout` and was killed. fresh: a new interpreter
    even where torch is imported here (how a user runs it)."""
    if not fresh and "torch" in sys.modules and hasattr(os, "fork"):
        return _forked(text, timeout, filename)
    try:
        done = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out
    return done.returncode, done.stdout + done.stderr


def _forked(text: str, timeout: float, filename: str) -> tuple[int | None, str]:
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the script, then leave without any of the parent's exit code
        code = 1
        try:
            os.close(read)
            os.dup2(write, 1)
            os.dup2(write, 2)
            code = _exec_in_child(text, filename)
        finally:
            os._exit(code)
    os.close(write)
    deadline = time.perf_counter() + timeout
    chunks: list[bytes] = []
    status = None
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None, b"".join(chunks).decode(errors="replace")
            ready, _, _ = select.select([read], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(read, 65536)
                if chunk:
                    chunks.append(chunk)
                    continue
                _, status = os.waitpid(pid, 0)  # end of output: the child is exiting
                break
    finally:
        os.close(read)
    code = os.waitstatus_to_exitcode(status)
    return code, b"".join(chunks).decode(errors="replace")


def _exec_in_child(text: str, filename: str) -> int:
    import torch

    torch.set_num_threads(1)  # OpenMP's pool belongs to the parent
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()  # as in a fresh process: nothing compiled by the parent is reused
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    code = 0
    try:
        exec(compile(text, filename, "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as e:  # as Python ends on it: a message goes to stderr, with status 1
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 -- reported as Python would, with its exit status
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


# --- reduction --------------------------------------------------------------------------------------


class _TimeUp(Exception):
    pass


@dataclass
class Reduced:
    text: str
    lines_before: int
    lines_after: int
    chars_before: int
    chars_after: int
    candidates: int
    seconds: float
    #: "complete" (the reducer found nothing more to delete), "time cap", or "not reproduced" (the
    #: failure did not show again: a flaky one)
    ended: str


def split(text: str) -> tuple[str, str, str]:
    """(header: docstring, imports and the data, up to CODE_LINE; body: what may be reduced;
    check: CHECK_LINE onwards)."""
    if CHECK_LINE not in text or CODE_LINE not in text:
        raise ValueError(f"this file has no line {CHECK_LINE!r}: it is not a plain reproducer the harness "
                         "wrote (a script that runs the harness cannot be reduced); write it again with "
                         "`python -m harness fuzz` or give a plain one.")
    above, check = text.split(CHECK_LINE, 1)
    header, body = above.split(CODE_LINE, 1)
    return header + CODE_LINE, body, CHECK_LINE + check


def _tidy(body: str) -> str:
    """ast.unparse's output with two blank lines before each top-level def and class."""
    out: list[str] = []
    for line in body.strip("\n").splitlines():
        if line.startswith(("def ", "class ", "@")) and out and not out[-1].startswith("@"):
            while out and out[-1] == "":
                out.pop()
            out += ["", ""]
        if line == "" and out and out[-1].startswith("class ") and out[-1].endswith(":"):
            continue  # ast.unparse puts an empty line after each class header
        out.append(line)
    return "\n".join(out) + "\n"


def reduce_text(text: str, *, until: float, timeout: float | None = None,
                first: tuple[int | None, str] | None = None, fresh: bool = False) -> Reduced:
    """The smallest variant of the script found by `until` that still fails the same way.
    first: (exit status, output) of a run of `text` just made (it is not run again); fresh: each
    candidate in a new interpreter (run_script)."""
    try:
        import pysource_minimize
    except ModuleNotFoundError:
        raise ModuleNotFoundError("reduction needs pysource-minimize: pip install -e '.[reduce]'") from None

    started = time.perf_counter()
    header, body, check = split(text)
    code, output = first or run_script(text, timeout=timeout or max(1.0, until - started), fresh=fresh)
    fails = fails_line(output)
    if code != 1 or not fails:
        raise ValueError(f"the script does not fail (exit status {code}, no {FAILS!r} line): nothing to reduce. "
                         f"Its output ends:\n{output[-1500:]}")
    first_run = time.perf_counter() - started if first is None else 10.0
    ratio = ratio_of(output)
    needed = None if ratio is None else min(ratio, MARGIN)
    # a candidate may take longer than the first run (a busy machine, a longer path through the
    # code): only one that runs far past it counts as not failing
    per_run = timeout or max(60.0, 5 * first_run)
    best = [body]
    tried = [0]
    answers: dict[str, bool] = {}  # the reducer asks again about a candidate it saw (its own checks)

    def same_failure(candidate: str) -> bool:
        if candidate in answers:
            return answers[candidate]
        left = until - time.perf_counter()
        if left <= 1.0:
            raise _TimeUp
        tried[0] += 1
        answers[candidate] = interesting(candidate, left)
        return answers[candidate]

    def interesting(candidate: str, left: float) -> bool:
        code, output = run_script(header + "\n\n" + candidate + "\n\n\n" + check, timeout=min(per_run, left),
                                  fresh=fresh)
        if code != 1 or fails_line(output) != fails:
            if os.environ.get("HARNESS_REDUCE_DEBUG"):
                print(f"--- candidate rejected: exit {code}\n{output[-800:]}", file=sys.stderr)
            return False
        if needed is not None and (ratio_of(output) or 0.0) < needed:
            return False
        if len(candidate) < len(best[0]):
            best[0] = candidate
        return True

    try:
        pysource_minimize.minimize(body, same_failure)
        ended = "complete"
    except _TimeUp:
        ended = "time cap"
    except (pysource_minimize.CouldNotMinimize, ValueError):  # a flaky failure: the unparsed original did not fail again
        ended = "not reproduced"
    reduced_body = best[0] if best[0] == body else _tidy(best[0])
    before = text.count("\n")
    result = header + ("\n\n" if best[0] != body else "") + reduced_body + ("\n\n" if best[0] != body else "") + check
    seconds = time.perf_counter() - started
    if best[0] != body:
        result = with_note(result, f"Reduced by {REDUCER} from {before} lines ({tried[0]} candidates, {seconds:.0f} s).")
    if len(result) >= len(text):  # ast.unparse's spelling and the note cost more than was deleted
        result = with_note(text, f"Not reduced: {REDUCER} found nothing shorter that fails the same way "
                                 f"({tried[0]} candidates, {seconds:.0f} s, {ended}).")
    return Reduced(result, before, result.count("\n"), len(text), len(result), tried[0], seconds, ended)


def reduce_file(path: str | Path, *, budget_s: float, out: str | Path | None = None, fresh: bool = False) -> Reduced:
    """Reduce the plain reproducer at `path` within `budget_s`; the result replaces it (or goes to `out`)."""
    path = Path(path)
    reduced = reduce_text(path.read_text(), until=time.perf_counter() + budget_s, fresh=fresh)
    Path(out or path).write_text(reduced.text)
    return reduced


__all__ = ["CHECK_LINE", "CODE_LINE", "FAILS", "MARGIN", "REDUCER", "Reduced", "fails_line", "reduce_file", "reduce_text",
           "run_script", "split", "with_note"]
