"""What the native path cannot run raises Unsupported(reason), never a wrong result."""

from __future__ import annotations

import pytest
import torch

NATIVE = ("owned", "borrowed")


class Double(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2

    @staticmethod
    def vmap(info, in_dims, x):
        return x * 2, in_dims[0]


def test_unsupported_is_a_public_exception_with_a_reason(native):
    err = native.Unsupported("tracing")
    assert isinstance(err, Exception)
    assert err.reason == "tracing"
    assert str(err) == "tracing"


@pytest.mark.parametrize("holder", NATIVE)
def test_jit_tracing(holder, native):
    def fn(t):
        return native.apply(Double, t, holder=holder)

    with pytest.raises(native.Unsupported) as info:
        torch.jit.trace(fn, (torch.randn(2),), check_trace=False)
    assert info.value.reason == "tracing"


@pytest.mark.parametrize("holder", NATIVE)
@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_functorch_transforms(holder, transform, native):
    def fn(t):
        return native.apply(Double, t, holder=holder).sum()

    x = torch.randn(3)
    eager_fn = (lambda t: Double.apply(t).sum()) if transform == "grad" else Double.apply
    getattr(torch.func, transform)(eager_fn)(x)  # eager supports it
    with pytest.raises(native.Unsupported) as info:
        getattr(torch.func, transform)(fn)(x)
    assert info.value.reason == "functorch transform"


@pytest.mark.parametrize("holder", NATIVE)
def test_compiled_autograd(holder, native):
    from torch._dynamo import compiled_autograd

    x = torch.randn(3, requires_grad=True)
    out = native.apply(Double, x, holder=holder)
    with pytest.raises(native.Unsupported) as info:
        with compiled_autograd._enable(lambda gm: gm):
            out.sum().backward()
    assert info.value.reason == "compiled autograd"


@pytest.mark.parametrize("holder", NATIVE)
@pytest.mark.parametrize("flag", ["boxed_grads_call", "clear_saved_tensors_on_access"])
def test_class_flags(holder, flag, native):
    cls = type("Flagged", (Double,), {flag: True})
    with pytest.raises(native.Unsupported) as info:
        native.apply(cls, torch.randn(2, requires_grad=True), holder=holder)
    assert info.value.reason == flag


@pytest.mark.parametrize("holder", NATIVE)
def test_set_output_grad_dtype(holder, native):
    class Declares(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_output_grad_dtype(torch.float32)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(native.Unsupported) as info:
        native.apply(Declares, torch.randn(2, requires_grad=True), holder=holder)
    assert info.value.reason == "set_output_grad_dtype"
