"""A known torch issue never hides another failure.

For every registry entry: an example that triggers it (the issue is hit, and the example
is not failed), then the same example with an unrelated fault injected, which must fail:
  * scaled_gradient: one Function's backward returns 1.5x the gradient of one input (every path);
  * wrong_jvp: another Function's jvp returns 1.5x its tangents (every path);
  * one_path_wrong: the path under test alone returns one gradient (or output) 1.5x.
The faults are injected here, around the real build and the real paths.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from harness import check as check_module
from harness import paths
from harness.build import build as real_build
from harness.check import check
from harness.known_issues import KNOWN_ISSUES, message_as_raised, torch_release
from harness.oracles import holders
from harness.oracles.lifetimes import RELEASE_CHECKPOINTS
from harness.paths import compiled as compiled_modes
from harness.paths import dynamo as dynamo_backends
from harness.run import RunResult
from harness.spec import Arg, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term, as_custom_op, load_spec

X0, X1 = Arg("x0"), Arg("x1")


def lin(slot: int, coeff: float = 2.0) -> OutputSpec:
    return OutputSpec("compute", terms=(Term(slot, "linear", coeff),))


def graph(*functions: FunctionSpec, **kw) -> GraphSpec:
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()), functions=functions, **kw)


def without_grad(*functions: FunctionSpec) -> GraphSpec:
    """Leaves x0, x1 that do not require grad, and x2 that does."""
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(False), LeafSpec(False), LeafSpec()),
                     functions=functions)


SIN1 = OutputSpec("compute", terms=(Term(1, "sin", 2.0),))
SIN0 = OutputSpec("compute", terms=(Term(0, "sin", 2.0),))


def fn(*args: Arg, outputs: tuple[OutputSpec, ...], **kw) -> FunctionSpec:
    return FunctionSpec(args=args, outputs=outputs, tuple_output=len(outputs) > 1, **kw)


# a Function with a non-differentiable output, so a later Function has an input without a tangent
TANGENTLESS = fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 1.0),), non_differentiable=True),
                              lin(0)), jvp=True)

# a Function applied with no arguments that reads ctx.needs_input_grad in its forward
NO_ARGUMENTS_READING_NEEDS_INPUT_GRAD = graph(
    FunctionSpec(args=(), outputs=(OutputSpec("compute", bias=0.5),), tuple_output=False,
                 needs_input_grad="saved", code="plain"), fn(X1, outputs=(lin(0),), code="plain"))

# a Function that scales in place a view of x2, its second tensor input, then one that reads x1
DIRTY_VIEW_AT_SLOT_1 = (fn(X0, Arg("x2", clone=True, view=True), outputs=(OutputSpec("dirty", slot=1, coeff=2.0),)),
                        fn(X1, outputs=(lin(0),)))

#: issue id -> (path, a spec that triggers it, the Function whose backward the scaled_gradient
#: fault changes and the slot (None where the bug's structure leaves no gradient to change),
#: the Function whose jvp the wrong_jvp fault changes, or None)
CASES = {
    "copyslices-skips-gradient-validation": ("eager", graph(
        fn(Arg("x0", clone=True, view=True), outputs=(OutputSpec("dirty", slot=0, coeff=2.0),), error="grad_shape"),
        fn(X1, outputs=(lin(0),))), (1, 0), None),
    # autograd.grad, and the first input (x0) does not require grad while the view's base (x2) does:
    # CopySlices' INTERNAL ASSERT (the misrouted gradient itself is None or zeros in generated
    # backwards, which no comparison with the math oracle tells apart)
    "eager-dirty-view-not-first-input": ("eager", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(False), LeafSpec(), LeafSpec()),
        functions=DIRTY_VIEW_AT_SLOT_1, backward="grad"), (1, 0), None),
    "fwad-input-as-is-none-tangent": ("eager", graph(
        TANGENTLESS, fn(Arg("f0.0"), X1, outputs=(OutputSpec("input", slot=0), lin(1)), jvp=True,
                        materialize_grads=False), forward_ad=True), (1, 1), 0),
    "fwad-view-drops-later-tangents": ("eager", graph(
        TANGENTLESS, fn(Arg("f0.0"), X1, outputs=(OutputSpec("view", slot=0), lin(1)), jvp=True),
        forward_ad=True), (1, 1), 0),
    "ca-none-gradient-accumulated": ("compiled", graph(
        fn(X0, X0, X1, outputs=(lin(0), lin(2)))), (0, 2), None),
    "ca-function-backward-unvalidated": ("compiled", graph(
        fn(X0, Arg(const=2), outputs=(lin(0),), error="grad_for_nontensor", unused_grad="zeros"),
        fn(X1, outputs=(lin(0),))), (1, 0), None),
    "ca-function-vjp-ignored": ("compiled", graph(
        fn(X0, outputs=(lin(0),), backward_method="vjp"), fn(X1, outputs=(lin(0),))), (1, 0), None),
    "ca-too-few-gradients-indexerror": ("compiled", graph(
        fn(X0, X1, outputs=(lin(0),), error="grad_count", unused_grad="zeros"), fn(X1, outputs=(lin(0),))),
        (1, 0), None),
    "ca-invalid-gradient-message": ("compiled", graph(
        fn(X0, outputs=(lin(0),), error="grad_shape"), fn(X1, outputs=(lin(0),))), (1, 0), None),
    # a known crash: the example is not run on the path, its workaround (no retain_grad there) is
    "ca-retain-grad-none-gradient-segfault": ("compiled", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(views=2), LeafSpec()),
        hooks=(HookSpec("retain_grad", target="x0[0]"),),
        functions=(fn(Arg("x0[0]"), Arg("x0[1]"), outputs=(lin(1),)), fn(X1, outputs=(lin(0),)))), (1, 0), None),
    # F0's output is a constant (bias 1) and its backward returns None: the compiled region's backward
    # sends no gradient to x0, and compiled autograd skips it (x1, unread, gets none either)
    "ca-aot-region-without-input-gradient-skipped": ("dynamo:aot_eager", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(), bias=1.0),), materialize_grads=False, unused_grad="none",
           code="plain"),
        hooks=(HookSpec("retain_grad", "f0.0"), HookSpec("post_accumulate", "x0")), compiled_backward=True,
        forward_code="straight"), None, None),
    "ca-prehook-unused-first-gradient": ("compiled", graph(
        fn(X0, outputs=(OutputSpec("const", value=0), lin(0))), fn(X1, outputs=(lin(0),)),
        hooks=(HookSpec("pre", "f0.1"),)), (1, 0), None),
    "ca-unpack-hook-create-graph": ("compiled", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "square", 2.0),)),), save=("inputs",)),
        fn(X1, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",)),
        backward="double", hooks=(HookSpec("saved_tensors"),)), (1, 0), None),
    # two Functions save through the detaching hooks, the graph retained (double): the guard fails
    "ca-retained-saved-tensors-guard": ("compiled:eager", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "square", 2.0),)),), save=("inputs",)),
        fn(X1, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",)),
        backward="double", hooks=(HookSpec("saved_tensors"),)), (1, 0), None),
    # the second backward enters F0 through f0.0 (F1's square reads it) and never reaches f0.1
    "ca-tensor-hook-unreached-output": ("compiled", graph(
        fn(X0, outputs=(lin(0), lin(0, 1.5))),
        fn(Arg("f0.0"), outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",)),
        fn(X1, outputs=(lin(0),)), backward="double", hooks=(HookSpec("tensor", "f0.1"),)), (2, 0), None),
    # the second backward enters F1 (materialize_grads=False) through f1.0 only: F1 returns None for
    # f0.1, which plain F0 (materialize_grads=True) gets as None and multiplies (TypeError)
    "ca-runtime-none-not-materialized": ("compiled", graph(
        fn(X0, outputs=(lin(0), lin(0, 3.0)), code="plain"),
        fn(Arg("f0.0"), Arg("f0.1"), outputs=(OutputSpec("input", slot=0), OutputSpec("input", slot=1)),
           materialize_grads=False),
        fn(Arg("f1.0"), outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",)),
        fn(X1, outputs=(lin(0),)), backward="double"), (3, 0), None),
    "ca-eager-backend-pins-inputs": ("compiled:eager", graph(
        fn(X0, outputs=(lin(0),), code="plain"), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "ca-dynamo-function-ctx-cycle": ("compiled:aot_eager", graph(
        fn(X0, outputs=(lin(0),), code="plain"), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # the output F0 saves is modified in place before backward; its backward reads only the shape
    "dynamo-unread-saved-output-unchecked": ("dynamo", graph(
        fn(X0, outputs=(lin(0),), save=("outputs",), style="setup_context", code="plain"),
        fn(X1, outputs=(lin(0),), code="plain"), mutated_outputs=("f0.0",)), (1, 0), None),
    # F1 saves f0.0 (the input of its sin term, read by its backward), which is modified in place before
    # backward: under backend eager nothing checks its version; F2 reads x1, outside the damage
    "dynamo-eager-saved-tensors-unchecked": ("dynamo:eager", graph(
        fn(X0, outputs=(lin(0),), code="plain"), fn(Arg("f0.0"), outputs=(SIN0,), save=("inputs",), code="plain"),
        fn(X1, outputs=(lin(0),), code="plain"), mutated_outputs=("f0.0",)), (2, 0), None),
    # a traced Function's backward under the eager backend is not differentiated: F0's dgrad is lost
    "dynamo-eager-function-backward-not-differentiable": ("dynamo:eager", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "sin", 2.0),)),), save=("inputs",), code="plain"),
        fn(X1, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",), code="plain"),
        backward="double"), (1, 0), None),
    "dynamo-function-class-attribute": ("dynamo", graph(
        fn(X0, outputs=(lin(0),)), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-function-class-attribute-backward": ("compiled:eager", graph(
        fn(X0, outputs=(lin(0),)), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # no input of the generic Function requires grad, so Dynamo traces into its forward(*args)
    "dynamo-function-varargs-forward": ("dynamo", without_grad(
        fn(X0, X1, outputs=(SIN1,), save=("inputs",)), fn(Arg("x2"), outputs=(lin(0),), code="plain")),
        (1, 0), None),
    "dynamo-function-varargs-forward-values": ("dynamo", without_grad(
        fn(X0, X1, outputs=(SIN1,), save=("inputs",), style="setup_context"),
        fn(Arg("x2"), outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-single-non-differentiable-output": ("dynamo", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),), non_differentiable=True),),
           code="plain"), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-input-returned-as-is-not-a-view": ("dynamo", without_grad(
        fn(X0, X1, outputs=(OutputSpec("input", slot=0), lin(1)), code="plain"),
        fn(Arg("x2"), outputs=(lin(0),), code="plain")), (1, 0), None),
    # a backward that unpacks ctx.saved_variables, empty in Dynamo's traced backward
    "dynamo-function-saved-variables-empty": ("dynamo", graph(
        fn(X0, outputs=(SIN0,), save=("inputs",), code="plain", saved_read="saved_variables"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-no-inputs-needs-input-grad-none": ("dynamo", NO_ARGUMENTS_READING_NEEDS_INPUT_GRAD, (1, 0), None),
    "dynamo-no-inputs-needs-input-grad-missing": ("dynamo", NO_ARGUMENTS_READING_NEEDS_INPUT_GRAD, (1, 0), None),
    "dynamo-hook-on-output-used-inside": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()), functions=(
            fn(X0, outputs=(lin(0),), code="plain"), fn(Arg("f0.0"), outputs=(lin(0),), code="plain"),
            fn(X1, outputs=(lin(0),), code="plain")),
        hooks=(HookSpec("retain_grad", "f0.0"), HookSpec("tensor", "f0.0"))), (2, 0), None),
    # the bug needs an empty complex graph: every tensor is empty, so no fault can be seen beside it
    "inductor-complex-empty-view-dtype": ("dynamo:inductor", GraphSpec(
        shape=(0,), dtype="complex64", leaves=(LeafSpec(),), functions=(
            fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.5),)),), save=("inputs",),
               code="plain", style="setup_context"),)), None, None),
    # a sum (bias plus a term) of 0-dim complex tensors: Inductor returns it as a view
    "inductor-complex-zero-dim-sum-is-a-view": ("dynamo:inductor", GraphSpec(
        shape=(), dtype="complex128", leaves=(LeafSpec(), LeafSpec()), functions=(
            fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),), bias=0.5),), code="plain"),
            fn(X1, outputs=(lin(0),), code="plain"))), (0, 0), None),
    # F0 inside grad(vmap) from x0's clone (computed inside the transform): the op Dynamo makes
    "func-dynamo-vmap-grad-apply-template": ("func.vmap_grad+dynamo", graph(
        fn(Arg("x0", clone=True), outputs=(lin(0),), style="setup_context", code="plain", vmap=True),
        fn(Arg("f0.0"), X1, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0), Term(1, "linear", 1.0))),),
           style="setup_context", code="plain", vmap=True)), (1, 0), None),
    # x0 as is beside a tensor computed from it, the backward reading needs_input_grad
    "func-dynamo-needs-input-grad-of-transform-input": ("func.grad+dynamo", graph(
        fn(X0, Arg("x0", clone=True), outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),
                                                                             Term(1, "linear", 1.0))),),
           style="setup_context", code="plain", vmap=True, needs_input_grad="read"),
        fn(X1, outputs=(lin(0),), style="setup_context", code="plain", vmap=True)), None, None),
    # a custom_op under jacfwd: its tangent reads zero
    "func-custom-op-forward-ad-zero-tangent": ("func.jacfwd", graph(
        as_custom_op(fn(X0, X1, outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "linear", 2.0))),),
                        style="setup_context", save=("inputs",)))), None, None),
    # a custom_op under grad: refused at forward; checked past it on the op as a Function
    "func-custom-op-register-autograd-refused": ("func.grad", graph(
        as_custom_op(fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5),)),), style="setup_context",
                        save=("inputs",))),
        fn(X1, outputs=(lin(0),), style="setup_context", code="plain", vmap=True)), (1, 0), None),
    # a 10-minute func campaign's spec: F0 multiplies in place a view of a clone of x0 it marks dirty,
    # and under grad(torch.compile) the update is lost (the simpler graphs tried here keep it)
    "func-dynamo-aot-dirty-clone-update-lost": ("func.grad+dynamo", load_spec(
        str(Path(__file__).resolve().parent.parent / "docs/func_repros/func_dynamo_aot_dirty_clone_update_lost_d5137f6d.json")),
        None, None),
    # F0 applied with its constant left to the forward's default: setup_context's inputs come short
    "dynamo-function-default-arguments-not-filled": ("dynamo", graph(
        fn(X0, Arg(const=2.0), outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5),)),), style="setup_context",
           save=("inputs",), code="plain", keyword_args=1, keyword_default=True),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # F0 returns its second output in a list; F1 reads it beside x1
    "dynamo-listed-output-tracked": ("dynamo", graph(
        fn(X0, outputs=(SIN0, dataclasses.replace(lin(0), listed=True)), style="setup_context", save=("inputs",),
           code="plain"),
        fn(X1, Arg("f0.1"), outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "linear", 2.0))),),
           save=("inputs",), code="plain")), (1, 0), None),
    # F0 gets x2, the only input that requires grad, in a list: eager's output does not require grad
    "dynamo-listed-argument-tracked": ("dynamo", without_grad(
        fn(X0, Arg("x2", listed=True), outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0), Term(1, "sin", 1.5))),),
           save=("inputs",), code="plain"),
        fn(Arg("x2"), X1, outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "linear", 2.0))),),
           save=("inputs",), code="plain")), (1, 0), None),
    "dynamo-function-single-constant-output": ("dynamo", graph(
        fn(X0, outputs=(OutputSpec("const", value=1),), code="plain"), fn(X1, outputs=(lin(0),), code="plain")),
        (1, 0), None),
    # the bug needs every input of the compiled region to get no gradient (its workaround
    # makes them zeros), so no gradient exists for a scaled-gradient fault to change
    "dynamo-aot-detached-input-drops-requires-grad": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(views=2),), functions=(
            fn(Arg("x0[0]"), outputs=(OutputSpec("compute", bias=0.5),), code="plain"),
            fn(Arg("f0.0"), outputs=(lin(0),), code="plain"))), None, None),
    # F0 (one tensor passed twice) breaks Dynamo's graph and runs eagerly; F1 alone in the next region
    "dynamo-aot-detached-region-input-drops-requires-grad": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(views=2), LeafSpec()), functions=(
            fn(X1, X1, outputs=(lin(0),), code="plain"),
            fn(Arg("x0[0]"), outputs=(OutputSpec("compute", bias=0.5),), code="plain"))), (0, 0), None),
    # F0 reads x0[1] and sends it no gradient (AOT detaches it); x0[0] keeps f0.0 requiring grad
    "dynamo-aot-detached-input-node-hooks-not-fired": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(views=2), LeafSpec()), functions=(
            fn(Arg("x0[0]"), Arg("x0[1]"), outputs=(lin(0),), code="plain"), fn(X1, outputs=(lin(0),), code="plain")),
        hooks=(HookSpec("pre", "x0[1]"),)), (1, 0), None),
    # F1 returns two views of f0.0, computed in the graph: its backward is skipped, so x2, for
    # which it returns zeros, gets None; F2 reads x1, outside the damage
    "dynamo-aot-intermediate-alias-skips-backward": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec(), LeafSpec()), functions=(
            fn(X0, outputs=(lin(0),), code="plain"),
            fn(Arg("f0.0"), Arg("x2"), outputs=(OutputSpec("view", slot=0), OutputSpec("view", slot=0)),
               code="plain", unused_grad="zeros"),
            fn(X1, outputs=(lin(0),), code="plain"))), (2, 0), None),
    # loop form: F0 (x1 passed twice) breaks the graph, so each apply is compiled in a frame of its own,
    # and F1 scales in place x0's clone, an input of its frame: F1's backward is skipped for it (x0's
    # gradient is 1 where eager's is 2); F0 reads x1, outside the damage
    "dynamo-aot-dirty-graph-input-skips-backward": ("dynamo", graph(
        fn(X1, X1, outputs=(lin(0),), code="plain"),
        fn(Arg("x0", clone=True), outputs=(OutputSpec("dirty", slot=0, coeff=2.0),), code="plain",
           dirty_return="input"), forward_code="loop"), (0, 0), None),
    "dynamo-fallback-drops-mark-non-differentiable": ("dynamo", graph(
        fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),), non_differentiable=True), lin(0)),
           code="plain", jvp=True), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # outputs (7, a, b) with a marked: under torch.compile b is marked instead (a requires grad, b
    # gets no gradient)
    "dynamo-mark-non-differentiable-index-shifted": ("dynamo", graph(
        fn(X0, outputs=(OutputSpec("const", value=7), OutputSpec("compute", terms=(Term(0, "linear", 2.0),),
                                                                   non_differentiable=True), SIN0),
           style="setup_context", code="plain", save=("inputs",)), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # outputs (7, x0's clone scaled in place, a view of x1's clone): the dirty mark lands on the view
    "dynamo-mark-dirty-index-shifted": ("dynamo", graph(
        fn(Arg("x0", clone=True), Arg("x1", clone=True), outputs=(
            OutputSpec("const", value=7), OutputSpec("dirty", slot=0, coeff=2.0), OutputSpec("view", slot=1)),
           code="plain", dirty_return="input"), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # F0's print breaks the graph: the view of x1's clone (x1 does not require grad) comes out of
    # the compiled region before it, and F0 scales it in place beside x0, which requires grad
    "dynamo-fallback-dirty-view-made-in-no-grad": ("dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec(False)), functions=(
            fn(Arg("x1", clone=True, view=True), X0, outputs=(OutputSpec("dirty", slot=0, coeff=2.0),),
               style="setup_context", code="plain", untraceable="print"),
            fn(X0, outputs=(lin(0),), code="plain"))), (1, 0), None),
    "dynamo-trace-state-cycle": ("dynamo", graph(
        fn(X0, outputs=(lin(0),), code="plain", jvp=True), fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # F0, which Dynamo traces into autograd_function_apply, saves its input
    "dynamo-eager-apply-template-cycle": ("dynamo:eager", graph(
        fn(X0, outputs=(SIN0,), save=("inputs",), code="plain"), fn(X1, outputs=(lin(0),), code="plain")),
        (1, 0), None),
    "dynamo-function-backward-checked-differently": ("dynamo", graph(
        fn(X0, Arg(const=2), outputs=(lin(0),), error="grad_for_nontensor", unused_grad="zeros", code="plain"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-mark-dirty-inplace-result": ("dynamo", graph(
        fn(Arg("x0", clone=True), X1, outputs=(OutputSpec("dirty", slot=0, coeff=2.0), lin(1)), code="plain"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # F0, which no input requiring grad reaches, computes a tensor and then scales a 0-dim float64
    # clone in place (mark_dirty breaks Dynamo's graph): the scaling is lost; F1 reads x1
    # F0 has the flag and a jvp (no forward AD runs): Dynamo raises at forward; F1 reads x1
    "dynamo-clear-saved-tensors-with-jvp": ("dynamo", graph(
        fn(X0, outputs=(SIN0,), save=("inputs",), jvp=True, clear_saved_tensors_on_access=True, code="plain"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-zero-dim-float64-input-mutation-lost": ("dynamo", GraphSpec(
        shape=(), dtype="float64", leaves=(LeafSpec(False), LeafSpec()), functions=(
            fn(Arg("x0", clone=True), outputs=(OutputSpec("compute", bias=-1.0), OutputSpec("dirty", slot=0, coeff=-1.5)),
               code="plain", dirty_return="input"),
            fn(X1, outputs=(lin(0),), code="plain"))), (1, 0), None),
    # F0's print breaks the graph: it runs eagerly and sends None to x0's clone, made in the compiled
    # region before it, whose backward hands x0 zeros; F1 reads x1
    "aot-unused-gradient-materialized-as-zeros": ("dynamo", graph(
        fn(X1, Arg("x0", clone=True), outputs=(lin(0),), code="plain", untraceable="print"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    "dynamo-function-closure-object": ("dynamo", graph(
        fn(X0, X1, outputs=(SIN1,), save=("inputs",), style="setup_context"),
        fn(X1, outputs=(lin(0),), code="plain")), (1, 0), None),
    # torch.func paths (harness/paths/func.py): Functions in setup_context style
    "func-function-vjp-ignored": ("func.grad", graph(
        fn(X0, outputs=(lin(0),), style="setup_context", backward_method="vjp"),
        fn(X1, outputs=(lin(0),), style="setup_context")), (1, 0), None),
    "func-vmap-single-constant-output": ("func.grad_vmap", graph(
        fn(X0, outputs=(OutputSpec("const", value=2),), style="setup_context", vmap=True),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True)), (1, 0), None),
    "func-jacfwd-aux-empty-input": ("func.jacfwd", GraphSpec(
        shape=(0,), dtype="float64", leaves=(LeafSpec(), LeafSpec()),
        functions=(fn(X0, X1, outputs=(SIN1,), style="setup_context", vmap=True, jvp=True, save=("inputs",)),)),
        None, None),
    "func-grad-vmap-saved-output-and-forward": ("func.grad_vmap", graph(
        fn(X0, X1, outputs=(SIN1,), save=("inputs", "outputs"), style="setup_context", vmap=True, jvp=True),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True)), (1, 0), None),
    # F0's outputs are marked non-differentiable and its backward returns too few gradients: eager
    # never calls it; under grad(vmap) the marks are lost, F1's backward reaches F0's, and it raises
    "func-grad-vmap-mark-non-differentiable-lost": ("func.grad_vmap", graph(
        fn(X0, outputs=(dataclasses.replace(SIN0, non_differentiable=True), OutputSpec("compute", bias=0.5,
           non_differentiable=True)), save=("inputs",), style="setup_context", vmap=True, error="grad_count"),
        fn(Arg("f0.0"), X1, outputs=(lin(1),), style="setup_context", vmap=True)), (1, 1), None),
    # x0 is shared by the batch; F0's first output reads x1 too (batched), its second x0 alone (not)
    "func-grad-vmap-shared-input-gradient-counted-per-sample": ("func.grad_vmap", graph(
        fn(X0, X1, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0), Term(1, "linear", 2.0))), lin(0)),
           style="setup_context", vmap=True),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True), batch_shared=(0,)), (1, 0), None),
    # F0 scales its clone of x0, and F1 squares F0's output: Dynamo traces F1 (its input requires grad
    # as Dynamo sees it) and the outer grad of grad(grad) loses the second order through it
    "func-dynamo-grad-grad-traced-function-second-order-lost": ("func.grad+dynamo", graph(
        fn(Arg("x0", clone=True), outputs=(lin(0),), style="setup_context"),
        fn(Arg("f0.0"), X1, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.0), Term(1, "linear", 2.0))),),
           style="setup_context", save=("inputs",)), backward="double"), (1, 1), None),
    "func-vmap-mark-dirty": ("func.vmap_grad", graph(
        fn(Arg("x0", clone=True), X1, outputs=(OutputSpec("dirty", slot=0, coeff=2.0), lin(1)), style="setup_context",
           vmap=True),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True)), (1, 0), None),
    # f0.0 = 2 sin(x0) is hooked and squared by f1: its gradient depends on x0, so the second
    # backward passes through it
    "func-grad-grad-tensor-hook-outer-level": ("func.grad", graph(
        fn(X0, outputs=(SIN0,), save=("inputs",), style="setup_context"),
        fn(Arg("f0.0"), X1, outputs=(OutputSpec("compute", terms=(Term(0, "square", 1.0), Term(1, "linear", 2.0))),),
           save=("inputs",), style="setup_context"),
        backward="double", hooks=(HookSpec("tensor", "f0.0"),)), (1, 0), None),
    "func-grad-vmap-wrong-shape-gradient": ("func.grad_vmap", graph(
        fn(X1, X0, outputs=(SIN1,), save=("inputs",), style="setup_context", vmap=True, error="grad_shape"),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True)), (1, 0), None),
    # F1 doubles in place a view of F0's constant (no batch dim under vmap) beside x1
    "func-grad-vmap-dirty-unbatched-view": ("func.grad_vmap", graph(
        FunctionSpec(args=(), outputs=(OutputSpec("compute", bias=0.5),), tuple_output=False, style="setup_context",
                     vmap=True),
        fn(Arg("f0.0", clone=True, view=True), X1, outputs=(OutputSpec("dirty", slot=0, coeff=2.0),),
           style="setup_context", vmap=True),
        fn(X1, outputs=(SIN0,), save=("inputs",), style="setup_context", vmap=True)), (2, 0), None),
    # F0's constant output f0.0 (no batch dim under vmap) is squared by F1, which saves it: its
    # gradient requires grad under grad's create_graph, and F0 returns a batched gradient for x0
    "func-grad-vmap-once-differentiable-batched-result": ("func.grad_vmap", graph(
        fn(X0, outputs=(OutputSpec("compute", bias=0.5), lin(0)), style="setup_context", vmap=True,
           once_differentiable=True),
        fn(Arg("f0.0"), outputs=(OutputSpec("compute", terms=(Term(0, "square", -0.5),)),), save=("inputs",),
           style="setup_context", vmap=True),
        fn(X1, outputs=(lin(0),), style="setup_context", vmap=True)), (2, 0), None),
    # no scaled-gradient case: the bug drops every custom backward on the path, the scaled one
    # too (a fault the bug itself hides, not the mask); a wrong value of the path still fails
    "func-dynamo-custom-rules-dropped": ("func.grad+dynamo", graph(
        fn(X0, Arg(const=2), outputs=(lin(0),), style="setup_context", code="plain", error="grad_count"),
        fn(X1, outputs=(lin(0),), style="setup_context", code="plain")), None, None),
    # no scaled-gradient case: torch.compile drops the Functions' backward on this path
    # (func-dynamo-custom-rules-dropped); the Function with the side effect reads x0 * 2
    "func-dynamo-side-effect-fake-tensor": ("func.grad+dynamo", graph(
        fn(X0, outputs=(lin(0),), style="setup_context", code="plain"),
        fn(Arg("f0.0"), X1, outputs=(lin(0), lin(1)), style="setup_context", code="plain", untraceable="side_effect")),
        None, None),
    # no scaled-gradient or wrong-jvp case: torch.compile drops the Functions' jvp on this path
    "func-dynamo-jvp-view-of-gapped-primal": ("func.jvp+dynamo", GraphSpec(
        shape=(3,), dtype="float64", leaves=(LeafSpec(layout="strided", views=2), LeafSpec()), forward_ad=True,
        functions=(fn(Arg("x0[0]"), X1, outputs=(SIN0,), save=("inputs",), style="setup_context", code="plain", jvp=True),
                   fn(X1, outputs=(lin(0),), style="setup_context", code="plain", jvp=True))), None, None),
    # no scaled-gradient or wrong-jvp case: reached only where torch.compile drops the Functions' rules
    "func-jvp-zero-dim-scalar-tangent-dtype": ("func.jvp+dynamo", GraphSpec(
        shape=(), dtype="float32", leaves=(LeafSpec(), LeafSpec()), forward_ad=True, functions=(
            fn(X0, X1, outputs=(SIN1,), save=("inputs",), style="setup_context", code="plain", jvp=True),
            fn(X1, outputs=(lin(0),), style="setup_context", code="plain", jvp=True))), None, None),
}

#: cases whose tensors are all empty: no value fault can be seen beside the issue (and none hidden)
NOTHING_TO_SCALE = {"func-jacfwd-aux-empty-input", "inductor-complex-empty-view-dtype"}


#: entries whose bug changes no result of an example, so they explain no mismatch and have no case
NO_RESULT_SHOWS = {"ca-captured-graph-leaked", "ca-capture-error-leaks-compile-context"}


def test_every_registry_entry_has_a_mask_case():
    assert set(CASES) | NO_RESULT_SHOWS == {k.id for k in KNOWN_ISSUES}
    assert not set(CASES) & NO_RESULT_SHOWS


@pytest.mark.parametrize("issue_id", sorted(NO_RESULT_SHOWS))
def test_an_entry_no_result_shows_explains_no_mismatch(issue_id, monkeypatch):
    """Such an entry is triggered by every example it names, so it must never explain a mismatch:
    a wrong gradient beside it still fails, and it is not named as known."""
    issue = next(k for k in KNOWN_ISSUES if k.id == issue_id)
    spec = graph(fn(X0, outputs=(lin(0),), code="plain"), fn(X1, outputs=(lin(0),), code="plain"))
    path = paths.get(issue.paths[0])
    assert issue.triggered(spec, path.name)
    verdict = check(spec, [path])
    assert verdict.outcomes[path.name].status == "ok" and issue_id not in verdict.outcomes[path.name].known
    _with_faulty_classes(monkeypatch, lambda m, cls: _scaled(cls, "backward", lambda i: i == 0) if m == 1 else cls)
    outcome = check(spec, [path]).outcomes[path.name]
    assert outcome.status == "failed" and issue_id not in outcome.known, outcome.reason


def _with_faulty_classes(monkeypatch, change) -> None:
    """Every graph check() builds gets its Function classes passed through `change`."""
    def build(spec, device="cpu"):
        built = real_build(spec, device)
        return dataclasses.replace(built, functions=tuple(change(n, cls) for n, cls in enumerate(built.functions)))
    monkeypatch.setattr(check_module, "build", build)


def _scaled(cls: type, method: str, pick) -> type:
    """A subclass whose `method` (backward or jvp) returns `pick`ed results scaled by 1.5."""
    original = getattr(cls, method)

    def wrong(ctx, *args):
        out = original(ctx, *args)
        many = isinstance(out, tuple)
        out = [o * 1.5 if isinstance(o, torch.Tensor) and pick(i) else o
               for i, o in enumerate(out if many else (out,))]
        return tuple(out) if many else out[0]
    return type(cls.__name__, (cls,), {method: staticmethod(wrong)})


class OnePathWrong:
    """The path under test, with one gradient (else one output) of its result scaled by 1.5: x1's
    gradient, else f1.0, else the first other one; one with a nonzero element (1.5 x 0 is no fault)."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name
        self.exact_vs_eager = inner.exact_vs_eager
        self.lifetimes_vs_eager = getattr(inner, "lifetimes_vs_eager", True)
        if hasattr(inner, "observed"):  # a func path narrows its references to what it observes
            self.observed = inner.observed

    def available(self):
        return self.inner.available()

    def unsupported(self, spec):
        return self.inner.unsupported(spec)

    def run(self, built) -> RunResult:
        result = self.inner.run(built)
        backward, forward = result.tensors.get("backward", {}), result.tensors.get("forward", {})
        candidates = [(backward, "grad:x1"), (forward, "out:f1.0"),
                      *((backward, role) for role in sorted(backward)), *((forward, role) for role in sorted(forward))]
        for values, role in candidates:
            t = values.get(role)
            if t is not None and (t.is_floating_point() or t.is_complex()) and bool((t != 0).any()):
                values[role] = t * 1.5
                break
        return result


#: cases the harness reaches only from a later torch than the entry's reproducer: torch 2.13's
#: Dynamo compiles this jvp graph without the assert its standalone reproducer meets
REACHED_FROM = {"func-dynamo-jvp-view-of-gapped-primal": (2, 14, 0)}


def _outcome(issue_id: str, path=None):
    issue = next(k for k in KNOWN_ISSUES if k.id == issue_id)
    if not issue.affects_installed_torch():
        pytest.skip(f"{issue_id} affects torch {issue.first} to {issue.last or 'now'}, not {torch.__version__}")
    if torch_release() < REACHED_FROM.get(issue_id, (0, 0, 0)):
        pytest.skip(f"the harness reaches {issue_id} from torch {REACHED_FROM[issue_id]}, not {torch.__version__}")
    name, spec, _, _ = CASES[issue_id]
    path = path or paths.get(name)
    verdict = check(spec, [path])
    return verdict, verdict.outcomes[path.name]


@pytest.mark.parametrize("issue_id", sorted(CASES))
def test_the_case_hits_its_issue_and_nothing_fails(issue_id):
    verdict, outcome = _outcome(issue_id)
    assert issue_id in outcome.known, verdict.report()
    assert outcome.status != "failed", verdict.report()


@pytest.mark.parametrize("issue_id", sorted(k for k, case in CASES.items() if case[2] is not None))
def test_a_scaled_gradient_beside_the_issue_fails(issue_id, monkeypatch):
    n, slot = CASES[issue_id][2]
    _with_faulty_classes(monkeypatch, lambda m, cls: _scaled(cls, "backward", lambda i: i == slot)
                         if m == n else cls)
    verdict, outcome = _outcome(issue_id)
    assert outcome.status == "failed", verdict.report()
    assert issue_id in outcome.known, verdict.report()


@pytest.mark.parametrize("issue_id", sorted(k for k, case in CASES.items() if case[3] is not None))
def test_a_wrong_jvp_in_another_function_fails(issue_id, monkeypatch):
    other = CASES[issue_id][3]
    _with_faulty_classes(monkeypatch, lambda m, cls: _scaled(cls, "jvp", lambda i: True) if m == other else cls)
    verdict, outcome = _outcome(issue_id)
    assert outcome.status == "failed", verdict.report()
    assert issue_id in outcome.known, verdict.report()


@pytest.mark.parametrize("issue_id", sorted(set(CASES) - NOTHING_TO_SCALE))
def test_a_wrong_value_on_that_path_alone_fails(issue_id):
    name = CASES[issue_id][0]
    if name == "eager":  # eager is every other path's reference: the fault goes on a native path
        name = "owned"
        if paths.get(name).available() is not None:
            pytest.skip(paths.get(name).available())
    verdict, outcome = _outcome(issue_id, OnePathWrong(paths.get(name)))
    assert outcome.status == "failed", verdict.report()
    assert issue_id in outcome.known, verdict.report()


#: every mode of the compiled families, by family
FAMILY_MODES = {"compiled": tuple(f"compiled:{m}" for m in compiled_modes.MODES),
                "dynamo": tuple(f"dynamo:{b}" for b in dynamo_backends.BACKENDS)}

#: the spec that shows an entry on its other modes, where its case meets another entry first there:
#: two Functions saving through the hooks meet ca-retained-saved-tensors-guard under torch.compile
CASES_ON_OTHER_MODES = {"ca-unpack-hook-create-graph": graph(
    fn(X0, outputs=(OutputSpec("compute", terms=(Term(0, "square", 2.0),)),), save=("inputs",)),
    fn(X1, outputs=(lin(0),)), backward="double", hooks=(HookSpec("saved_tensors"),))}

def _other_modes(issue) -> list[str]:
    """The modes of the entry's case's family that the entry names, other than the case's own
    (none without a case: test_every_registry_entry_has_a_mask_case fails for it)."""
    if issue.id not in CASES:
        return []
    case_path = paths.get(CASES[issue.id][0]).name
    family = case_path.partition(":")[0]
    return [m for m in FAMILY_MODES.get(family, ()) if m != case_path and issue.affects_path(m)]


@pytest.mark.parametrize("issue_id,mode", [(k.id, mode) for k in KNOWN_ISSUES for mode in _other_modes(k)])
def test_the_case_hits_its_issue_on_every_mode_the_entry_names(issue_id, mode):
    """An entry that names a family (or several of its modes) holds on each of them: the same torch
    bug, as that mode raises it (torch.compile's wording of an exception included)."""
    path = paths.get(mode)
    if path.available() is not None:
        pytest.skip(path.available())
    issue = next(k for k in KNOWN_ISSUES if k.id == issue_id)
    if not issue.affects_installed_torch():
        pytest.skip(f"{issue_id} affects torch {issue.first} to {issue.last or 'now'}, not {torch.__version__}")
    verdict = check(CASES_ON_OTHER_MODES.get(issue_id, CASES[issue_id][1]), [path])
    outcome = verdict.outcomes[path.name]
    assert issue_id in outcome.known, verdict.report()
    assert outcome.status != "failed", verdict.report()


def test_dynamo_wording_of_a_traced_exception_is_read_as_its_message():
    """The witnesses read Dynamo's wording of a traced exception as its message, and nothing else."""
    assert message_as_raised(IndexError("ConstantVariable(str: 'list index out of range')")) == \
        "list index out of range"
    assert message_as_raised(IndexError("LazyVariableTracker(realized: ConstantVariable(str: 'x'))")) == "x"
    assert message_as_raised(NotImplementedError("raised exception NotImplementedError('You must')")) == "You must"
    # another type's wording, several arguments, or no wording at all: the message as is
    for error in (TypeError("raised exception NotImplementedError('x')"), RuntimeError("raised exception "
                  "RuntimeError('a', 1)"), RuntimeError("ConstantVariable(str: 'a') and more")):
        assert message_as_raised(error) == str(error)


def test_compiled_autograd_form_of_eager_dirty_view_not_first_input():
    """Its other witness: the generated backward returns None for the unread first input, which
    compiled autograd adds to the view's own gradient (TypeError)."""
    spec = GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec(), LeafSpec()),
                     functions=DIRTY_VIEW_AT_SLOT_1)
    compiled = paths.get("compiled")
    result = paths.run_path(compiled, real_build(spec))
    assert result.status == "error" and "must be Tensor, not NoneType" in str(result.error), result.error
    verdict = check(spec, [compiled])
    outcome = verdict.outcomes["compiled"]
    assert "eager-dirty-view-not-first-input" in outcome.known, verdict.report()
    assert outcome.status == "ok", verdict.report()  # checked on the workaround (no view), and right


#: F0 scales in place a view of x2 (no grad) at its second slot; F1 saves its output f1.0, which
#: the user modifies in place; autograd.grad over x0, x1 never runs F1 (the misrouting cuts its
#: only path to x0), so the version-counter error is not raised; F2 reads x1
SKIPPED_SAVER = GraphSpec(
    shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec(), LeafSpec(False)), backward="grad",
    mutated_outputs=("f1.0",), functions=(
        DIRTY_VIEW_AT_SLOT_1[0], fn(Arg("f0.0"), outputs=(lin(0),), save=("outputs",)), fn(X1, outputs=(lin(0),))))


@pytest.mark.parametrize("name", ["eager", "compiled"])
@pytest.mark.parametrize("fault", [False, True])
def test_skipped_saver_form_of_eager_dirty_view_not_first_input(name, fault, monkeypatch):
    """Its missing version-counter error is explained and checked on the workaround, which raises
    it; a scaled gradient of F2 beside it still fails."""
    issue = next(k for k in KNOWN_ISSUES if k.id == "eager-dirty-view-not-first-input")
    if not issue.affects_installed_torch():
        pytest.skip(f"{issue.id} affects torch {issue.first} to {issue.last or 'now'}, not {torch.__version__}")
    if fault:
        _with_faulty_classes(monkeypatch, lambda m, cls: _scaled(cls, "backward", lambda i: i == 0) if m == 2 else cls)
    verdict = check(SKIPPED_SAVER, [paths.get(name)])
    outcome = verdict.outcomes[name]
    assert issue.id in outcome.known, verdict.report()
    assert outcome.status == ("failed" if fault else "ok"), verdict.report()


#: the entries whose damage covers lifetimes (the release checks), and no spec avoids: with no
#: workaround, a run they explain is partly checked (which is not checked), never ok; each explains
#: only what the torch object it names holds (harness/oracles/holders.py)
LIFETIME_ENTRIES = {"ca-eager-backend-pins-inputs": holders.STOLEN_INPUTS,
                    "ca-dynamo-function-ctx-cycle": holders.DYNAMO_CTX,
                    "dynamo-trace-state-cycle": holders.TRACE_STATE,
                    "dynamo-eager-apply-template-cycle": holders.APPLY_TEMPLATE}
#: the tensors a leaking Function keeps for ever (cleared after each test)
KEPT: list = []


def _keeping_its_inputs(cls: type) -> type:
    """A subclass whose forward keeps every tensor argument in a module-level list: a leak."""
    original = cls.forward

    def forward(*args):
        KEPT.extend(a for a in args if isinstance(a, torch.Tensor))
        return original(*args)
    return type(cls.__name__, (cls,), {"forward": staticmethod(forward)})


def _in_a_ctx_cycle(cls: type) -> type:
    """A subclass whose forward puts its ctx in a reference cycle of its own (ctx.me = ctx): the ctx
    keeps its node, and so the leaves behind it, until gc.collect()."""
    original = cls.forward

    def forward(ctx, *args):
        ctx.me = ctx
        return original(ctx, *args)
    return type(cls.__name__, (cls,), {"forward": staticmethod(forward)})


@pytest.fixture
def leaking(monkeypatch):
    _with_faulty_classes(monkeypatch, lambda m, cls: _keeping_its_inputs(cls) if m == 0 else cls)
    yield
    KEPT.clear()


@pytest.fixture
def cycling(monkeypatch):
    _with_faulty_classes(monkeypatch, lambda m, cls: _in_a_ctx_cycle(cls) if m == 0 else cls)


@pytest.mark.parametrize("issue_id", sorted(LIFETIME_ENTRIES))
def test_a_lifetime_entry_without_a_workaround_leaves_the_path_partly_checked(issue_id):
    """With no workaround and a finished run, what the entry damages (the release checks) is never
    judged: the path is partly checked, which is not checked, and it names the holder it found."""
    verdict, outcome = _outcome(issue_id)
    assert issue_id in outcome.known, verdict.report()
    assert outcome.status == "partly" and not outcome.checked, verdict.report()
    assert f"held by {LIFETIME_ENTRIES[issue_id]}" in outcome.reason, outcome.reason
    assert LIFETIME_ENTRIES[issue_id] in outcome.result.holders.freed_by.values(), outcome.result.holders


@pytest.mark.parametrize("issue_id", ["ca-dynamo-function-ctx-cycle", "dynamo-trace-state-cycle"])
def test_a_leaked_input_beside_a_cycle_entry_fails(issue_id, leaking):
    """A Function keeping its inputs for ever beside a cycle entry's own cycle: a cycle entry never
    explains a leak."""
    verdict, outcome = _outcome(issue_id)
    assert outcome.status == "failed", verdict.report()
    assert any("(leak)" in m.detail for m in outcome.mismatches), verdict.report()


#: every mode of compiled autograd and torch.compile (a mode whose compiler is missing is skipped)
EVERY_MODE = [f"compiled:{m}" for m in compiled_modes.MODES] + [f"dynamo:{b}" for b in dynamo_backends.BACKENDS]
#: two Functions, the first run eagerly under torch.compile too (its jvp breaks the graph), so that
#: what its forward does happens for real on every mode (a ctx attribute Dynamo traces is not set)
EAGER_FIRST = graph(fn(X0, outputs=(lin(0),), code="plain", jvp=True), fn(X1, outputs=(lin(0),), code="plain"))


def _failed_on(mode: str, spec: GraphSpec):
    """The outcome on `mode`, which must fail at a release check (a lifetime entry of the mode
    does not explain it)."""
    path = paths.get(mode)
    if path.available() is not None:
        pytest.skip(path.available())
    verdict = check(spec, [path])
    outcome = verdict.outcomes[path.name]
    assert outcome.status == "failed", verdict.report()
    assert any(m.checkpoint in RELEASE_CHECKPOINTS for m in outcome.mismatches), verdict.report()
    return outcome


@pytest.mark.parametrize("mode", EVERY_MODE)
def test_a_function_keeping_its_inputs_fails_on_every_mode(mode, leaking):
    """A Function that keeps its inputs in a module-level list leaks on every mode, and no lifetime
    entry explains it: the leaked tensors die neither with the compiled backward graph's inputs
    placeholder (ca-eager-backend-pins-inputs) nor with any cycle of Dynamo's. (Both specs: one
    Dynamo traces, and one it runs eagerly.)"""
    for spec in (CASES["ca-dynamo-function-ctx-cycle"][1], EAGER_FIRST):
        outcome = _failed_on(mode, spec)
        assert any("(leak)" in m.detail for m in outcome.mismatches), outcome.mismatches


@pytest.mark.parametrize("mode", EVERY_MODE)
def test_a_function_with_a_ctx_cycle_of_its_own_fails_on_every_mode(mode, cycling):
    """A Function that puts its ctx in a reference cycle of its own keeps its leaves too long on
    every mode, and where they die only under gc.collect() the cycle is the Function's, not
    Dynamo's: taking away what Dynamo's objects hold does not free them (ca-dynamo-function-ctx-cycle
    and dynamo-trace-state-cycle explain only that). (Under compiled autograd's capture mode the
    leaves are not in the cycle at the end, but their use count is still up once the outputs are
    dropped.)"""
    outcome = _failed_on(mode, EAGER_FIRST)
    if mode != "compiled:capture":  # x0, behind F0: freed by nothing but a collection (x1 is torch's)
        assert outcome.result.holders.freed_by["x0"] == holders.OTHER_CYCLE, outcome.result.holders
