"""The native ctx offers what torch's ctx offers a Function's code, with eager's results; a member
it does not offer is refused as Unsupported naming it, never an AttributeError."""

from __future__ import annotations

import warnings

import pytest
import torch

from harness import check, paths
from harness.function_check import check_function
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

NATIVE = ("owned", "borrowed")

#: what torch's ctx has that the native ctx refuses (compiled autograd's own members: the native
#: path does not run under compiled autograd)
NOT_OFFERED = {"_compiled_autograd_backward_state", "_get_compiled_autograd_symints"}


class SavedVariables(torch.autograd.Function):
    """EfficientNet-PyTorch's SwishImplementation as published (efficientnet_pytorch/utils.py):
    its backward reads the deprecated ctx.saved_variables."""

    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        i = ctx.saved_variables[0]
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


def _ctx_of(apply_on, path: str) -> tuple[object, object]:
    """(the ctx a Function's forward gets, the one its backward gets) on `path`."""
    seen = []

    class Capture(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx)
            return g * 2

    apply_on(path, Capture, torch.ones(2, requires_grad=True)).sum().backward()
    return seen[0], seen[1]


def _names(obj: object) -> set[str]:
    return {n for n in dir(obj) if not (n.startswith("__") and n.endswith("__"))}


@pytest.mark.parametrize("holder", NATIVE)
def test_every_public_name_of_torchs_ctx_is_offered(holder, apply_on):
    """A member torch adds to its ctx shows here: offer it, or list it in NOT_OFFERED and refuse it."""
    for torch_ctx, native_ctx in zip(_ctx_of(apply_on, "eager"), _ctx_of(apply_on, holder)):
        public = {n for n in _names(torch_ctx) if not n.startswith("_")}
        assert public - _names(native_ctx) == set()


@pytest.mark.parametrize("holder", NATIVE)
def test_what_is_missing_is_exactly_the_declared_list(holder, native, apply_on):
    missing = native.ctx_attributes_missing()
    assert set(missing) == NOT_OFFERED
    torch_ctx, native_ctx = _ctx_of(apply_on, "eager")[1], _ctx_of(apply_on, holder)[1]
    assert _names(torch_ctx) - (_names(native_ctx) - set(missing)) == NOT_OFFERED
    for name, reason in missing.items():
        assert reason.startswith(f"ctx.{name} is not offered by the native ctx: ")
        assert len(reason.split(". ")) == 1  # one sentence


def test_a_member_a_later_torch_adds_is_listed_and_refused_by_name(native, apply_on, monkeypatch):
    monkeypatch.setattr(torch.autograd.function.BackwardCFunction, "_added_later", None, raising=False)
    assert "_added_later" in native.ctx_attributes_missing()

    class ReadsIt(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * ctx._added_later

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(native.Unsupported, match=r"^ctx\._added_later is not offered by the native ctx"):
        apply_on("owned", ReadsIt, torch.ones(2, requires_grad=True))


@pytest.mark.parametrize("holder", NATIVE)
@pytest.mark.parametrize("name", sorted(NOT_OFFERED))
@pytest.mark.parametrize("where", ["forward", "backward"])
def test_a_member_not_offered_is_unsupported_naming_it(holder, name, where, native):
    class Uses(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if where == "forward":
                getattr(ctx, name)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            getattr(ctx, name)
            return g * 2

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(native.Unsupported) as info:
        native.apply(Uses, x, holder=holder).sum().backward()
    assert info.value.reason.startswith(f"ctx.{name} is not offered by the native ctx")


@pytest.mark.parametrize("holder", NATIVE)
def test_writing_a_member_not_offered_is_unsupported_too(holder, native):
    class Writes(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx._compiled_autograd_backward_state = object()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(native.Unsupported, match="_compiled_autograd_backward_state"):
        native.apply(Writes, torch.ones(2, requires_grad=True), holder=holder)


def test_a_name_torchs_ctx_lacks_is_the_same_attribute_error(apply_on):
    class Reads(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * getattr(ctx, "scale", 2.0)  # never set: the default

        @staticmethod
        def backward(ctx, g):
            return g * ctx.never_set

    for path in ("eager", *NATIVE):
        out = apply_on(path, Reads, torch.ones(2, requires_grad=True))
        assert torch.equal(out, torch.full((2,), 2.0))
        with pytest.raises(AttributeError, match="object has no attribute 'never_set'"):
            out.sum().backward()


def test_saved_variables_gives_eagers_gradient_and_warning(apply_on, assert_all_paths_equal):
    def scenario(path):
        x = torch.linspace(-2, 2, 5, dtype=torch.float64, requires_grad=True)
        with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated; use 'saved_tensors'"):
            apply_on(path, SavedVariables, x).sum().backward()
        return x.grad

    assert_all_paths_equal(scenario)


def test_saved_variables_after_the_graph_is_freed_raises_like_eager(apply_on, assert_all_paths_equal):
    kept = []

    class Keeps(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            kept.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def scenario(path):
        out = apply_on(path, Keeps, torch.ones(2, requires_grad=True))
        out.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time") as info:
                kept[-1].saved_variables
        return str(info.value)

    assert_all_paths_equal(scenario)


def _members_read_in_backward(ctx) -> dict:
    """What torch's ctx members give in a backward, in a form that compares across paths."""
    return {
        "name": ctx.name(),
        "next_functions": tuple((type(f).__name__ if f is not None else None, i) for f, i in ctx.next_functions),
        "requires_grad": ctx.requires_grad,
        "metadata": dict(ctx.metadata),
        "_forward_cls": ctx._forward_cls.__name__,
        "_autograd_function_id": ctx._autograd_function_id,
        "_compiled_autograd_key": ctx._compiled_autograd_key(),
        "_get_user_fn": ctx._get_user_fn().__qualname__,
        "_input_metadata": len(ctx._input_metadata),
        "_raw_saved_tensors": tuple(type(s).__name__ for s in ctx._raw_saved_tensors),
        "needs_input_grad": ctx.needs_input_grad,
        "_materialize_non_diff_grads": ctx._materialize_non_diff_grads,
    }


def test_node_members_read_in_backward_match_eager(apply_on, assert_all_paths_equal):
    read = []

    class Reads(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x)
            return x * y

        @staticmethod
        def backward(ctx, g):
            read.append(_members_read_in_backward(ctx))
            (x,) = ctx.saved_tensors
            return g * 3, g * x

    def scenario(path):
        x = torch.ones(2, requires_grad=True)
        y = torch.ones(2, requires_grad=True) * 2  # a non-leaf: its edge is MulBackward0
        apply_on(path, Reads, x, y).sum().backward()
        return read[-1]

    assert_all_paths_equal(scenario)


def test_apply_and_apply_jvp_call_the_functions_own_backward_and_jvp(apply_on, assert_all_paths_equal):
    calls = []

    class Reapplies(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            if not calls or calls[-1] != "inner":
                calls.append("inner")
                calls.append(ctx.apply(g * 0))  # the backward itself, through torch's own apply
            (x,) = ctx.saved_tensors
            return g * 2 * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            calls.append(ctx.apply_jvp(t * 0) if t.sum() != 0 else "inner jvp")
            return t * 2 * x

    def scenario(path):
        del calls[:]
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        apply_on(path, Reapplies, x).sum().backward()
        import torch.autograd.forward_ad as fwAD

        with fwAD.dual_level():
            dual = fwAD.make_dual(x.detach(), torch.ones(2, dtype=torch.float64))
            tangent = fwAD.unpack_dual(apply_on(path, Reapplies, dual)).tangent
        return x.grad, tangent, tuple(calls)

    assert_all_paths_equal(scenario)


def test_hooks_registered_on_ctx_in_forward_fire_like_eager(apply_on, assert_all_paths_equal):
    fired = []

    class Hooks(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.register_prehook(lambda grad_outputs: fired.append(("pre", grad_outputs[0].sum().item())))
            ctx.register_hook(lambda grad_inputs, grad_outputs: fired.append(("post", grad_inputs[0].sum().item())))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def scenario(path):
        del fired[:]
        apply_on(path, Hooks, torch.ones(3, requires_grad=True)).sum().backward()
        return tuple(fired)

    assert assert_all_paths_equal(scenario) == (("pre", 3.0), ("post", 6.0))


def test_maybe_clear_saved_tensors_frees_them_unless_the_graph_is_retained(apply_on, assert_all_paths_equal):
    class Clears(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ctx.maybe_clear_saved_tensors()
            return g * 2 * x

    def scenario(path):
        retained = apply_on(path, Clears, torch.ones(2, requires_grad=True))
        retained.sum().backward(retain_graph=True)
        retained.sum().backward()  # retained: still there
        freed = apply_on(path, Clears, torch.ones(2, requires_grad=True))
        freed.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time") as info:
            freed.sum().backward()
        return str(info.value)

    assert_all_paths_equal(scenario)


def test_mark_shared_storage_warns_like_eager(apply_on):
    class Marks(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_shared_storage()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    for path in ("eager", *NATIVE):
        with pytest.warns(FutureWarning, match="`mark_shared_storage` is deprecated"):
            apply_on(path, Marks, torch.ones(2, requires_grad=True))


def test_pure_view_reaches_wrap_outputs(apply_on, assert_all_paths_equal):
    """A view output of a Function that says it is a pure view: its grad_fn and gradient are eager's."""

    class PureView(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx._is_pure_view = True
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def scenario(path):
        x = torch.ones(3, requires_grad=True)
        y = apply_on(path, PureView, x.clone())
        y.mul(3).sum().backward()
        return y, x.grad

    assert_all_paths_equal(scenario)


@pytest.mark.parametrize("holder", NATIVE)
def test_check_function_passes_a_function_reading_saved_variables(holder, native):
    samples = [(torch.linspace(-2, 2, 5, dtype=torch.float64, requires_grad=True),)]
    report = check_function(SavedVariables, samples, paths=["eager", holder])
    assert not report.failures, report.table()
    statuses = {(c, p): s for c, p, s in ((r.check, r.path, r.status) for r in report.records) if p == holder}
    for name in ("outputs", "gradients", "double_backward", "lifetimes"):
        assert statuses[(name, holder)] == "ok", report.table()


def _saved_variables_spec(code: str) -> GraphSpec:
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()), functions=(
        FunctionSpec(args=(Arg("x0"), Arg("x1")), outputs=(OutputSpec("compute", terms=(
            Term(0, "sin", 2.0), Term(1, "linear", 1.5))),), save=("inputs",), code=code,
            saved_read="saved_variables"),))


@pytest.mark.parametrize("code", ["generic", "plain"])
def test_a_generated_function_reading_saved_variables_is_ok_on_the_native_paths(code, native):
    verdict = check.check(_saved_variables_spec(code), [paths.get(p) for p in ("eager", *NATIVE)])
    assert {p: o.status for p, o in verdict.outcomes.items()} == dict.fromkeys(("eager", *NATIVE), "ok"), verdict.report()
