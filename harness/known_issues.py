"""Real torch bugs the harness has found, each with a precise signature.

A failure that matches an entry is reported as *known* (counted, not failing), so CI
stays green while an unknown failure still fails. Each entry names a standalone
reproducer in `known_issues/`; `tests/test_known_issues.py` runs every one on the
installed torch and checks it still reproduces on the versions the entry names, so a
fixed bug gets noticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec

REPRODUCERS = Path(__file__).resolve().parent.parent / "known_issues"


def torch_release() -> tuple[int, int, int]:
    """(major, minor, patch) of the installed torch, ignoring local tags like +cpu."""
    parts = re.match(r"(\d+)\.(\d+)\.(\d+)", torch.__version__)
    assert parts, torch.__version__
    return int(parts[1]), int(parts[2]), int(parts[3])


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    #: torch releases it affects: [first, last] inclusive; last None means "still open"
    first: tuple[int, int, int]
    last: tuple[int, int, int] | None
    paths: tuple[str, ...]
    checkpoint: str
    #: "error": the path raised, and `message` matches the error text;
    #: "mismatch": the path ran, `message` matches every reported mismatch (downstream
    #: values inherit the damage) and `witness` matches at least one (the bug itself)
    symptom: str
    message: re.Pattern[str]
    #: the spec features that trigger it
    triggers: Callable[[GraphSpec], bool]
    reproducer: str  # file name in known_issues/
    witness: re.Pattern[str] | None = None

    def affects_installed_torch(self) -> bool:
        v = torch_release()
        return self.first <= v and (self.last is None or v <= self.last)

    def affects_path(self, path: str) -> bool:
        """Named, or its family is: "compiled" covers every "compiled:<mode>"."""
        return path in self.paths or path.partition(":")[0] in self.paths

    def matches(self, spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        if not self.affects_path(result.path) or not self.triggers(spec) or not self.affects_installed_torch():
            return False
        if self.symptom == "error":
            return (result.status == "error" and result.error_checkpoint == self.checkpoint
                    and self.message.search(str(result.error)) is not None)
        return (all(m.checkpoint == self.checkpoint and self.message.search(str(m)) for m in mismatches)
                and any(self.witness is None or self.witness.search(str(m)) for m in mismatches))


def _aliasing_output_before_another(spec: GraphSpec) -> bool:
    return spec.forward_ad and any(
        fn.jvp and any(o.kind in ("input", "view") and any(
            p.kind not in ("const",) and not p.non_differentiable for p in fn.outputs[k + 1:])
            for k, o in enumerate(fn.outputs))
        for fn in spec.functions)


def _returns_input_without_materialized_tangent(spec: GraphSpec) -> bool:
    return spec.forward_ad and any(
        fn.jvp and not fn.materialize_grads and any(o.kind in ("input", "view", "dirty") for o in fn.outputs)
        for fn in spec.functions)


def _none_gradient_meets_another_edge(spec: GraphSpec) -> bool:
    """A Function may return None for a tensor input whose value also gets a gradient
    along another edge (read twice, also an output in the loss, or a view of a leaf whose
    other views are read too: their gradients meet in the leaf)."""
    readers: dict[str, int] = {}
    for fn in spec.functions:
        for arg in fn.args:
            if arg.ref is not None:
                base = arg.ref.split("[")[0]
                readers[base] = readers.get(base, 0) + 1
    for ref in readers:
        readers[ref] += ref.startswith("f")  # the loss reads every Function output
    return any(fn.unused_grad == "none" or not fn.materialize_grads or fn.needs_input_grad != "ignore"
               for fn in spec.functions) and any(n > 1 for n in readers.values())


def _deliberate_error(*cases: str) -> Callable[[GraphSpec], bool]:
    return lambda spec: any(fn.error in cases for fn in spec.functions)


def _prehook_on_function_whose_first_output_gets_no_gradient(spec: GraphSpec) -> bool:
    hooked = {int(h.target[1:].split(".")[0]) for h in spec.hooks
              if h.kind == "pre" and h.target is not None and h.target.startswith("f")}
    return any(spec.functions[n].outputs[0].kind == "const" or spec.functions[n].outputs[0].non_differentiable
               for n in hooked)


def _function_with_inputs(spec: GraphSpec) -> bool:
    """A generated Function (forward(*args)) that has inputs to shift."""
    return any(fn.args for fn in spec.functions)


def _double_backward_with_saved_tensors_hooks(spec: GraphSpec) -> bool:
    return spec.backward == "double" and any(h.kind == "saved_tensors" for h in spec.hooks)


def _generated_functions(spec: GraphSpec) -> bool:
    """Every generated Function reads its spec from class attributes and from its closure,
    and takes its inputs as *args."""
    return bool(spec.functions)


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="fwad-input-as-is-none-tangent",
        title=("Forward AD: a custom Function with set_materialize_grads(False) that returns an "
               "input without a tangent as-is, and whose jvp returns None for it, hits an INTERNAL "
               "ASSERT in autograd_meta.cpp instead of leaving the output without a tangent"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo"),
        checkpoint="forward_ad",
        symptom="error",
        message=re.compile(r"INTERNAL ASSERT FAILED at .*autograd_meta\.cpp.*Expected both tensor and its "
                           r"forward grad to be floating point or complex", re.S),
        triggers=_returns_input_without_materialized_tangent,
        reproducer="fwad_input_as_is_none_tangent.py",
    ),
    KnownIssue(
        id="fwad-view-drops-later-tangents",
        title=("Forward AD: when a custom Function returns a view of (or as-is) an input that has no "
               "tangent, every later output silently loses its tangent: _process_forward_mode_AD in "
               "custom_function.cpp ends the output loop with `return` where `continue` is meant"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo"),
        checkpoint="forward_ad",
        symptom="mismatch",
        message=re.compile(r"vs math: forward_ad tangent:f\d+\.\d+: "),
        witness=re.compile(r"forward_ad tangent:f\d+\.\d+: got None, expected a tensor$"),
        triggers=_aliasing_output_before_another,
        reproducer="fwad_view_of_tangentless_input_drops_later_tangents.py",
    ),
    KnownIssue(
        id="ca-none-gradient-accumulated",
        title=("Compiled autograd: a custom Function's backward returns None for an input whose "
               "gradient also arrives along another edge; the captured graph sums them with "
               "torch.add(None, g) and raises TypeError (eager skips undefined gradients)"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),  # every mode; torch.compile modes raise it from fake tensors
        checkpoint="backward",
        symptom="error",
        message=re.compile(r"argument '(input|other)' \(position [12]\) must be Tensor, not NoneType"),
        triggers=_none_gradient_meets_another_edge,
        reproducer="ca_none_gradient_accumulated.py",
    ),
    KnownIssue(
        id="ca-function-backward-unvalidated",
        title=("Compiled autograd does not validate a custom Function's backward results: a wrong "
               "number of gradients, or a gradient for a non-tensor input, raises in eager and "
               "passes silently under compiled autograd"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        checkpoint="backward",
        symptom="mismatch",
        message=re.compile(r"vs eager: backward error: eager raised RuntimeError at backward: function F\d+Backward "
                           r"returned (an incorrect number of gradients|a gradient different than None at "
                           r"position \d+, but the corresponding forward input was not a Variable).*; "
                           r"\S+ ran without error$"),
        triggers=_deliberate_error("grad_count", "grad_for_nontensor"),
        reproducer="ca_function_backward_unvalidated.py",
    ),
    KnownIssue(
        id="ca-too-few-gradients-indexerror",
        title=("Compiled autograd: a custom Function's backward returns too few gradients, one of "
               "them needed; eager raises 'returned an incorrect number of gradients', compiled "
               "autograd an IndexError (tuple/list index out of range)"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        checkpoint="backward",
        symptom="error",
        message=re.compile(r"(tuple|list) index out of range"),
        triggers=_deliberate_error("grad_count"),
        reproducer="ca_too_few_gradients_indexerror.py",
    ),
    KnownIssue(
        id="ca-invalid-gradient-message",
        title=("Compiled autograd: a gradient of the wrong shape raises as in eager, but the message "
               "drops which node returned it ('[Compiled Autograd Tracing:]invalid gradient at index "
               "0 ...' instead of 'Function FBackward returned an invalid gradient at index 0 ...')"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        checkpoint="backward",
        symptom="error",
        message=re.compile(r"^\[Compiled Autograd Tracing:\]invalid gradient at index \d+ - got .* but expected "
                           r"shape compatible with"),
        triggers=_deliberate_error("grad_shape"),
        reproducer="ca_invalid_gradient_message.py",
    ),
    KnownIssue(
        id="ca-prehook-unused-first-gradient",
        title=("Compiled autograd: a node pre-hook on a custom Function whose first output gets no "
               "gradient (non-tensor or non-differentiable) crashes reorder_pre_hook_nodes_to_mimic_eager "
               "with a bare StopIteration"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        checkpoint="backward",
        symptom="error",
        message=re.compile(r"^$"),  # StopIteration carries no message
        triggers=_prehook_on_function_whose_first_output_gets_no_gradient,
        reproducer="ca_prehook_unused_first_gradient.py",
    ),
    KnownIssue(
        id="ca-unpack-hook-create-graph",
        title=("Compiled autograd with create_graph=True ignores the autograd identity of saved "
               "tensors whose pack hook detached them (eager restores it on unpack): second-order "
               "gradients through saved tensors are silently lost"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        checkpoint="double_backward",
        symptom="mismatch",
        message=re.compile(r" double_backward dgrad:x\d+: "),
        triggers=_double_backward_with_saved_tensors_hooks,
        reproducer="ca_unpack_hook_create_graph.py",
    ),
    KnownIssue(
        id="dynamo-function-class-attribute",
        title=("torch.compile: reading a plain class attribute of a custom autograd.Function (a "
               "flag, a config object) fails with the graph break 'Unsupported python_type() call', "
               "whose own hint calls it a Dynamo bug"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        checkpoint="forward",
        symptom="error",
        message=re.compile(r"Unsupported python_type\(\) call.*AutogradFunctionVariable\(\)", re.S),
        triggers=_generated_functions,
        reproducer="dynamo_function_class_attribute.py",
    ),
    KnownIssue(
        id="dynamo-function-class-attribute-backward",
        title=("The backward side of dynamo-function-class-attribute: compiled autograd handing its "
               "graph to torch.compile traces each Function's backward, which reads class attributes"),
        first=(2, 13, 0), last=None,
        paths=("compiled:eager", "compiled:aot_eager", "compiled:inductor"),
        checkpoint="backward",
        symptom="error",
        message=re.compile(r"Unsupported python_type\(\) call.*AutogradFunctionVariable\(\)", re.S),
        triggers=_generated_functions,
        reproducer="dynamo_function_class_attribute.py",
    ),
    KnownIssue(
        id="dynamo-function-varargs-forward",
        title=("torch.compile binds the inputs of a custom Function whose forward takes *args "
               "shifted by one: forward(*args) (setup_context style) sees the ctx as its first input "
               "and computes with the wrong inputs (wrong values, or AttributeError on the ctx); "
               "forward(ctx, *args) reads past its inputs (IndexError) or a non-tensor argument "
               "where a tensor was passed (TypeError)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        checkpoint="forward",
        symptom="error",
        # What the shift breaks first varies with the graph (an input past the end, the ctx
        # or a constant where a tensor was passed, an output that is then no tensor); all of
        # it is an exception the traced forward raised, which Dynamo renders as a constant
        # (or a TypeError of an op given a constant), where eager's forward raised nothing.
        # (torch 2.13 renders it "ConstantVariable(str: ...)", 2.14 "raised exception E(...)")
        message=re.compile(r"^['\"]?((LazyVariableTracker\(realized: )?ConstantVariable\(str: |raised exception \w+\()"
                           r"|index out of range|unsupported operand type\(s\) for .*'NoneType'"
                           r"|argument '\w+' \(position \d+\) must be Tensor, not \w+"
                           # the ctx reaching a torch op crashes Dynamo itself
                           r"|'AutogradFunctionContextVariable' object has no attribute 'proxy'"),
        triggers=_function_with_inputs,
        reproducer="dynamo_function_varargs_forward.py",
    ),
    KnownIssue(
        id="dynamo-function-varargs-forward-values",
        title=("The wrong-value side of dynamo-function-varargs-forward: a Function whose "
               "forward(*args) reads shifted inputs returns wrong outputs without an error"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        checkpoint="forward",
        symptom="mismatch",
        message=re.compile(r" forward out:f\d+\.\d+: "),
        triggers=_function_with_inputs,
        reproducer="dynamo_function_varargs_forward.py",
    ),
    KnownIssue(
        id="dynamo-function-closure-object",
        title=("torch.compile: a custom Function whose forward reads an ordinary object from its "
               "enclosing scope fails, when an input requires grad, with the graph break 'Unexpected "
               "type in sourceless builder', whose own hint calls it a Dynamo bug"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        checkpoint="forward",
        symptom="error",
        message=re.compile(r"Unexpected type in sourceless builder"),
        triggers=_generated_functions,
        reproducer="dynamo_function_closure_object.py",
    ),
)


def match(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> KnownIssue | None:
    return next((k for k in KNOWN_ISSUES if k.matches(spec, result, mismatches)), None)


__all__ = ["KNOWN_ISSUES", "KnownIssue", "match", "torch_release"]
