"""Faults in what a Function keeps alive: seen by the lifetime oracle only (values stay right)."""

from __future__ import annotations

import contextlib
import os
import time
import weakref

import torch

from harness import generic, plain, run
from harness.selfeval._patching import Patches

#: where `leak_input` keeps its extra references (emptied when the fault is removed)
LEAKED: list = []


def _after_setup(p: Patches, action) -> None:
    """Run `action(cls, ctx, args, outputs)` at the end of every generic Function's
    forward bookkeeping (generic._setup)."""
    def make(original):
        def _setup(cls, ctx, args, outputs, **options):  # a custom_op's setup_context passes needs_input_grad
            original(cls, ctx, args, outputs, **options)
            action(cls, ctx, args, outputs)
        return _setup
    p.wrap(generic, "_setup", make)


def leak_input(p: Patches) -> None:
    """A generic Function keeps its tensor inputs in a module-level list (plain Functions
    hold no module state, so they are unchanged)."""
    _after_setup(p, lambda cls, ctx, args, outputs: LEAKED.extend(a for a in args if isinstance(a, torch.Tensor)))
    p.on_undo(LEAKED.clear)


def ctx_cycle(p: Patches) -> None:
    """A Function stores an output on ctx directly (torch's docs: use save_for_backward):
    the output's grad_fn is the ctx, a reference cycle."""
    def store(cls, ctx, args, outputs):
        if cls.spec.tensor_outputs:
            ctx.cycle = outputs[cls.spec.tensor_outputs[0]]
    _after_setup(p, store)

    def make_plain(original):
        def setup(self, c):
            original(self, c)
            if self.spec.tensor_outputs:
                c.add(f"ctx.cycle = {self.outs[self.spec.tensor_outputs[0]]}  # self-test fault ctx_cycle")
        return setup
    p.wrap(plain._Writer, "setup", make_plain)


def drop_saved(p: Patches) -> None:
    """Saved tensors are packed as weak references, so they die before backward."""
    @contextlib.contextmanager
    def _saved_tensor_hooks(built):
        with torch.autograd.graph.saved_tensors_hooks(weakref.ref, lambda r: r()):
            yield
    p.set(run, "_saved_tensor_hooks", _saved_tensor_hooks)


# --- the campaign runner's isolation (not oracles): a process that dies or stalls --------------

WIDE = 24  # tensor inputs from which a Function kills or stalls the process


def crash_wide(p: Patches) -> None:
    """A generic Function with 24+ tensor inputs aborts the process."""
    _after_setup(p, lambda cls, ctx, args, outputs: os.abort() if len(cls.spec.tensor_slots) >= WIDE else None)


def hang_wide(p: Patches) -> None:
    """A generic Function with 24+ tensor inputs stalls for an hour."""
    _after_setup(p, lambda cls, ctx, args, outputs: time.sleep(3600) if len(cls.spec.tensor_slots) >= WIDE else None)
