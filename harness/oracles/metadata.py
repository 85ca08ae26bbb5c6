"""Which metadata each path must share with eager (and with the math oracle), and the check.

The runner records, as plain values under `meta:<checkpoint>` (harness/run.py):
  stride:<role>         strides of every recorded tensor (outputs, leaf .grad, autograd.grad
                        results, retained grads, tangents, what hooks saw)
  alias:<ref>           what a Function output is: "is <ref>" (the very same tensor),
                        "view of <ref>" (its `_base`), or "fresh"
  version:<ref>         `_version` right after the forward (a dirty output was bumped by `mul_`)
  grad_fn:<ref>         whether the output has a grad_fn; is_leaf:<ref> its `is_leaf`
  grad_is_none:x<i>     a leaf that does not require grad still has `.grad` None after backward
  side_effects          the Function indices that forwards with untraceable="side_effect"
                        appended to their module-level list during the forward (sorted): under
                        torch.compile Dynamo replays the side effect instead of breaking, and
                        must replay exactly eager's (not under torch.jit.trace: eager's
                        forward runs once while tracing and once more as the trace's PythonOp,
                        where torch.compile runs it once)
(`requires_grad:<ref>` is recorded with the forward values and compared everywhere already.)

What torch promises, per path family, and so what is compared exactly:

* owned, borrowed (the C++ Function.apply): the same Function classes through a different
  holder; everything must equal eager's.
* compiled (compiled autograd): the forward is eager's own code, so every forward key is
  compared. After the backward only leaf `.grad` layouts: AccumulateGrad's layout contract
  ("Default gradient layouts", torch.autograd.backward docs: a non-overlapping and dense
  parameter gets a .grad with its strides, otherwise row-major contiguous) holds whoever
  computed the gradient. Other gradient strides are not promised (see dynamo). Forward-AD
  tangents run eagerly, so their strides are compared.
* dynamo (torch.compile of the forward): "PT2 is not guaranteed to produce tensors with
  exactly the same stride as the eager variants" (PT2 manual, "Stride divergence"), so no
  output or gradient strides. Aliasing is promised: AOT Autograd classifies every output
  as non_alias / alias_of_input / is_input / alias_of_intermediate* and regenerates
  aliases at run time so that `._base` and requires_grad match eager
  (torch/_functorch/_aot_autograd/schemas.py, `OutputType`), except for a custom Function's
  view of a graph intermediate (a dirty view input, `Arg.view`), which AOT returns as a
  plain output by design (`custom_function_view`), and a custom Function's view of an
  intermediate that does not require grad while the view does, or that intermediate returned
  as-is (AOT regenerates an alias of an intermediate only when both require grad). `_version` is not: AOT functionalizes mutations, and a dirty output here is an intermediate (a clone made
  inside the compiled region). requires_grad, grad_fn and is_leaf are autograd's view of
  the outputs, which the compiled region must reproduce. When the spec asks for
  torch.jit.trace, eager's forward is a trace and dynamo's is a compile: forward keys are
  then not compared. Leaf `.grad` layouts and grad_is_none as for compiled.
* math oracle (plain autograd of the same ops, `build.math_apply`): its outputs are
  `y + 0 * inputs` (fresh tensors) or plain views, a different graph, so no alias and no
  `_version`. What its structure allows: output strides of `compute` outputs (both
  contiguous results of the same ops; only on paths that promise strides at all, so not on
  dynamo, where Inductor lays a computed output out as its inputs are), grad_fn and is_leaf of every output, leaf `.grad`
  layouts (the contract above) and grad_is_none. Only keys both sides recorded are compared:
  the math graph may produce a zero gradient where a Function gives None, which the value
  comparison already judges (`none_is_zero`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from harness.dataflow import Dataflow
from harness.oracles.compare import EXACT, Mismatch, compare
from harness.run import CHECKPOINTS, META, RunResult
from harness.spec import GraphSpec

_LEAF_GRAD_LAYOUT = ("stride:grad:", "stride:grad2:", "grad_is_none:")
_AUTOGRAD_FLAGS = ("grad_fn:", "is_leaf:")


def compared_keys(path: str, spec: GraphSpec) -> Callable[[str, str], bool]:
    """For a path name ("owned", "compiled:capture", "dynamo:aot_eager", "math"), a predicate
    on (checkpoint, role) of `meta:` values: whether that key is compared (docstring above). A
    path on another device ("eager@cuda", harness.paths.OnDevicePath) follows its own path's rule."""
    family = path.partition("@")[0].partition(":")[0]
    if family in ("eager", "owned", "borrowed"):
        return lambda checkpoint, role: True
    if family == "compiled":
        return lambda checkpoint, role: (checkpoint == META + "forward" or role.startswith(
            _LEAF_GRAD_LAYOUT + ("stride:tangent:",)))
    if family == "dynamo":
        forward = () if spec.trace else ("side_effects", "alias:") + _AUTOGRAD_FLAGS
        # A dirty input that is a view (Arg.view) is a view of a clone made inside the compiled
        # forward; AOT Autograd returns a custom Function's view of a graph intermediate as a
        # plain output by design (torch/_functorch/_aot_autograd/schemas.py, OutputType
        # custom_function_view and unsafe_view_alias, Note [Intermediate Bases Optimization])
        # (and so are the views later Functions return of such an output: their base differs too).
        # Nor does AOT regenerate an output's alias of a graph intermediate unless "both the
        # intermediate base and the output require gradients" (collect_metadata_analysis.py, Note
        # [AOT Autograd: outputs aliasing inputs or intermediates!]): a custom Function's view of
        # an intermediate that does not require grad comes back fresh where the view does not
        # either, a view of another tensor on the same storage where it does (another input
        # does); so does such an intermediate returned as-is, which eager returns as a view of it
        # (custom_function.cpp). And a view of a clone argument
        # (Arg.clone; or the clone returned as-is, which eager makes a view of it), an intermediate that no
        # output returns, is one output aliasing an intermediate
        # alone, which AOT hides behind aten._unsafe_view (Note [Intermediate Bases Optimization],
        # the same file): it comes back fresh. The same Note's other side: a clone of a value that does
        # not require grad, modified in place by a Function whose output then requires grad (another
        # input does), is an intermediate not requiring grad aliased by an output that does: AOT
        # returns it as a view of another tensor on the same storage, where eager's is the clone itself.
        requires_grad = Dataflow(spec).requires_grad
        views_of_intermediates: set[str] = set()
        for n, fn in enumerate(spec.functions):
            for k, o in enumerate(fn.outputs):
                base = fn.args[o.slot].ref if o.kind in ("view", "input", "dirty") else None
                if (o.kind == "dirty" and fn.args[o.slot].view
                        or o.kind in ("view", "input") and fn.args[o.slot].clone
                        or o.kind == "dirty" and fn.args[o.slot].clone and not requires_grad[base]
                        and requires_grad[f"f{n}.{k}"]
                        or o.kind in ("view", "input") and base in views_of_intermediates
                        or o.kind in ("view", "input") and base.startswith("f")
                        and not (requires_grad[base] and requires_grad[f"f{n}.{k}"])):
                    views_of_intermediates.add(f"f{n}.{k}")
        not_compared = {f"alias:{ref}" for ref in views_of_intermediates}
        return lambda checkpoint, role: role not in not_compared and role.startswith(
            forward + _LEAF_GRAD_LAYOUT + ("stride:tangent:",))
    if family.startswith("func."):
        # a torch.func transform returns fresh tensors outside autograd, so no metadata of
        # eager's applies (harness/paths/func.py narrows the references to what it observes)
        return lambda checkpoint, role: False
    if family == "math":
        computed = {f"stride:out:f{n}.{k}" for n, fn in enumerate(spec.functions)
                    for k, o in enumerate(fn.outputs) if o.kind == "compute"}
        return lambda checkpoint, role: role in computed or role.startswith(
            _AUTOGRAD_FLAGS + _LEAF_GRAD_LAYOUT)
    raise ValueError(f"no metadata rule for path {path!r}; add its family to compared_keys "
                     f"in harness/oracles/metadata.py.")


def metadata_mismatches(spec: GraphSpec, expected: RunResult, actual: RunResult) -> list[Mismatch]:
    """Exact comparison of the metadata `actual.path` must share with `expected` (eager, or
    the math oracle), over the checkpoints both completed."""
    against_math = expected.path == "math"
    keep = compared_keys("math" if against_math else actual.path, spec)
    if against_math:  # strides only where the path promises them too (no PT2 output strides)
        path_keeps, math_keeps = compared_keys(actual.path, spec), keep
        keep = lambda checkpoint, role: math_keeps(checkpoint, role) and (  # noqa: E731
            not role.startswith("stride:") or path_keeps(checkpoint, role))
    done = _completed_checkpoints(expected, actual)
    if expected.status == "error" or actual.status == "error":
        # a run cut short may keep no records at all (an exception that escaped the runner,
        # e.g. compiled autograd's StopIteration): the error itself is what gets compared
        done &= {c[len(META):] for c in expected.values} & {c[len(META):] for c in actual.values}

    def selected(r: RunResult, other: RunResult) -> RunResult:
        values = {}
        for checkpoint, roles in r.values.items():
            if checkpoint.startswith(META) and checkpoint[len(META):] in done:
                theirs = other.values.get(checkpoint, {})
                values[checkpoint] = {role: v for role, v in roles.items() if keep(checkpoint, role)
                                      and (not against_math or role in theirs)}
        return replace(r, tensors={}, values=values)
    return compare(selected(expected, actual), selected(actual, expected), EXACT)


def without_metadata(result: RunResult) -> RunResult:
    """The result without `meta:` values, for the comparisons that judge values."""
    return replace(result, values={c: v for c, v in result.values.items() if not c.startswith(META)})


def _completed_checkpoints(*results: RunResult) -> set[str]:
    stop = min((CHECKPOINTS.index(r.error_checkpoint) for r in results if r.status == "error"),
               default=len(CHECKPOINTS))
    return set(CHECKPOINTS[:stop])


__all__ = ["compared_keys", "metadata_mismatches", "without_metadata"]
