"""eager == owned == borrowed, bit for bit: outputs, .grad, autograd.grad, jvp
tangents, double backward, errors, hooks."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.autograd.function import once_differentiable

PATHS = ("eager", "owned", "borrowed")


def leaves(*shapes: tuple[int, ...], seed: int = 0, dtype: torch.dtype = torch.float64) -> list:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=dtype).requires_grad_() for s in shapes]


def backward_all(out: Any) -> None:
    """Backward from every differentiable tensor output with distinct weights."""
    outs = out if isinstance(out, tuple) else (out,)
    tensors = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    weights = [torch.full_like(t, float(i + 1)) for i, t in enumerate(tensors)]
    if tensors:
        torch.autograd.backward(tensors, weights)


# --------------------------------------------------------------------------- Functions


class SinSaveIntermediate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        cos = x.cos()
        ctx.save_for_backward(cos)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (cos,) = ctx.saved_tensors
        return g * cos


class SetupContextMul(torch.autograd.Function):
    """setup_context style, with a jvp and a default argument."""

    @staticmethod
    def forward(x, y, scale=2.0):
        return x * y * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, scale = inputs
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.scale, g * x * ctx.scale, None

    @staticmethod
    def jvp(ctx, tx, ty, _):
        x, y = ctx.saved_tensors
        return (tx * y + ty * x) * ctx.scale


class NonTensorArgs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x, k, b, pair, y):
        ctx.k = k
        ctx.pair = pair
        ctx.save_for_backward(x, y)
        return x * k + y * pair[0], k + 1, a

    @staticmethod
    def backward(ctx, g, g_int, g_none):
        assert g_int is None and g_none is None
        return None, g * ctx.k, None, None, None, g * ctx.pair[0]


class ViewsAndInputs(torch.autograd.Function):
    """An input returned as-is, a view of an input, a non-differentiable output."""

    @staticmethod
    def forward(ctx, x, y):
        idx = x.argmax().reshape(1)
        ctx.mark_non_differentiable(idx)
        return x, x[1:], y.t(), idx

    @staticmethod
    def backward(ctx, g_x, g_view, g_yt, g_idx):
        assert g_idx is not None and not g_idx.any()  # materialized zeros
        gx = g_x.clone()
        gx[1:] += g_view
        return gx, g_yt.t()


class NoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        ctx.seen = (g1 is None, g2 is None)
        grad = torch.zeros_like(g1 if g1 is not None else g2)
        if g1 is not None:
            grad = grad + 2 * g1
        if g2 is not None:
            grad = grad + 3 * g2
        return grad


class DirtyMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        x.mul_(k)
        ctx.mark_dirty(x)
        ctx.k = k
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class SameTensorTwice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + a

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * (b + 1), g * a


class RecordNeedsInputGrad(torch.autograd.Function):
    """Returns None for inputs that need no grad; needs_input_grad set in backward too."""

    seen: list = []

    @staticmethod
    def forward(ctx, x, n, y, z):
        return x * y + z

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad
        RecordNeedsInputGrad.seen.append(needs)
        ctx.needs_input_grad = (False,) * 4
        RecordNeedsInputGrad.seen.append(ctx.needs_input_grad)
        x_needed, _, y_needed, z_needed = needs
        return (g if x_needed else None, None, g if y_needed else None, g if z_needed else None)


def sum_of(n: int) -> type[torch.autograd.Function]:
    """A Function of n tensors: out = sum_i (i+1) * t_i, saving all inputs."""

    class SumOf(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *ts):
            ctx.save_for_backward(*ts)
            out = torch.zeros(3, dtype=torch.float64)
            for i, t in enumerate(ts):
                out = out + (i + 1) * t
            return out, ts[0] if ts else out.clone()

        @staticmethod
        def backward(ctx, g, g_first):
            saved = ctx.saved_tensors
            assert len(saved) == n
            grads = [g * (i + 1) for i in range(n)]
            if n:
                grads[0] = grads[0] + g_first
            return tuple(grads)

    SumOf.__name__ = SumOf.__qualname__ = f"SumOf{n}"
    return SumOf


# --------------------------------------------------------------------------- tests

CASES = {
    "save_inputs": ("mul_save_inputs", lambda: leaves((3,), (3,))),
    "save_output": ("exp_save_output", lambda: leaves((2, 3))),
    "save_intermediate_once_differentiable": (SinSaveIntermediate, lambda: leaves((4,))),
    "setup_context_default_arg": (SetupContextMul, lambda: leaves((3,), (3,))),
    "non_tensor_args": (
        NonTensorArgs,
        lambda: [None, *leaves((3,)), 3, 1.5, (2.0, "s"), *leaves((3,), seed=1)],
    ),
    "views_inputs_as_is_non_differentiable": (ViewsAndInputs, lambda: leaves((4,), (2, 3))),
    "materialize_grads_false": (NoMaterialize, lambda: leaves((3,))),
    "scalar_and_empty": ("mul_save_inputs", lambda: leaves((), ())),
    "empty": ("mul_save_inputs", lambda: leaves((0, 2), (0, 2))),
    "float32_non_contiguous": (
        "mul_save_inputs",
        lambda: [
            t.detach().t().requires_grad_() for t in leaves((3, 2), (3, 2), dtype=torch.float32)
        ],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_outputs_and_grads_match_eager(case, request, apply_on, assert_all_paths_equal):
    cls, make_args = CASES[case]
    if isinstance(cls, str):  # a Function shared through a conftest fixture
        cls = request.getfixturevalue(cls)

    def scenario(path):
        args = make_args()
        out = apply_on(path, cls, *args)
        backward_all(out)
        return out, [a.grad for a in args if isinstance(a, torch.Tensor)]

    assert_all_paths_equal(scenario)


@pytest.mark.parametrize("n", [0, 1, 23, 24, 25, 26, 30])
def test_many_tensor_inputs(n, apply_on, assert_all_paths_equal):
    cls = sum_of(n)

    def scenario(path):
        args = leaves(*[(3,)] * n, seed=n)
        out = apply_on(path, cls, *args)
        backward_all(out)
        return out, [a.grad for a in args]

    assert_all_paths_equal(scenario)


def test_same_tensor_passed_twice(apply_on, assert_all_paths_equal):
    def scenario(path):
        (a,) = leaves((3,))
        out = apply_on(path, SameTensorTwice, a, a)
        backward_all(out)
        return out, a.grad

    assert_all_paths_equal(scenario)


def test_mark_dirty_in_place(apply_on, assert_all_paths_equal):
    def scenario(path):
        (leaf,) = leaves((3,))
        x = leaf * 1  # a non-leaf, so it may be modified in place
        out = apply_on(path, DirtyMul, x, 3.0)
        assert out is x
        backward_all(out)
        return out, x._version, leaf.grad

    assert_all_paths_equal(scenario)


def test_materialize_grads_false_passes_none(apply_on, assert_all_paths_equal):
    def scenario(path):
        (x,) = leaves((3,))
        a, _b = apply_on(path, NoMaterialize, x)
        a.sum().backward()
        return a.grad_fn is not None, x.grad

    assert_all_paths_equal(scenario)


def test_needs_input_grad(apply_on, assert_all_paths_equal):
    def scenario(path):
        RecordNeedsInputGrad.seen = []
        x, y = leaves((3,), (3,))
        z = torch.ones(3, dtype=torch.float64)  # does not require grad
        out = apply_on(path, RecordNeedsInputGrad, x, 7, y, z)
        (gx,) = torch.autograd.grad(out.sum(), [x])  # y is not asked for
        return out, gx, tuple(RecordNeedsInputGrad.seen)

    result = assert_all_paths_equal(scenario)
    assert result[2][0] == (True, False, True, False)


def test_autograd_grad_subset(apply_on, assert_all_paths_equal):
    def scenario(path):
        args = [None, *leaves((3,)), 3, 1.5, (2.0, "s"), *leaves((3,), seed=1)]
        out, _, _ = apply_on(path, NonTensorArgs, *args)
        return torch.autograd.grad(out, [args[5], args[1]], torch.ones_like(out))

    assert_all_paths_equal(scenario)


def test_forward_ad_user_jvp(apply_on, assert_all_paths_equal):
    def scenario(path):
        x, y = leaves((3,), (3,))
        tx, ty = leaves((3,), (3,), seed=5)
        with fwAD.dual_level():
            out = apply_on(path, SetupContextMul, fwAD.make_dual(x, tx), fwAD.make_dual(y, ty), 0.5)
            primal, tangent = fwAD.unpack_dual(out)
            return primal.detach(), tangent.detach()

    assert_all_paths_equal(scenario)


def test_double_backward(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        out = apply_on(path, mul_save_inputs, x, y)
        gx, gy = torch.autograd.grad(out.pow(2).sum(), [x, y], create_graph=True)
        ggx, ggy = torch.autograd.grad((gx * gy).sum(), [x, y])
        return gx.detach(), gy.detach(), ggx, ggy

    assert_all_paths_equal(scenario)


def test_double_backward_through_saved_output(apply_on, assert_all_paths_equal, exp_save_output):
    def scenario(path):
        (x,) = leaves((3,))
        out = apply_on(path, exp_save_output, x)
        (g,) = torch.autograd.grad(out.sum(), [x], create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), [x])
        return g.detach(), gg

    assert_all_paths_equal(scenario)


def test_once_differentiable_refuses_double_backward(apply_on, assert_all_paths_equal):
    def scenario(path):
        (x,) = leaves((3,))
        out = apply_on(path, SinSaveIntermediate, x)
        grad_out = torch.ones_like(out, requires_grad=True)
        (g,) = torch.autograd.grad(out, [x], grad_out, create_graph=True)
        with pytest.raises(RuntimeError) as info:
            g.sum().backward()
        return str(info.value)

    assert "once_differentiable" in assert_all_paths_equal(scenario)


def test_retain_graph_repeat(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        out = apply_on(path, mul_save_inputs, x, y)
        out.sum().backward(retain_graph=True)
        first = x.grad.clone()
        out.sum().backward()
        return first, x.grad

    assert_all_paths_equal(scenario)


def test_no_grad_mode(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        with torch.no_grad():
            return apply_on(path, mul_save_inputs, x, y)

    assert assert_all_paths_equal(scenario).grad_fn is None


def test_node_pre_and_post_hooks(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        out = apply_on(path, mul_save_inputs, x, y)
        calls = []
        out.grad_fn.register_prehook(lambda grad_outputs: calls.append(("pre", grad_outputs)))
        out.grad_fn.register_hook(lambda grad_in, grad_out: calls.append(("post", grad_in)))
        out.backward(torch.full_like(out, 2.0))
        return calls, x.grad

    assert_all_paths_equal(scenario)


def test_saved_tensors_hooks(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        events = []

        def pack(t):
            events.append(("pack", t.shape))
            return t * 1

        def unpack(t):
            events.append(("unpack", t.shape))
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = apply_on(path, mul_save_inputs, x, y)
        out.sum().backward()
        return events, x.grad, y.grad

    assert_all_paths_equal(scenario)


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _backward_error(apply_on, cls, *extra):
    """scenario(path): the error of backward through cls.apply(x, *extra).sum()."""

    def scenario(path):
        (x,) = leaves((3,))
        return _error(lambda: apply_on(path, cls, x, *extra).sum().backward())

    return scenario


def test_wrong_gradient_count(apply_on, assert_all_paths_equal):
    class TooFew(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    def scenario(path):
        x, y = leaves((3,), (3,))
        return _error(lambda: apply_on(path, TooFew, x, y).sum().backward())

    kind, message = assert_all_paths_equal(scenario)
    assert kind is RuntimeError
    expected = (
        "function TooFewBackward returned an incorrect number of gradients (expected 2, got 1)"
    )
    assert expected in message


def test_extra_none_gradients_are_dropped(apply_on, assert_all_paths_equal):
    class ExtraNones(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    def scenario(path):
        (x,) = leaves((3,))
        apply_on(path, ExtraNones, x).sum().backward()
        return x.grad

    assert_all_paths_equal(scenario)


def test_gradient_for_non_tensor_input(apply_on, assert_all_paths_equal):
    class GradForInt(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    scenario = _backward_error(apply_on, GradForInt, 2)
    kind, message = assert_all_paths_equal(scenario)
    assert "returned a gradient different than None at position 2" in message


def test_wrong_gradient_shape(apply_on, assert_all_paths_equal):
    class BadShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]

    scenario = _backward_error(apply_on, BadShape)
    kind, message = assert_all_paths_equal(scenario)
    assert "invalid gradient at index 0" in message


def test_saved_tensor_modified_in_place(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        y2 = y * 1
        out = apply_on(path, mul_save_inputs, x, y2)
        y2.add_(1)
        return _error(lambda: out.sum().backward())

    kind, message = assert_all_paths_equal(scenario)
    assert "modified by an inplace operation" in message


def test_backward_twice(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        out = apply_on(path, mul_save_inputs, x, y)
        out.sum().backward()
        return _error(lambda: out.sum().backward())

    kind, message = assert_all_paths_equal(scenario)
    assert "backward through the graph a second time" in message


def test_python_error_in_backward_keeps_its_type(apply_on, assert_all_paths_equal):
    class Raises(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise KeyError("from backward")

    scenario = _backward_error(apply_on, Raises)
    assert assert_all_paths_equal(scenario)[0] is KeyError


def test_python_error_in_forward_keeps_its_type(apply_on, assert_all_paths_equal):
    class Raises(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("from forward")

        @staticmethod
        def backward(ctx, g):
            return g

    def scenario(path):
        (x,) = leaves((3,))
        return _error(lambda: apply_on(path, Raises, x))

    assert assert_all_paths_equal(scenario) == (ValueError, "from forward")


def test_owned_and_borrowed_bit_identical_float32(apply_on, same):
    """float32 with reductions: any divergence in what runs would show in the bits."""
    cls = sum_of(25)
    results = []
    for path in ("owned", "borrowed"):
        args = leaves(*[(3,)] * 25, seed=3, dtype=torch.float64)
        args = [a.detach().float().requires_grad_() for a in args]
        out = apply_on(path, cls, *args)
        backward_all(out)
        results.append((out, [a.grad for a in args]))
    assert same(results[0], results[1])


def test_unknown_holder(native, mul_save_inputs):
    message = "unknown holder 'shared'; expected one of: owned, borrowed$"
    with pytest.raises(ValueError, match=message):
        native.apply(mul_save_inputs, *leaves((3,), (3,)), holder="shared")


def test_tensor_hooks_retain_grad_and_post_accumulate(
    apply_on, assert_all_paths_equal, mul_save_inputs,
):
    def scenario(path):
        x, y = leaves((3,), (3,))
        events = []
        x.register_post_accumulate_grad_hook(lambda t: events.append(("post_acc", t.grad.clone())))
        out = apply_on(path, mul_save_inputs, x, y)
        out.retain_grad()
        out.register_hook(lambda g: g * 3)
        out.backward(torch.ones_like(out))
        return events, out.grad, x.grad, y.grad

    assert_all_paths_equal(scenario)


@pytest.mark.skipif(
    not hasattr(torch.autograd.graph, "node_creation_hook"),
    reason="torch < 2.14 has no node_creation_hook",
)
def test_node_creation_hook(apply_on, assert_all_paths_equal, mul_save_inputs):
    def scenario(path):
        x, y = leaves((3,), (3,))
        created = []

        def hook(node):
            created.append((node.name(), len(node.next_functions)))

        with torch.autograd.graph.node_creation_hook(hook):
            out = apply_on(path, mul_save_inputs, x, y)
        return created, out

    created = assert_all_paths_equal(scenario)[0]
    assert created[-1] == ("MulSaveInputsBackward", 2)  # after the inputs' AccumulateGrads


def _fn(forward, backward=None, setup_context=None, jvp=None, vjp=None, name="Probe"):
    """A Function class from plain functions (None: not overridden)."""
    attrs = {"forward": staticmethod(forward)}
    overrides = {"backward": backward, "setup_context": setup_context, "jvp": jvp, "vjp": vjp}
    attrs.update({key: staticmethod(fn) for key, fn in overrides.items() if fn is not None})
    return type(name, (torch.autograd.Function,), attrs)


def _grad_identity(ctx, *grads):
    return grads[0]


ERROR_CASES = {
    "mark_non_differentiable_int": lambda x: _fn(
        lambda ctx, x: (ctx.mark_non_differentiable(3), x * 2)[1], _grad_identity
    ).apply(x),
    "mark_dirty_int": lambda x: _fn(
        lambda ctx, x: (ctx.mark_dirty(3), x * 2)[1], _grad_identity
    ).apply(x),
    "save_for_backward_int": lambda x: _fn(
        lambda ctx, x: (ctx.save_for_backward(x, 3), x * 2)[1], _grad_identity
    ).apply(x),
    "save_for_forward_int": lambda x: _fn(
        lambda ctx, x: (ctx.save_for_forward(x, 3), x * 2)[1], _grad_identity
    ).apply(x),
    "dirty_leaf": lambda x: _fn(lambda ctx, x: (ctx.mark_dirty(x), x)[1], _grad_identity).apply(x),
    "dirty_not_returned": lambda x: _fn(
        lambda ctx, x: (ctx.mark_dirty(x), x * 2)[1], _grad_identity
    ).apply(x * 1),
    "dirty_view_with_two_outputs": lambda x: _fn(
        lambda ctx, x: (x.mul_(2), ctx.mark_dirty(x), (x, x * 2))[2], _grad_identity
    ).apply((x * 1)[1:]),
    "setup_context_saves_input_returned_as_is": lambda x: _fn(
        lambda x: x,
        _grad_identity,
        setup_context=lambda ctx, inputs, out: ctx.save_for_backward(*inputs),
    ).apply(x),
    "backward_returns_str": lambda x: _fn(lambda ctx, x: x * 2, lambda ctx, g: "nope")
    .apply(x)
    .sum()
    .backward(),
    "backward_and_vjp": lambda x: _fn(lambda ctx, x: x * 2, _grad_identity, vjp=_grad_identity)
    .apply(x)
    .sum()
    .backward(),
    "no_backward": lambda x: _fn(lambda ctx, x: x * 2).apply(x).sum().backward(),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_errors_match_eager(case, native, assert_all_paths_equal, monkeypatch):
    make = ERROR_CASES[case]

    def scenario(path):
        if path != "eager":
            # Route Function.apply inside the case through the native path.
            via_native = classmethod(lambda cls, *a: native.apply(cls, *a, holder=path))
            monkeypatch.setattr(torch.autograd.Function, "apply", via_native)
        try:
            (x,) = leaves((4,))
            return _error(lambda: make(x))
        finally:
            monkeypatch.undo()

    kind, message = assert_all_paths_equal(scenario)
    assert message


@pytest.mark.parametrize("case", ["wrong_count", "not_implemented"])
def test_jvp_errors_match_eager(case, apply_on, assert_all_paths_equal):
    jvp = (lambda ctx, t: (t * 2, t)) if case == "wrong_count" else None
    cls = _fn(lambda ctx, x: x * 2, _grad_identity, jvp=jvp)

    def scenario(path):
        (x,) = leaves((2,))
        with fwAD.dual_level():
            return _error(lambda: apply_on(path, cls, fwAD.make_dual(x.detach(), torch.ones(2))))

    assert_all_paths_equal(scenario)


def test_mark_dirty_of_a_non_input_warns_like_eager(apply_on, assert_all_paths_equal):
    cls = _fn(lambda ctx, x: (lambda y: (ctx.mark_dirty(y), y)[1])(x * 2), _grad_identity)

    def scenario(path):
        (x,) = leaves((2,))
        with pytest.warns(UserWarning) as record:
            out = apply_on(path, cls, x)
        return [str(w.message) for w in record], out

    assert_all_paths_equal(scenario)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.cuda
def test_cuda_outputs_grads_and_materialized_zeros(
    apply_on, assert_all_paths_equal, mul_save_inputs,
):
    def scenario(path):
        x, y = (t.detach().cuda().requires_grad_() for t in leaves((3,), (3,)))
        a, _b = apply_on(path, NoMaterialize, x)
        out = apply_on(path, mul_save_inputs, a, y)
        idx_out = apply_on(path, ViewsAndInputs, x, y.reshape(3, 1))
        (out.sum() + idx_out[1].sum()).backward()
        return out.cpu(), x.grad.cpu(), y.grad.cpu()

    assert_all_paths_equal(scenario)


def test_ctx_attribute_of_wrong_type_matches_eager(apply_on, assert_all_paths_equal):
    cls = _fn(lambda ctx, x: (setattr(ctx, "to_save", [x]), x * 2)[1], _grad_identity)

    def scenario(path):
        (x,) = leaves((2,))
        return _error(lambda: apply_on(path, cls, x))

    assert "to_save attribute is expected to be a tuple" in assert_all_paths_equal(scenario)[1]


class OldStyleWithDefaults(torch.autograd.Function):
    """forward(ctx, ...) with defaults: torch's C++ apply places keyword arguments by name and
    fills in no default (the forward's own default applies, and the node has fewer inputs)."""

    @staticmethod
    def forward(ctx, x, y, scale=2.0, shift=None):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return x * y * scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.scale, g * x * ctx.scale, None, None


class KeywordOnly(torch.autograd.Function):
    @staticmethod
    def forward(x, *, scale):
        return x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.parametrize("cls, keywords", [
    (SetupContextMul, ("y",)), (SetupContextMul, ("scale", "y")), (OldStyleWithDefaults, ("y",)),
    (OldStyleWithDefaults, ("scale", "y")), (OldStyleWithDefaults, ("x", "y"))])
def test_keyword_arguments_bind_as_on_eager(cls, keywords, native, assert_all_paths_equal):
    def scenario(path):
        x, y = leaves((3,), (3,))
        given = {"x": x, "y": y, "scale": 3.0}
        args = [v for k, v in given.items() if k not in keywords and (k != "scale" or "scale" in keywords)]
        kwargs = {k: given[k] for k in keywords}
        out = cls.apply(*args, **kwargs) if path == "eager" else native.apply(cls, *args, holder=path, **kwargs)
        backward_all(out)
        return out, x.grad, y.grad

    assert_all_paths_equal(scenario)


@pytest.mark.parametrize("keyword, message", [
    ("shift", "missing required argument: 'scale'"),  # no default filled in before it
    ("zz", "unexpected keyword argument 'zz'"), ("x", "multiple values for argument 'x'")])
def test_keyword_errors_are_eagers(keyword, message, native):
    x, y = leaves((3,), (3,))
    with pytest.raises(TypeError, match=message) as eager:
        OldStyleWithDefaults.apply(x, y, **{keyword: 1.0})
    for holder in ("owned", "borrowed"):
        with pytest.raises(TypeError) as there:
            native.apply(OldStyleWithDefaults, x, y, holder=holder, **{keyword: 1.0})
        assert str(there.value) == str(eager.value)


def test_keyword_only_parameters_raise_as_on_eager(native):
    """torch places keywords only at positional parameters (its C++ apply reads co_varnames)."""
    (x,) = leaves((3,))
    with pytest.raises(TypeError, match="forward\\(\\) got an unexpected keyword argument 'scale'"):
        KeywordOnly.apply(x, scale=2.0)
    for holder in ("owned", "borrowed"):
        with pytest.raises(TypeError, match="forward\\(\\) got an unexpected keyword argument 'scale'"):
            native.apply(KeywordOnly, x, scale=2.0, holder=holder)
