"""Every axis of the generated space is reachable, bounds are checked, and the
input-count distribution stresses the borrowed vector's inline capacity."""

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from harness.dataflow import Dataflow, version_error_expected
from strategies import INLINE_CAPACITY, function_specs, graphs, tensor_input_counts

# find_any: the first example that has the feature, without shrinking it
FIND = settings(max_examples=3000, deadline=None, database=None, phases=[Phase.generate],
                suppress_health_check=list(HealthCheck))


def fns(spec):
    return spec.functions


def outs(spec):
    return [o for fn in spec.functions for o in fn.outputs]


def partial(spec):
    """A partial backward that leaves out some leaf that requires grad."""
    return 0 < len(spec.grad_leaves) < sum(leaf.requires_grad for leaf in spec.leaves)


def tensor_args(fn):
    return [a for a in fn.args if a.ref is not None]


AXES = {
    "no inputs": lambda g: any(len(fn.args) == 0 for fn in fns(g)),
    "24 tensor inputs": lambda g: any(len(tensor_args(fn)) == 24 for fn in fns(g)),
    "25 tensor inputs": lambda g: any(len(tensor_args(fn)) == 25 for fn in fns(g)),
    "26 tensor inputs": lambda g: any(len(tensor_args(fn)) == 26 for fn in fns(g)),
    "more than 26 tensor inputs": lambda g: any(len(tensor_args(fn)) > 26 for fn in fns(g)),
    "input not requiring grad": lambda g: any(not leaf.requires_grad for leaf in g.leaves),
    "non-tensor None arg": lambda g: any(a.ref is None and a.const is None for fn in fns(g) for a in fn.args),
    "non-tensor int arg": lambda g: any(type(a.const) is int for fn in fns(g) for a in fn.args),
    "non-tensor float arg": lambda g: any(type(a.const) is float for fn in fns(g) for a in fn.args),
    "non-tensor tuple arg": lambda g: any(isinstance(a.const, tuple) for fn in fns(g) for a in fn.args),
    "same tensor twice": lambda g: any(len(set(a.ref for a in tensor_args(fn))) < len(tensor_args(fn))
                                       for fn in fns(g)),
    "views of one base": lambda g: any(leaf.views for leaf in g.leaves),
    "non-contiguous strided": lambda g: any(leaf.layout == "strided" for leaf in g.leaves),
    "non-contiguous transposed": lambda g: any(leaf.layout == "transposed" for leaf in g.leaves),
    "float32": lambda g: g.dtype == "float32",
    "float64": lambda g: g.dtype == "float64",
    "float16": lambda g: g.dtype == "float16",
    "bfloat16": lambda g: g.dtype == "bfloat16",
    "complex64": lambda g: g.dtype == "complex64",
    "complex128": lambda g: g.dtype == "complex128",
    "complex square (nonlinear) term": lambda g: g.dtype.startswith("complex") and any(
        t.op == "square" for o in outs(g) for t in o.terms),
    "int64 leaf": lambda g: any(leaf.dtype == "int64" for leaf in g.leaves),
    "bool leaf": lambda g: any(leaf.dtype == "bool" for leaf in g.leaves),
    "int64 mask of an output": lambda g: any(o.mask >= 0 and g.leaves[int(fn.args[o.mask].ref[1:])].dtype == "int64"
                                             for fn in fns(g) for o in fn.outputs),
    "bool mask of an output": lambda g: any(o.mask >= 0 and g.leaves[int(fn.args[o.mask].ref[1:])].dtype == "bool"
                                            for fn in fns(g) for o in fn.outputs),
    "mask in generic code": lambda g: any(fn.mask_slots and fn.code == "generic" for fn in fns(g)),
    "mask in plain code": lambda g: any(fn.mask_slots and fn.code == "plain" for fn in fns(g)),
    "mask with a user jvp under forward AD": lambda g: g.forward_ad and any(fn.mask_slots for fn in fns(g)),
    "mask with needs_input_grad read": lambda g: any(fn.mask_slots and fn.needs_input_grad != "ignore"
                                                     for fn in fns(g)),
    "mask beside a float16 / bfloat16 / complex graph": lambda g: g.dtype not in ("float32", "float64") and any(
        fn.mask_slots for fn in fns(g)),
    "scalar shape": lambda g: g.shape == (),
    "empty shape": lambda g: 0 in g.shape,
    "multi-dim shape": lambda g: len(g.shape) >= 2,
    "single output": lambda g: any(not fn.tuple_output for fn in fns(g)),
    "many outputs": lambda g: any(len(fn.outputs) >= 3 for fn in fns(g)),
    "input returned as-is": lambda g: any(o.kind == "input" for o in outs(g)),
    "view of input": lambda g: any(o.kind == "view" for o in outs(g)),
    "non-tensor output": lambda g: any(o.kind == "const" for o in outs(g)),
    "non-differentiable output": lambda g: any(o.non_differentiable for o in outs(g)),
    "mark_dirty": lambda g: any(o.kind == "dirty" for o in outs(g)),
    "mark_dirty on a view": lambda g: any(o.kind == "dirty" and fn.args[o.slot].view
                                          for fn in fns(g) for o in fn.outputs),
    "mark_dirty on a view that is not the first tensor input": lambda g: any(
        o.kind == "dirty" and fn.args[o.slot].view and o.slot != fn.tensor_slots[0]
        for fn in fns(g) for o in fn.outputs),
    "materialize_grads False": lambda g: any(not fn.materialize_grads for fn in fns(g)),
    "needs_input_grad read": lambda g: any(fn.needs_input_grad == "read" for fn in fns(g)),
    "needs_input_grad saved": lambda g: any(fn.needs_input_grad == "saved" for fn in fns(g)),
    "vjp instead of backward": lambda g: any(fn.backward_method == "vjp" for fn in fns(g)),
    "print in forward": lambda g: any(fn.untraceable == "print" for fn in fns(g)),
    "side effect in forward": lambda g: any(fn.untraceable == "side_effect" for fn in fns(g)),
    "data-dependent branch in forward": lambda g: any(fn.untraceable == "data_branch" for fn in fns(g)),
    "Function applied inside another's forward": lambda g: any(fn.nested for fn in fns(g)),
    "checkpointed forward": lambda g: g.checkpoint,
    "clear_saved_tensors_on_access with saved tensors and a backward": lambda g: g.backward != "none" and any(
        fn.clear_saved_tensors_on_access and fn.save and any(g.leaves[i].requires_grad for i in range(len(g.leaves)))
        for fn in fns(g)),
    "Function applied under no_grad": lambda g: any(fn.grad_mode == "no_grad" for fn in fns(g)),
    "no_grad Function's output read by a Function with a backward": lambda g: any(
        fn.grad_mode == "no_grad" and any(a.ref and a.ref.startswith(f"f{n}.") for later in fns(g)[n + 1:]
                                          for a in later.args)
        for n, fn in enumerate(fns(g))) and g.backward != "none",
    "nested Function in a checkpointed forward": lambda g: g.checkpoint and any(fn.nested for fn in fns(g)),
    "once_differentiable": lambda g: any(fn.once_differentiable for fn in fns(g)),
    "save inputs": lambda g: any("inputs" in fn.save for fn in fns(g)),
    "save outputs": lambda g: any("outputs" in fn.save for fn in fns(g)),
    "save intermediates": lambda g: any("intermediates" in fn.save for fn in fns(g)),
    "save nothing": lambda g: any(not fn.save for fn in fns(g)),
    "ctx state": lambda g: any(fn.ctx_state for fn in fns(g)),
    "old style": lambda g: any(fn.style == "old" for fn in fns(g)),
    "setup_context style": lambda g: any(fn.style == "setup_context" for fn in fns(g)),
    "generic code": lambda g: any(fn.code == "generic" for fn in fns(g)),
    "plain code": lambda g: any(fn.code == "plain" for fn in fns(g)),
    "both code styles in one graph": lambda g: {fn.code for fn in fns(g)} == {"generic", "plain"},
    "backward None for unused": lambda g: any(fn.unused_grad == "none" for fn in fns(g)),
    "backward zeros for unused": lambda g: any(fn.unused_grad == "zeros" for fn in fns(g)),
    "unused input requiring grad": lambda g: any(
        set(fn.tensor_slots) - {t.slot for o in fn.outputs for t in o.terms} - {o.slot for o in fn.outputs}
        for fn in fns(g)) and any(leaf.requires_grad for leaf in g.leaves),
    "gradient for non-tensor (error)": lambda g: any(fn.error == "grad_for_nontensor" for fn in fns(g)),
    "wrong gradient count (error)": lambda g: any(fn.error == "grad_count" for fn in fns(g)),
    "wrong gradient shape (error)": lambda g: any(fn.error == "grad_shape" for fn in fns(g)),
    "user jvp": lambda g: any(fn.jvp for fn in fns(g)),
    "forward AD": lambda g: g.forward_ad,
    "generate_vmap_rule": lambda g: any(fn.vmap for fn in fns(g)),
    "tensor hook": lambda g: any(h.kind == "tensor" for h in g.hooks),
    "node pre hook": lambda g: any(h.kind == "pre" for h in g.hooks),
    "node post hook": lambda g: any(h.kind == "post" for h in g.hooks),
    "saved_tensors_hooks": lambda g: any(h.kind == "saved_tensors" for h in g.hooks),
    "post-accumulate-grad hook": lambda g: any(h.kind == "post_accumulate" for h in g.hooks),
    "retain_grad": lambda g: any(h.kind == "retain_grad" for h in g.hooks),
    "jit.trace": lambda g: g.trace,
    "DAG: a Function reads another's output": lambda g: any(
        a.ref and a.ref.startswith("f") for fn in fns(g) for a in fn.args),
    "several Functions": lambda g: len(g.functions) >= 3,
    "backward()": lambda g: g.backward == "backward",
    "autograd.grad(inputs=...)": lambda g: g.backward == "grad",
    "retain_graph repeat": lambda g: g.backward == "retain",
    "create_graph double backward": lambda g: g.backward == "double",
    "backward(inputs=...) over a subset of the leaves": lambda g: g.backward in ("backward", "retain") and partial(g),
    "autograd.grad over a subset of the leaves": lambda g: g.backward in ("grad", "double") and partial(g),
    "in-place op on an output after the forward": lambda g: bool(g.mutated_outputs),
    "in-place op on a saved output: version-counter error": lambda g: version_error_expected(g),
    "needs_input_grad read under a partial backward": lambda g: partial(g) and any(
        fn.needs_input_grad != "ignore" for fn in fns(g)),
    "two tensor arguments passed by keyword": lambda g: any(
        sum(a.ref is not None for a in fn.args[len(fn.args) - fn.keyword_args:]) >= 2 for fn in fns(g)),
    "a keyword argument after one left to its default": lambda g: any(
        fn.keyword_default and fn.keyword_args >= 2 for fn in fns(g)),
    "an output returned in a list, read by a later Function": lambda g: any(
        a.ref in g.listed_refs() for fn in fns(g) for a in fn.args),
    "an output returned in a list by a one-output Function, not in a tuple": lambda g: any(
        not fn.tuple_output and fn.outputs[0].listed for fn in fns(g)),
    "the only argument that requires grad passed in a list": lambda g: any(
        fn.listed_slots and not any(Dataflow(g).requires_grad[a.ref] for a in fn.args if a.is_tensor_input)
        and any(Dataflow(g).requires_grad[fn.args[s].ref] for s in fn.listed_slots) for fn in fns(g)),
}


@pytest.mark.parametrize("axis", sorted(AXES))
def test_axis_is_reachable(axis):
    find(graphs(), AXES[axis], settings=FIND)


def test_minimal_example_is_small():
    smallest = find(graphs(), lambda g: True, settings=settings(FIND, phases=list(Phase)))
    assert len(smallest.functions) == 1 and len(smallest.leaves) == 1
    assert len(smallest.functions[0].args) == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_inputs=5, max_inputs=2), "min_inputs=5 is greater than max_inputs=2"),
    (dict(min_inputs=-1), "min_inputs=-1 must be >= 0"),
    (dict(min_functions=3, max_functions=1), "min_functions=3 is greater than max_functions=1"),
    (dict(max_leaves=0), "max_leaves=0 must be >= 1"),
    (dict(dtypes=("float8",)), "dtypes=\\('float8',\\) must be a non-empty subset"),
])
def test_impossible_bounds_raise_invalid_argument(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        find(graphs(**kwargs), lambda g: True, settings=FIND)


def test_function_specs_bounds():
    with pytest.raises(InvalidArgument, match="max_outputs=0 must be >= 1"):
        find(function_specs(max_outputs=0), lambda f: True, settings=FIND)


counts: list[int] = []


@settings(max_examples=400, database=None, deadline=None)
@given(st.data())
def _collect_input_counts(data):
    counts.append(data.draw(tensor_input_counts()))


def test_inline_capacity_edge_is_common():
    """Under the dev profile's generator, >= 10% of Functions have >= 24 tensor inputs,
    and 23-26 each occur."""
    counts.clear()
    _collect_input_counts()
    big = sum(c >= INLINE_CAPACITY for c in counts) / len(counts)
    assert big >= 0.10, big
    assert {23, 24, 25, 26} <= set(counts)


sizes: list[int] = []


@settings(max_examples=200, database=None, deadline=None)
@given(graphs())
def _collect_function_sizes(spec):
    sizes.extend(len(fn.tensor_slots) for fn in spec.functions)


def test_generated_functions_reach_the_inline_capacity():
    sizes.clear()
    _collect_function_sizes()
    assert sum(n >= INLINE_CAPACITY for n in sizes) / len(sizes) >= 0.10


@pytest.mark.parametrize("favour_torch_func", [False, True])
def test_single_choices_made_on_the_conjecture_data_are_the_strategies_choices(monkeypatch, favour_torch_func):
    """graphs() makes its single integer and boolean choices straight on Hypothesis' ConjectureData
    (strategies/_graphs.py, _choices) for speed: from the same random source they must give the same
    specs and the same choice sequence as drawing the strategies they stand for."""
    import random

    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData

    import strategies._graphs as generation

    def drawn(seed: int) -> list:
        out, rng = [], random.Random(seed)
        for _ in range(60):
            data = ConjectureData(random=rng)
            with BuildContext(data, wrapped_test=None):
                out.append((data.draw(graphs(favour_torch_func=favour_torch_func)), [n.value for n in data.nodes]))
        return out

    bound = []
    choices = generation._choices
    monkeypatch.setattr(generation, "_choices", lambda draw: bound.append(choices(draw)) or bound[-1])
    straight = drawn(1)
    assert bound and all(isinstance(data, ConjectureData) for data in bound)  # the straight route was taken
    assert choices(lambda s: None) is None  # a draw not bound to a ConjectureData
    monkeypatch.setattr(generation, "_choices", lambda draw: None)  # every choice through its strategy
    assert drawn(1) == straight
