"""Facts about a graph spec's data flow, derived without running it.

The known-issue triggers (harness/known_issues/) are predicates on exact graph
structure: which values require grad, which gradient edges meet in one node, which
forward-mode tangents exist. They are computed here, once, from the spec alone, following
what torch does (the sources are cited where it matters).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.spec import FunctionSpec, GraphSpec

#: (function index, argument slot): one gradient edge from a Function node to a value
Edge = tuple[int, int]


def base_ref(ref: str) -> str:
    """"x0[1]" -> "x0"; other refs unchanged."""
    return ref.split("[")[0]


def reads(out_kind: str, out, slot: int) -> bool:
    """Does this output's backward send a gradient to `slot`?"""
    if out_kind == "compute":
        return any(t.slot == slot for t in out.terms)
    return out_kind in ("input", "view", "dirty") and out.slot == slot


def differentiable(fn: FunctionSpec, k: int) -> bool:
    return fn.outputs[k].differentiable


@dataclass(frozen=True)
class Dataflow:
    spec: GraphSpec

    @functools.cached_property
    def requires_grad(self) -> dict[str, bool]:
        """Every tensor value: does it require grad? A custom Function's differentiable
        outputs require grad when any tensor input does (non-differentiable ones never)."""
        return self.requires_grad_from({i for i, leaf in enumerate(self.spec.leaves) if leaf.requires_grad})

    def requires_grad_from(self, leaves: set[int]) -> dict[str, bool]:
        """requires_grad of every tensor value when only these leaves are differentiated (a
        torch.func transform's argnums)."""
        rg: dict[str, bool] = {}
        for i, leaf in enumerate(self.spec.leaves):
            for j in range(leaf.views):
                rg[f"x{i}[{j}]"] = i in leaves
            rg[f"x{i}"] = i in leaves
        for n, fn in enumerate(self.spec.functions):
            # (applied under no_grad, a Function makes no node: its outputs never require grad)
            any_input = fn.grad_mode != "no_grad" and any(rg[a.ref] for a in fn.args if a.is_tensor_input)
            for k in fn.tensor_outputs:
                rg[f"f{n}.{k}"] = any_input and differentiable(fn, k)
        return rg

    def node_exists(self, n: int) -> bool:
        """Function n has a backward node (some tensor input requires grad, and grad mode is on)."""
        fn = self.spec.functions[n]
        return fn.grad_mode != "no_grad" and any(self.requires_grad[a.ref] for a in fn.args if a.is_tensor_input)

    def backward_runs(self, n: int) -> bool:
        """Does a backward pass call Function n's backward? Its node is in the loss's graph
        when some output requires grad (harness/run.py puts every such output in the loss);
        under a partial backward (`grad_leaves`) torch's engine runs only the nodes on a path
        to the chosen leaves (torch/csrc/autograd/engine.cpp, GraphTask::init_to_execute)."""
        fn = self.spec.functions[n]
        in_graph = any(self.requires_grad.get(f"f{n}.{k}", False) for k in fn.tensor_outputs)
        return in_graph and (not self.spec.grad_leaves or self._leads_to_grad_leaves[n])

    @functools.cached_property
    def _leads_to_grad_leaves(self) -> dict[int, bool]:
        return self.leads_to(set(self.spec.grad_leaves))

    def leads_to(self, chosen: set[int], cut: frozenset[Edge] = frozenset()) -> dict[int, bool]:
        """Function n: does some gradient edge of its node lead to a chosen leaf? The `cut`
        edges lead nowhere (a known torch bug reroutes them)."""
        leads: dict[int, bool] = {}

        def edge_leads(ref: str) -> bool:
            if not self.requires_grad[ref]:
                return False
            if ref.startswith("x"):
                return int(base_ref(ref)[1:]) in chosen
            return leads[int(ref[1:].split(".")[0])]
        for n, fn in enumerate(self.spec.functions):
            leads[n] = any(edge_leads(a.ref) for s, a in enumerate(fn.args) if a.is_tensor_input and (n, s) not in cut)
        return leads

    def edges_into(self, ref: str) -> list[Edge]:
        """Gradient edges from Function nodes into the node of `ref` (a clone reads its source)."""
        if not self.requires_grad.get(ref, False):
            return []
        return [(n, s) for n, fn in enumerate(self.spec.functions) if self.node_exists(n)
                for s, a in enumerate(fn.args) if a.ref == ref and a.is_tensor_input]

    def gets_gradient(self, n: int, slot: int) -> bool:
        """Does Function n's backward return a tensor (not None) for this slot?
        Mirrors harness/generic.py `_backward`: a differentiable output that requires grad is in
        the loss, so it receives a gradient; a slot no such output reads gets None unless the
        Function returns zeros for unused inputs."""
        fn = self.spec.functions[n]
        arg = fn.args[slot]
        if not arg.is_tensor_input or not self.requires_grad[arg.ref]:
            return False
        read = any(differentiable(fn, k) and self.requires_grad.get(f"f{n}.{k}", False)
                   and reads(o.kind, o, slot) for k, o in enumerate(fn.outputs))
        return read or fn.unused_grad == "zeros"

    def receives_gradient(self, ref: str) -> bool:
        """Does some Function's backward send a tensor (not None) to the node of `ref`?"""
        return any(self.gets_gradient(*e) for e in self.edges_into(ref))

    def leaf_values_read(self) -> frozenset[str]:
        """Leaves and views of leaves that some Function reads: what a compiled forward
        takes as its inputs and uses (harness/run.py passes views, not their leaf)."""
        return frozenset(a.ref for fn in self.spec.functions for a in fn.args
                         if a.ref is not None and a.ref.startswith("x"))

    def none_gradient_edges(self) -> dict[str, list[Edge]]:
        """Values that receive a None gradient from some Function node, with those edges.
        A view of a leaf whose every incoming edge carries None passes None on to its leaf."""
        out: dict[str, list[Edge]] = {}
        for ref in self.requires_grad:
            nones = [e for e in self.edges_into(ref) if not self.gets_gradient(*e)]
            if nones:
                out[ref] = nones
        return out

    def incoming_gradients(self, ref: str) -> int:
        """How many gradients arrive at the node of `ref`: one per Function edge, one from
        the loss for a Function output that requires grad, and for a whole leaf with views,
        one per view that receives any gradient edge."""
        count = len(self.edges_into(ref)) + (ref.startswith("f") and self.requires_grad.get(ref, False))
        if ref.startswith("x") and "[" not in ref:
            leaf = self.spec.leaves[int(ref[1:])]
            count += sum(1 for j in range(leaf.views) if self.edges_into(f"{ref}[{j}]"))
        return count

    def none_meets_another_gradient(self) -> list[str]:
        """Values where a None gradient from a Function meets another gradient in one node's
        input buffer (the structure of ca-none-gradient-accumulated)."""
        hits = []
        nones = self.none_gradient_edges()
        for ref, edges in nones.items():
            if self.incoming_gradients(ref) >= 2:
                hits.append(ref)
            elif "[" in ref and len(edges) == len(self.edges_into(ref)):
                leaf = base_ref(ref)  # the view's node passes None on to its leaf's buffer
                if self.incoming_gradients(leaf) >= 2:
                    hits.append(ref)
        return hits

    def upstream(self, ref: str) -> frozenset[str]:
        """`ref` and every value whose gradient can depend on `ref`'s gradient: the inputs it
        was computed from, transitively, and the leaf of a view."""
        if ref.startswith("x"):
            return frozenset({ref, base_ref(ref)})
        n = int(ref[1:].split(".")[0])
        return frozenset({ref}).union(*(self.upstream(a.ref) for a in self.spec.functions[n].args
                                        if a.is_tensor_input))

    def upstream_leaves(self, ref: str) -> frozenset[str]:
        """Whole leaves ("x0") whose gradient can depend on `ref`'s gradient."""
        return frozenset(r for r in self.upstream(ref) if r.startswith("x") and "[" not in r)

    def downstream(self, refs: set[str]) -> frozenset[str]:
        """`refs` and every Function output computed from them, transitively."""
        tainted = set(refs)
        for n, fn in enumerate(self.spec.functions):
            if any(a.ref in tainted for a in fn.args if a.ref is not None):
                tainted |= {f"f{n}.{k}" for k in fn.tensor_outputs}
        return frozenset(tainted)

    # --- forward-mode AD, as torch's _process_forward_mode_AD does it -----------------------

    @functools.cached_property
    def forward_ad(self) -> "ForwardAD":
        """Every float leaf has a tangent, as harness/run.py and the func.jvp path give them (an
        int64 / bool leaf, LeafSpec.dtype, cannot have one)."""
        return _simulate_forward_ad(
            self.spec, frozenset(i for i, leaf in enumerate(self.spec.leaves) if leaf.dtype is None))

    @functools.cached_property
    def forward_ad_under_func(self) -> "ForwardAD":
        """forward_ad as torch.func.jvp runs it: every float leaf has a tangent, and no output
        loses its tangent to the early `return` (functorch's jvp rule for a custom Function
        sets each output's tangent itself; seen on 2.13.0, a later output keeps its tangent)."""
        return _simulate_forward_ad(
            self.spec, frozenset(i for i, leaf in enumerate(self.spec.leaves) if leaf.dtype is None),
            early_return=False)

    @functools.cached_property
    def forward_ad_of_grad_leaves(self) -> "ForwardAD":
        """Only the leaves whose gradients eager computes have a tangent: torch.func.jacfwd
        differentiates just those (harness/paths/func.py, chosen_leaves: a partial backward's
        grad_leaves, else every leaf that requires grad), the rest are constants. No early
        `return` (as forward_ad_under_func)."""
        chosen = self.spec.grad_leaves or [i for i, leaf in enumerate(self.spec.leaves) if leaf.requires_grad]
        return _simulate_forward_ad(self.spec, frozenset(chosen), early_return=False)


@dataclass(frozen=True)
class ForwardAD:
    """What torch does with tangents through the graph, from the leaves given one.

    torch/csrc/autograd/custom_function.cpp, _process_forward_mode_AD: for an output that
    is a view of an input (an input returned as-is counts: it is returned as a view) whose
    input has NO tangent while another input has one, the user's tangent is set in place and
    the loop ends with `return` (fwad-view-drops-later-tangents), so later outputs get no
    tangent; if the user's tangent is None there, setting it fails an internal assert
    (fwad-input-as-is-none-tangent). A dirty output takes the in-place branch, with the same
    assert for a None tangent."""

    #: values that have a tangent after the forward
    with_tangent: frozenset[str]
    #: (function, output) where the None-tangent internal assert fires, in run order
    asserts: tuple[tuple[int, int], ...]
    #: (function, output) where the view branch returns early, and the outputs it drops
    early_returns: tuple[tuple[int, int], ...]
    dropped: frozenset[str]


def _simulate_forward_ad(spec: GraphSpec, tangent_leaves: frozenset[int], early_return: bool = True) -> ForwardAD:
    has = {r for r in spec.value_refs() if r.startswith("x") and int(base_ref(r)[1:]) in tangent_leaves}
    asserts: list[tuple[int, int]] = []
    early: list[tuple[int, int]] = []
    dropped: set[str] = set()
    for n, fn in enumerate(spec.functions):
        tangents = {s: a.ref in has for s, a in enumerate(fn.args) if a.is_tensor_input}
        if not any(tangents.values()):
            continue  # "If no input has forward grad, nothing to do here"
        if fn.api == "custom_op":
            # its outputs get no tangent: the op's Autograd kernel has no forward-mode formula and
            # runs below autograd (known issue func-custom-op-forward-ad-zero-tangent; a spec with
            # forward_ad has no custom_op, which has no jvp)
            continue
        for k, out in enumerate(fn.outputs):
            ref = f"f{n}.{k}"
            if not differentiable(fn, k):
                continue
            if out.kind == "compute":
                has.add(ref)
                continue
            if tangents[out.slot]:
                has.add(ref)
                continue
            # the aliased input has no tangent: our jvp returns None unless torch
            # materializes the undefined input tangent as zeros
            if not fn.materialize_grads:
                asserts.append((n, k))  # the forward raises here: nothing after it runs
                return ForwardAD(frozenset(has), tuple(asserts), tuple(early), frozenset(dropped))
            has.add(ref)
            if out.kind in ("input", "view") and early_return:
                early.append((n, k))
                later = [j for j in fn.tensor_outputs if j > k and differentiable(fn, j)]
                # a later input returned as-is, view or dirty input keeps a tangent where its input has
                # one (a view's is its base's, a dirty output's its input's own); a computed one is
                # left without (seen on 2.13.0: tests/test_known_issues.py,
                # test_after_the_early_return_an_as_is_or_dirty_output_keeps_its_input_tangent)
                kept = {f"f{n}.{j}" for j in later if fn.outputs[j].kind != "compute" and tangents[fn.outputs[j].slot]}
                has |= kept
                dropped |= {f"f{n}.{j}" for j in later} - kept
                break
    return ForwardAD(frozenset(has), tuple(asserts), tuple(early), frozenset(dropped))


#: torch's version-counter error at unpacking a saved tensor modified in place
#: (torch/csrc/autograd/saved_variable.cpp, SavedVariable::unpack)
VERSION_ERROR = re.compile(r"one of the variables needed for gradient computation has been modified by an "
                           r"inplace operation")


def saved_mutated_outputs(spec: GraphSpec, *, as_inputs: bool = True,
                          backward_runs: Callable[[int], bool] | None = None) -> set[str]:
    """Outputs modified in place after the forward (`mutated_outputs`) that a Function whose
    backward runs saved: as its own outputs, and (`as_inputs`) as the inputs of its nonlinear
    terms (generic._setup saves those). `backward_runs`: which Functions' backward runs
    (default: `Dataflow.backward_runs`, the graph torch documents)."""
    if not spec.mutated_outputs or spec.backward == "none":
        return set()
    backward_runs = backward_runs or Dataflow(spec).backward_runs
    saved: set[str | None] = set()
    for n, fn in enumerate(spec.functions):
        if not backward_runs(n):
            continue
        if "outputs" in fn.save:
            saved |= {f"f{n}.{k}" for k in fn.tensor_outputs}
        if as_inputs and "inputs" in fn.save:
            saved |= {fn.args[s].ref for s in fn.nonlinear_slots if not fn.args[s].clone}
    return saved & set(spec.mutated_outputs)


def version_error_expected(spec: GraphSpec) -> bool:
    """Must the backward raise torch's version-counter error? Yes when an output modified in
    place after the forward was saved by a Function whose backward runs: torch checks each saved
    tensor's version when the backward unpacks it, and the generated backward always unpacks."""
    return bool(saved_mutated_outputs(spec))


# --- what eager differentiates (the torch.func paths differentiate the same) -----------------


def differentiated_leaves(spec: GraphSpec) -> list[int]:
    """The leaves that require grad."""
    return [i for i, leaf in enumerate(spec.leaves) if leaf.requires_grad]


def chosen_leaves(spec: GraphSpec) -> list[int]:
    """The leaves whose gradients eager computes: a partial backward's `grad_leaves`, else every
    leaf that requires grad (run._backward). The gradient transforms differentiate these
    (argnums): torch.func's form of `autograd.grad(inputs=...)`, whose engine then runs the
    backward of the same Functions as eager's partial backward (GraphTask::init_to_execute);
    the other leaves are constants of the function, so a Function that reads only them has no
    backward node under the transform."""
    return list(spec.grad_leaves) or differentiated_leaves(spec)


def loss_refs(spec: GraphSpec) -> list[str]:
    """The outputs in eager's loss: those that require grad (run._loss)."""
    flow = Dataflow(spec)
    return [r for r in function_output_refs_of(spec) if flow.requires_grad[r]]


def function_output_refs_of(spec: GraphSpec) -> list[str]:
    return [r for r in spec.value_refs() if r.startswith("f")]


def has_backward(spec: GraphSpec) -> bool:
    """Eager runs a backward (run._backward does not skip it)."""
    return spec.backward != "none" and bool(differentiated_leaves(spec)) and bool(loss_refs(spec))


__all__ = ["VERSION_ERROR", "Dataflow", "ForwardAD", "base_ref", "chosen_leaves", "differentiable",
           "differentiated_leaves", "function_output_refs_of", "has_backward", "loss_refs", "reads",
           "saved_mutated_outputs", "version_error_expected"]
