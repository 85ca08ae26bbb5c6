"""Graph dtypes beyond float32/float64 (float16, bfloat16, complex64, complex128) and int64 /
bool tensor inputs read as masks (LeafSpec.dtype, OutputSpec.mask); docs/coverage.md, Dtypes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from harness import paths
from harness.build import build
from harness.check import check
from harness.plain import in_code_style
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, SpecError, Term


def _masked(dtype: str = "float64", mask: str = "int64", **graph) -> GraphSpec:
    """f0 = (0.5 + 1.5 x0^2 - x0) * m, m an int64 / bool leaf; f0.1 unmasked."""
    fn = FunctionSpec(
        args=(Arg("x0"), Arg("x1")),
        outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5), Term(0, "linear", -1.0)), bias=0.5, mask=1),
                 OutputSpec("compute", terms=(Term(0, "linear", 2.0),))),
        save=("inputs",), jvp=True, needs_input_grad="saved")
    return GraphSpec(shape=(2, 3), dtype=dtype, leaves=(LeafSpec(True), LeafSpec(False, dtype=mask)),
                     functions=(fn,), **graph)


@pytest.mark.parametrize("unused_grad", ["none", "zeros"])
@pytest.mark.parametrize("code", ["generic", "plain"])
@pytest.mark.parametrize("mask", ["int64", "bool"])
def test_a_mask_is_a_non_differentiable_input(code, mask, unused_grad):
    """needs_input_grad is False for the mask, backward returns None for it (also where unused
    inputs get zeros), and the gradient of the float input is masked."""
    spec = in_code_style(_masked(mask=mask), code)
    # needs_input_grad="ignore": the backward does not skip the mask by reading it
    spec = dataclasses.replace(spec, functions=(dataclasses.replace(
        spec.functions[0], unused_grad=unused_grad, needs_input_grad="ignore"),))
    built = build(spec)
    x, m = built.make_leaves()
    assert m.dtype == getattr(torch, mask) and not m.requires_grad
    out, plain_out = built.functions[0].apply(x, m)
    assert tuple(out.grad_fn.needs_input_grad) == (True, False)
    grads = out.grad_fn.apply(torch.ones_like(out), torch.zeros_like(plain_out))
    assert grads[1] is None
    expected = (3 * x.detach() - 1) * m.to(x.dtype)
    assert torch.equal(grads[0], expected)


@pytest.mark.parametrize("code", ["generic", "plain"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "complex128"])
@pytest.mark.parametrize("backward", ["backward", "double"])
def test_masked_graphs_agree_on_every_native_path(dtype, code, backward):
    spec = in_code_style(_masked(dtype, backward=backward, forward_ad=True), code)
    verdict = check(spec, [paths.get(n) for n in ("eager", "owned", "borrowed")])
    assert not verdict.failed, verdict.report()
    assert {o.status for o in verdict.outcomes.values()} == {"ok"}


def test_complex_backward_is_the_conjugate_wirtinger_gradient():
    """torch's convention for a holomorphic f: grad_input = grad_output * conj(f'(z)). The
    generated backward of 1.5 z^2 must give exactly what plain autograd gives for it."""
    spec = GraphSpec(shape=(3,), dtype="complex128", leaves=(LeafSpec(True),), functions=(FunctionSpec(
        args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",)),))
    built = build(spec)
    (z,) = built.make_leaves()
    w = built.weights(1)[0]
    built.functions[0].apply(z)[0].mul(w).sum().real.backward()
    reference = z.detach().clone().requires_grad_()
    (0.0 + 1.5 * (reference * reference)).mul(w).sum().real.backward()
    assert torch.allclose(z.grad, reference.grad, rtol=1e-14)
    assert torch.allclose(z.grad, (w * 3 * z.detach()).conj(), rtol=1e-14)


@pytest.mark.parametrize("change, message", [
    (lambda g: dataclasses.replace(g, leaves=(g.leaves[0], LeafSpec(True, dtype="int64"))),
     r"leaves\[1\]\.requires_grad=True is invalid: torch: 'Only Tensors of floating point dtype"),
    (lambda g: dataclasses.replace(g, leaves=(g.leaves[0], LeafSpec(False, dtype="int32"))),
     r"leaves\[1\]\.dtype='int32' is invalid"),
    (lambda g: dataclasses.replace(g, functions=(dataclasses.replace(g.functions[0], outputs=(
        dataclasses.replace(g.functions[0].outputs[0], mask=0),) + g.functions[0].outputs[1:]),)),
     r"outputs\[0\]\.mask=0 is invalid: not an int64 / bool tensor argument"),
    (lambda g: dataclasses.replace(g, functions=(dataclasses.replace(g.functions[0], outputs=(
        OutputSpec("compute", terms=(Term(1, "linear", 1.0),)),)),)),
     r"args\[1\]=.* is invalid: an int64 / bool argument is read only as a mask"),
    (lambda g: dataclasses.replace(g, dtype="complex64", functions=(dataclasses.replace(g.functions[0], outputs=(
        OutputSpec("compute", terms=(Term(0, "sin", 1.0),)),), args=(Arg("x0"),)),), leaves=g.leaves[:1]),
     r"outputs=\['sin'\] is invalid: a complex64 graph uses the ops \('linear', 'square'\) only"),
])
def test_invalid_dtype_combinations_name_field_and_value(change, message):
    with pytest.raises(SpecError, match=message):
        change(_masked())


def test_old_spec_files_load_unchanged():
    """Specs written before these fields (no LeafSpec.dtype, no OutputSpec.mask) still load."""
    text = _masked().to_json().replace(', "mask": 1', "").replace(', "mask": -1', "")
    text = text.replace('"dtype": null, ', "").replace('"dtype": "int64", ', "")
    loaded = GraphSpec.from_json(text)
    assert loaded.leaves[1].dtype is None and loaded.functions[0].outputs[0].mask == -1


def test_a_mask_leaf_has_no_tangent_in_the_dataflow():
    """run.py gives int64 / bool leaves no tangent, so a Function reading only a mask makes an
    output without one; a later Function with materialize_grads=False returning a view of it
    hits the registered fwad-input-as-is-none-tangent assert, which the dataflow must predict
    (a campaign found the harness missing it)."""
    from harness.dataflow import Dataflow

    spec = GraphSpec(
        shape=(3,), dtype="float32", leaves=(LeafSpec(True), LeafSpec(False, dtype="bool")), forward_ad=True,
        functions=(
            FunctionSpec(args=(Arg("x1"),), outputs=(OutputSpec("compute", bias=-1.0, mask=0),), jvp=True,
                         tuple_output=False),
            FunctionSpec(args=(Arg("x0"), Arg("f0.0")), outputs=(OutputSpec("view", slot=1),), jvp=True,
                         materialize_grads=False)))
    flow = Dataflow(spec).forward_ad
    assert "x1" not in flow.with_tangent and "f0.0" not in flow.with_tangent
    assert flow.asserts == ((1, 0),)
    verdict = check(spec, [paths.get("eager")])
    assert verdict.outcomes["eager"].known == ("fwad-input-as-is-none-tangent",), verdict.report()
    assert verdict.outcomes["eager"].status == "ok", verdict.report()
