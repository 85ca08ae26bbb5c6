"""Probe pins and tensor lifetimes: saved tensors die after a non-retaining
backward, and everything dies with the outputs, on every path."""

from __future__ import annotations

import weakref

import pytest
import torch

PATHS = ("eager", "owned", "borrowed")
NATIVE = ("owned", "borrowed")


class SaveIntermediate(torch.autograd.Function):
    """Saves an intermediate and an output; reports weak handles to both and to ctx."""

    handles: dict = {}

    @staticmethod
    def forward(ctx, x):
        tmp = x * 2
        out = tmp.sin()
        other = x * 3
        ctx.save_for_backward(tmp, out)
        SaveIntermediate.handles = {
            "intermediate": torch._C._WeakTensorRef(tmp),
            "ctx": weakref.ref(ctx),
        }
        return out, other

    @staticmethod
    def backward(ctx, g_out, g_other):
        tmp, out = ctx.saved_tensors
        return g_out * 2 * tmp.cos() + g_other * 3


def alive(handle) -> bool:
    if isinstance(handle, weakref.ref):
        return handle() is not None
    return not handle.expired()


# --------------------------------------------------------------------------- probes


def test_weak_use_count_fresh_tensor_reads_one(native):
    assert native.weak_use_count(torch.randn(3)) == 1


def test_weak_use_count_counts_weak_tensor_refs(native):
    t = torch.randn(3)
    ref = torch._C._WeakTensorRef(t)
    assert native.weak_use_count(t) == 2
    del ref
    assert native.weak_use_count(t) == 1


def test_python_list_holds_the_pyobject_not_the_tensorimpl(native):
    t = torch.randn(3)
    held = [t, t]
    assert (t._use_count(), native.weak_use_count(t)) == (1, 1)
    del held


class ProbeInForward(torch.autograd.Function):
    """Reads the inputs' TensorImpl counts while apply holds them."""

    counts: list = []

    @staticmethod
    def forward(ctx, *ts):
        ProbeInForward.counts = [t._use_count() for t in ts]
        return ts[0] * 1

    @staticmethod
    def backward(ctx, g):
        return (g,) + (None,) * (len(ctx.needs_input_grad) - 1)


@pytest.mark.parametrize("n", [1, 13, 24, 25])
def test_owned_holds_one_more_strong_reference_per_input(n, native, apply_on):
    """The design difference itself, seen from inside forward: owned bumps each
    input's TensorImpl once, borrowed does not."""
    ts = [torch.randn(2, requires_grad=True) for _ in range(n)]
    base = [t._use_count() for t in ts]
    seen = {}
    for path in PATHS:
        apply_on(path, ProbeInForward, *ts)
        seen[path] = ProbeInForward.counts
    # +1 everywhere: the AccumulateGrad node of each leaf input holds it.
    assert seen["owned"] == [b + 2 for b in base]
    assert seen["borrowed"] == [b + 1 for b in base]
    if native.info().borrowed_uses_arrayref:
        # torch >= 2.14 borrows, and fills RecordFunction inputs only when asked.
        assert seen["eager"] == seen["borrowed"]
    else:
        # torch 2.13 also copies every input into its RecordFunction IValues.
        assert seen["eager"] == [b + 3 for b in base]
    assert [t._use_count() for t in ts] == base


def test_node_use_count_of_leaf_is_zero(native):
    assert native.node_use_count(torch.randn(3, requires_grad=True)) == 0


@pytest.mark.parametrize("path", PATHS)
def test_node_use_count_of_output_node(path, native, apply_on):
    x = torch.randn(3, requires_grad=True)
    out, other = apply_on(path, SaveIntermediate, x)
    # One reference per output tensor; eager's ctx (the THPFunction) owns its
    # PyNode too, while the native ctx points at its node weakly.
    expected = 2 + (path == "eager")
    assert native.node_use_count(out) == expected
    # The first Python grad_fn wrapper of a native node is preserved (kept by
    # the node's PyObject slot) as long as the node is shared: +1 from then on.
    grad_fn = out.grad_fn
    del grad_fn
    assert native.node_use_count(out) == 3
    del other
    assert native.node_use_count(out) == 2


@pytest.mark.parametrize("path", PATHS)
def test_input_counts_match_eager_after_apply(path, native, apply_on):
    x = torch.randn(3, requires_grad=True)
    base_use, base_weak = x._use_count(), native.weak_use_count(x)
    outs = apply_on(path, SaveIntermediate, x)
    # x's AccumulateGrad node holds x strongly while the graph lives.
    assert (x._use_count(), native.weak_use_count(x)) == (base_use + 1, base_weak)
    del outs
    assert (x._use_count(), native.weak_use_count(x)) == (base_use, base_weak)


# --------------------------------------------------------------------------- lifetimes


@pytest.mark.parametrize("path", PATHS)
def test_saved_tensors_freed_after_backward(path, apply_on, no_gc):
    x = torch.randn(3, requires_grad=True)
    out, other = apply_on(path, SaveIntermediate, x)
    handles = SaveIntermediate.handles
    assert alive(handles["intermediate"]) and alive(handles["ctx"])
    (out.sum() + other.sum()).backward()
    assert not alive(handles["intermediate"]), "saved intermediate outlived backward"
    assert alive(handles["ctx"])  # the node (and its ctx) lives as long as the outputs
    del out, other
    assert not alive(handles["ctx"]), "ctx leaked after the outputs died"


@pytest.mark.parametrize("path", PATHS)
def test_saved_tensors_kept_with_retain_graph(path, apply_on, no_gc):
    x = torch.randn(3, requires_grad=True)
    out, other = apply_on(path, SaveIntermediate, x)
    handles = SaveIntermediate.handles
    out.sum().backward(retain_graph=True)
    assert alive(handles["intermediate"])
    out.sum().backward()
    assert not alive(handles["intermediate"])
    del out, other
    assert not alive(handles["ctx"])


@pytest.mark.parametrize("path", PATHS)
def test_everything_freed_with_outputs_without_backward(path, apply_on, no_gc):
    x = torch.randn(3, requires_grad=True)
    out, other = apply_on(path, SaveIntermediate, x)
    handles = SaveIntermediate.handles
    out_ref = torch._C._WeakTensorRef(out)
    del out, other
    assert not alive(out_ref)
    assert not alive(handles["intermediate"])
    assert not alive(handles["ctx"])


@pytest.mark.parametrize("path", PATHS)
def test_saved_output_does_not_form_a_cycle(path, apply_on, no_gc, exp_save_output):
    x = torch.randn(3, requires_grad=True)
    out = apply_on(path, exp_save_output, x)
    ref = torch._C._WeakTensorRef(out)
    del out
    assert not alive(ref)


@pytest.mark.parametrize("path", NATIVE)
def test_no_grad_apply_keeps_nothing(path, native, apply_on, no_gc):
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        out, other = apply_on(path, SaveIntermediate, x)
    handles = SaveIntermediate.handles
    assert not alive(handles["intermediate"])
    assert not alive(handles["ctx"])
    assert x._use_count() == 1
