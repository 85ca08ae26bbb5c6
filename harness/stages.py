"""The stages of an example that `python -m harness profile` times (harness/profile.py).

check() and the code it calls report their stages to the timer set in `STAGE_TIMER` (a
context variable, None outside profiling: nothing is timed then). Kept apart from check()
so that the runner and the lifetime oracle, which check() imports, can report theirs too.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

#: while profiling, the timer that stages are reported to: an object whose stage(name) is a
#: context manager. None (the default): nothing is timed.
STAGE_TIMER: contextvars.ContextVar = contextvars.ContextVar("stage_timer", default=None)


def stage(name: str) -> contextlib.AbstractContextManager:
    """Time what runs inside as the stage `name` (exclusive: a stage entered inside counts for itself)."""
    timer = STAGE_TIMER.get()
    return contextlib.nullcontext() if timer is None else timer.stage(name)


@contextlib.contextmanager
def whole_stage(name: str) -> Iterator[None]:
    """Time everything that runs inside as the stage `name`, the stages it enters included."""
    timer = STAGE_TIMER.get()
    if timer is None:
        yield
        return
    with timer.stage(name):
        token = STAGE_TIMER.set(None)
        try:
            yield
        finally:
            STAGE_TIMER.reset(token)


__all__ = ["STAGE_TIMER", "stage", "whole_stage"]
