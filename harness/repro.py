"""Write a failure as a standalone script a maintainer reads in a minute.

The script a campaign writes imports torch only and embeds nothing of the harness: the
Functions in the plain style (harness/plain.py), the graph's forward as straight-line code,
the inputs as literals, the backward (or forward AD) as the spec runs it, and only the one
comparison that failed: the path's value of one role against eager's (with the harness's
elementwise error bound as a literal), an exception type at a checkpoint, or one metadata
fact. It prints expected and observed and exits 1 while it fails, 0 when it does not.

A written script is run once (harness.reduce.run_script) before it is kept: a script that
does not fail where the harness saw the failure (a failure that needs a generic Function,
the lifetime oracle's refcounts, a native path, a twin, a torch.func transform) is replaced
by a short script that runs the installed harness on the spec, and says why.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import torch

from harness import plain, reduce
from harness.reduce import CHECK_LINE, CODE_LINE, FAILS, with_note
from harness.spec import GraphSpec, SpecError

if TYPE_CHECKING:
    from harness.check import PathOutcome, Verdict
    from harness.oracles.compare import Mismatch

#: how long one run of a written script may take when it is checked
RUN_TIMEOUT_S = 120.0
#: metadata roles a plain script can observe (harness.run._record_output_metadata and friends)
_META_ROLES = ("alias", "version", "grad_fn", "is_leaf", "stride", "grad_is_none")


class NotPlain(Exception):
    """The failure cannot be written as a plain-torch script; the message says why."""


# --- literals ----------------------------------------------------------------------------------


def _number(x: Any, dtype: torch.dtype) -> str:
    """The shortest literal that gives back the element `x` of `dtype` exactly."""
    if isinstance(x, bool) or isinstance(x, int):
        return repr(x)
    if isinstance(x, complex):
        return repr(complex(float(_number(x.real, dtype)), float(_number(x.imag, dtype))))
    if not math.isfinite(x):
        return "torch.nan" if math.isnan(x) else ("torch.inf" if x > 0 else "-torch.inf")
    real = torch.empty((), dtype=dtype).real.dtype if dtype.is_complex else dtype
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        if torch.tensor(float(text), dtype=real).item() == x:
            return text if any(c in text for c in ".en") else text + ".0"
    return repr(x)


def _nested(values: Any, dtype: torch.dtype) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    return _number(values, dtype)


def tensor_literal(t: torch.Tensor, device: str | None = None) -> str:
    """torch.tensor(...) that makes a contiguous copy of `t`, exactly."""
    t = t.detach().cpu()
    where = "" if device in (None, "cpu") else f", device={device!r}"
    if t.numel() == 0:  # no elements to write, and a nested list would lose the shape
        return f"torch.zeros({tuple(t.shape)!r}, dtype={t.dtype}{where})"
    return f"torch.tensor({_nested(t.tolist(), t.dtype)}, dtype={t.dtype}{where})"


def bound_literal(bound: torch.Tensor | float) -> str:
    """The harness's elementwise error bound, each element rounded up to 3 digits."""
    if not isinstance(bound, torch.Tensor):
        bound = torch.tensor(float(bound), dtype=torch.float64)

    def up(b: float) -> str:
        if not math.isfinite(b):
            return "torch.inf"
        return "0.0" if b == 0 else f"{b * 1.01:.3g}"

    def nested(v: Any) -> str:
        return "[" + ", ".join(nested(x) for x in v) + "]" if isinstance(v, list) else up(v)
    return f"torch.tensor({nested(bound.detach().cpu().double().tolist())}, dtype=torch.float64)"


def _leaf_literal(t: torch.Tensor, layout: str, device: str) -> str:
    """The leaf's values with its layout (harness.build._leaf_tensor), and its requires_grad."""
    if layout == "transposed" and t.dim() >= 2:
        made = tensor_literal(t.transpose(-1, -2).contiguous(), device) + ".transpose(-1, -2)"
    elif layout == "strided" and t.dim() >= 1:
        made = tensor_literal(t.contiguous(), device) + ".repeat_interleave(2, -1)[..., ::2]"
    else:
        made = tensor_literal(t, device)
    return made + (".requires_grad_()" if t.requires_grad else "")


def _docstring(what: str) -> str:
    return (f'"""{what}\nWritten by the autograd.Function harness (torch {torch.__version__}); it needs torch only. '
            'Exit status 1 while it fails, 0 when not."""\n')


def data_section(data: dict[str, str]) -> str:
    """The data run() reads, kept as written by the reducer (deleting an input element or a weight
    changes what is computed, never which code runs), and the line after which the reducer works.
    The code comes as: the graph's forward, the Functions, then the run (pysource-minimize works on
    the last statements of a list first: the run's hooks, checkpoint and saved-tensor hooks go first,
    which also makes every later candidate cheaper)."""
    return "\n" + "\n".join(data.values()) + "\n\n" + CODE_LINE + "\n"


# --- which comparison ------------------------------------------------------------------------------


def _role_kind(checkpoint: str, role: str) -> str:
    """"value" (a tensor), "meta" (a metadata fact), "error", or "other" (hooks, lifetimes, ...)."""
    if role == "error":
        return "error"
    if checkpoint.startswith("meta:"):
        return "meta" if role.split(":", 1)[0] in _META_ROLES else "other"
    if checkpoint in ("forward", "backward", "double_backward", "forward_ad"):
        head = role.split(":", 1)[0]
        if head in ("out", "grad", "agrad", "grad2", "dgrad", "tangent", "retained"):
            return "value"
        if head in ("requires_grad", "const"):
            return "meta"
    return "other"


def chosen_mismatch(verdict: "Verdict") -> tuple["PathOutcome", "Mismatch"]:
    """The failed comparison a plain script shows: one it can observe, against eager before against
    math (eager is computed by the script itself), an error before a value before a metadata fact."""
    order = {"error": 0, "value": 1, "meta": 2, "other": 3}
    candidates = [(o, m) for o in verdict.failed for m in o.mismatches]
    if not candidates:
        raise NotPlain("the check has no failed comparison to show")
    def rank(om: tuple["PathOutcome", "Mismatch"]) -> tuple:
        kind = _role_kind(om[1].checkpoint, om[1].role)
        return kind == "other", om[1].against != "eager", om[1].against != "math", order[kind]
    return min(candidates, key=rank)


# --- the script --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Path:
    """How the script runs the failing path: eager, compiled autograd or torch.compile."""

    name: str
    family: str  # eager | compiled | dynamo
    variant: str = ""
    fullgraph: bool = True

    @staticmethod
    def parse(name: str, note: str = "") -> "_Path":
        if "@" in name:
            raise NotPlain(f"path {name} compares two devices")
        family, _, variant = name.partition(":")
        if family == "eager":
            return _Path(name, "eager")
        if family == "compiled" and variant:
            return _Path(name, "compiled", variant)
        if family == "dynamo" and variant:
            return _Path(name, "dynamo", variant, "eager fallback" not in note)
        raise NotPlain(f"path {name} needs the harness (a native extension or a torch.func transform)")

    def forward(self, base: str) -> str:
        """The forward function the run calls: `base`, compiled on dynamo (fullgraph unless the
        harness ran it through Dynamo's eager fallback)."""
        if self.family != "dynamo":
            return base
        return f"torch.compile({base}, backend={self.variant!r}, fullgraph={self.fullgraph}) if compiled else {base}"

    def backward_context(self, spec: GraphSpec) -> str | None:
        """What the backward runs in: compiled autograd on `compiled`, and on `dynamo` where the spec
        asks for it (GraphSpec.compiled_backward: the captured graph as it is)."""
        if self.family == "dynamo" and spec.compiled_backward:
            return "torch._dynamo.compiled_autograd._enable(lambda gm: gm.forward) if compiled else torch.enable_grad()"
        if self.family != "compiled":
            return None
        compiler = ("lambda gm: gm.forward" if self.variant == "capture"
                    else f"lambda gm: torch.compile(gm, backend={self.variant!r}, fullgraph=True)")
        return f"torch._dynamo.compiled_autograd._enable({compiler}) if compiled else torch.enable_grad()"


class _Writer:
    """One plain script for one failed comparison of one spec on one path."""

    def __init__(self, spec: GraphSpec, device: str, path: _Path, mismatch: "Mismatch") -> None:
        from harness.build import build

        self.spec, self.device, self.path, self.m = spec, device, path, mismatch
        self.kind = _role_kind(mismatch.checkpoint, mismatch.role)
        if self.kind == "other":
            raise NotPlain(f"{mismatch.checkpoint} {mismatch.role} is observed by the harness itself "
                           f"(lifetimes, hooks or side effects), not by a few lines of torch")
        if mismatch.against not in ("eager", "math"):
            raise NotPlain(f"the comparison is against {mismatch.against}, which the harness computes")
        if self.kind == "error" and mismatch.against == "math" and any(fn.error for fn in spec.functions):
            raise NotPlain("the spec raises a deliberate error: the one raised differs from it in its message only")
        self.built = build(spec, device)
        self.dtype = self.built.dtype
        self.refs = [r for r in spec.value_refs() if r.startswith("f")]
        self.lines: list[str] = []
        self.base = 0  # extra indentation levels (inside run's try block, a dual_level block)
        #: module-level definitions of the data run() reads (inputs, weights, tangents), by name
        self.data: dict[str, str] = {}
        self._chosen: list[int] = []

    # --- pieces ---------------------------------------------------------------------------
    def functions(self) -> str:
        styled = plain.in_code_style(self.spec, "plain")
        if any(fn.code != "plain" for fn in styled.functions):
            raise NotPlain("a Function with a hand-written vmap rule has no plain source")
        try:
            sources = [plain.function_source(fn, n, tuple(self.spec.shape), self.dtype, self.device)
                       for n, fn in enumerate(styled.functions)]
        except (ValueError, SpecError) as e:
            raise NotPlain(str(e)) from None
        return "\n\n\n".join(s.rstrip("\n") for s in sources)

    def add(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * (self.base + depth) + line)

    def leaves(self, with_tangents: bool = False) -> list[str]:
        """Lines taking the leaves from inputs() (and making them dual with TANGENTS); returns the
        forward's arguments."""
        made = self.built.make_leaves()
        names = [f"x{i}" for i in range(len(made))]
        if names:
            self.add(f"{', '.join(names)}{',' if len(names) == 1 else ''} = inputs()")
        self.data["inputs"] = ("def inputs():  # the leaves, made afresh for each run\n    return ["
                               + ", ".join(_leaf_literal(t, leaf.layout, self.device)
                                           for leaf, t in zip(self.spec.leaves, made)) + "]")
        if with_tangents:
            tangents = self.built.leaf_tangents(made)
            self.data["tangents"] = "TANGENTS = [" + ", ".join(
                "None" if t is None else tensor_literal(t, self.device) for t in tangents) + "]"
            for i, t in enumerate(tangents):
                if t is not None:
                    self.add(f"x{i} = fwAD.make_dual(x{i}, TANGENTS[{i}])")
        args: list[str] = []
        for i, leaf in enumerate(self.spec.leaves):
            if leaf.views:  # made once, here: the forward and every check see the same view objects
                views = [f"x{i}_{j}" for j in range(leaf.views)]
                self.add(f"{', '.join(views)}{',' if len(views) == 1 else ''} = "
                         f"{', '.join(f'x{i}[{j}]' for j in range(leaf.views))}")
                args += views
            else:
                args.append(f"x{i}")
        return args

    def outputs(self) -> list[str]:
        """Every Function output, constants too, in the order graph_forward returns them."""
        return [f"f{n}.{k}" for n, fn in enumerate(self.spec.functions) for k in range(len(fn.outputs))]

    def name(self, ref: str) -> str:
        """The expression of a value in run(): a leaf, a view of one, or an item of `outputs`."""
        if ref.startswith("x"):
            return plain.value_name(ref)
        return f"outputs[{self.outputs().index(ref)}]"

    def forward(self, args: list[str], depth: int = 1, *, plain_forward: bool = False) -> None:
        """The forward as the path runs it (plain_forward: as forward AD runs it, eagerly)."""
        spec = self.spec
        base = "graph_forward"
        if not plain_forward:
            if spec.checkpoint:
                base = "(lambda *xs: torch.utils.checkpoint.checkpoint(graph_forward, *xs, use_reentrant=False))"
            if spec.trace and self.path.family != "dynamo":
                self.add("def traced(*xs):", depth)
                self.add(f"return torch.jit.trace({base}, xs, check_trace=False, strict=False)(*xs)", depth + 1)
                base = "traced"
            if self.path.family == "dynamo":
                base = f"({self.path.forward(base)})"
        call = f"outputs = {base}({', '.join(args)})"
        if any(h.kind == "saved_tensors" for h in spec.hooks) and not plain_forward:
            self.add("with torch.autograd.graph.saved_tensors_hooks(lambda t: [t.detach()], lambda p: p[0]):", depth)
            self.add(call, depth + 1)
        else:
            self.add(call, depth)
        if not plain_forward:
            for ref in spec.mutated_outputs:
                self.add(f"{self.name(ref)}.mul_(2.0)  # the user's in-place update after the forward", depth)

    def hooks(self, depth: int = 1) -> None:
        for hook in self.spec.hooks:
            if hook.kind == "saved_tensors":
                continue
            name = self.name(hook.target)
            # (harness.run._install_hooks skips a value that does not require grad: known here for a
            # leaf, decided at run time for a Function's output)
            leaf = hook.target.startswith("x")
            if leaf and not self.spec.leaves[int(hook.target[1:].split("[")[0])].requires_grad:
                continue
            if hook.kind in ("post_accumulate", "tensor", "retain_grad"):
                call = {"post_accumulate": "register_post_accumulate_grad_hook(lambda p: None)",
                        "tensor": "register_hook(lambda g: g * 2)", "retain_grad": "retain_grad()"}[hook.kind]
                if leaf:
                    self.add(f"{name}.{call}", depth)
                else:
                    self.add(f"if {name}.requires_grad:", depth)
                    self.add(f"{name}.{call}", depth + 1)
            else:
                method = "register_prehook(lambda gO: None)" if hook.kind == "pre" else "register_hook(lambda gI, gO: None)"
                self.add(f"if {name}.requires_grad and {name}.grad_fn is not None:", depth)
                self.add(f"{name}.grad_fn.{method}", depth + 1)

    def loss(self, depth: int = 1) -> None:
        """harness.run._loss: a weighted sum of the outputs that require grad (WEIGHTS: None for a constant)."""
        weights = iter(self.built.weights(len(self.refs)))
        self.data["weights"] = "WEIGHTS = [" + ", ".join(
            "None" if ref not in self.refs else tensor_literal(next(weights), self.device)
            for ref in self.outputs()) + "]  # the loss's, one per output"
        real = ".real" if self.dtype.is_complex else ""
        self.add(f"loss = sum((out * weight).sum(){real} for out, weight in zip(outputs, WEIGHTS) "
                 "if weight is not None and out.requires_grad)", depth)

    def backward(self, stop_at: str | None, depth: int = 1) -> None:
        """The spec's backward mode; stops after the statement that makes `stop_at` (a role)."""
        spec = self.spec
        chosen = list(spec.grad_leaves) or [i for i, leaf in enumerate(spec.leaves) if leaf.requires_grad]
        inputs = "[" + ", ".join(f"x{i}" for i in chosen) + "]"
        context = self.path.backward_context(spec)
        if context is not None:
            self.add(f"with {context}:", depth)
            depth += 1
        mode = spec.backward
        if mode in ("backward", "retain"):
            options = ", ".join((["retain_graph=True"] if mode == "retain" else []) + ([f"inputs={inputs}"]
                                                                                         if spec.grad_leaves else []))
            self.add(f"loss.backward({options})", depth)
            if mode == "retain" and stop_at is not None and stop_at.startswith("grad:"):
                leaf = stop_at.split(":")[1]  # its .grad after the first of the two backwards
                self.add(f"{leaf}_first = None if {leaf}.grad is None else {leaf}.grad.clone()", depth)
            elif mode == "retain":
                self.add(f"loss.backward({f'inputs={inputs}' if spec.grad_leaves else ''})", depth)
        else:
            create = ", create_graph=True" if mode == "double" else ""
            self.add(f"grads = torch.autograd.grad(loss, {inputs}, allow_unused=True{create})", depth)
            if mode == "double" and (stop_at is None or stop_at.startswith("dgrad:")):
                weights = self.built.weights(len(chosen), offset=2_000_003)
                self.data["weights2"] = ("WEIGHTS2 = [" + ", ".join(tensor_literal(w, self.device) for w in weights)
                                         + "]  # the second-order loss's, one per gradient")
                self.add(f"terms = [(g * w).sum(){'.real' if self.dtype.is_complex else ''} for g, w in "
                         "zip(grads, WEIGHTS2) if g is not None and g.requires_grad]", depth)
                self.add(f"second = torch.autograd.grad(sum(terms), {inputs}, allow_unused=True) if terms "
                         f"else [None] * {len(chosen)}", depth)
        self._chosen = chosen

    def observed(self) -> str:
        """The expression of the failing role, where run() returns it."""
        checkpoint, role = self.m.checkpoint, self.m.role
        head, _, ref = role.partition(":")
        if head in ("out", "requires_grad", "const", "tangent", "retained"):
            name = self.name(ref)
            return {"out": name, "requires_grad": f"{name}.requires_grad", "const": name,
                    "tangent": f"fwAD.unpack_dual({name}).tangent", "retained": f"{name}.grad"}[head]
        if head in ("grad", "grad2"):
            mode_first = self.spec.backward == "retain" and head == "grad"
            return f"{ref}_first" if mode_first else f"{ref}.grad"
        if head == "agrad":
            return f"grads[{self._chosen.index(int(ref[1:]))}]"
        if head == "dgrad":
            return f"second[{self._chosen.index(int(ref[1:]))}]"
        if head == "grad_is_none":
            return f"{ref}.grad is None"
        if head in ("version", "grad_fn", "is_leaf"):
            name = self.name(ref)
            return {"version": f"{name}._version", "grad_fn": f"{name}.grad_fn is not None",
                    "is_leaf": f"{name}.is_leaf"}[head]
        if head == "alias":
            return self._alias(ref)
        if head == "stride":
            inner = self._value_of(ref)
            return (f"tuple(s if n > 1 else None for n, s in zip({inner}.shape, {inner}.stride())) "
                    f"if {inner}.numel() else (None,) * {inner}.dim()")
        raise NotPlain(f"role {role} has no plain observation")

    def _value_of(self, role: str) -> str:
        """The tensor a value role names (whose strides `stride:<role>` records)."""
        head, _, ref = role.partition(":")
        if head in ("out", "tangent", "retained", "grad", "grad2", "agrad", "dgrad"):
            saved, self.m = self.m, dataclasses.replace(self.m, role=role)
            try:
                return self.observed()
            finally:
                self.m = saved
        raise NotPlain(f"strides of {role} have no plain observation")

    def _alias(self, ref: str) -> str:
        """harness.run._alias: 'is <ref>', 'view of <ref>' or 'fresh', over the values named before `ref`."""
        named = [f"x{i}" for i in range(len(self.spec.leaves))]
        named += [f"x{i}[{j}]" for i, leaf in enumerate(self.spec.leaves) for j in range(leaf.views)]
        named += self.refs[:self.refs.index(ref)]
        self.add("named = {}")
        self.add(f"for name, value in [{', '.join(f'({n!r}, {self.name(n)})' for n in named)}]:")
        self.add("named.setdefault(value._cdata, name)", 2)
        out = self.name(ref)
        return (f"'is ' + named[{out}._cdata] if {out}._cdata in named else 'view of ' + named.get({out}._base._cdata, "
                f"'an unnamed tensor') if {out}._base is not None else 'fresh'")


def _run_function(w: _Writer) -> str:
    """`def run(compiled):` returning the failing role's value, or for an error comparison
    "<exception type> at <checkpoint>" / "no error"."""
    spec, m = w.spec, w.m
    w.lines = []
    if w.kind == "error":
        w.add('step = "forward"')
        w.add("try:")
        w.base = 1
        w.forward(w.leaves())
        if spec.backward != "none":
            w.hooks()
            w.add('step = "backward"')
            w.loss()
            w.backward(None)
        if spec.forward_ad:
            w.add('step = "forward_ad"')
            w.add("with fwAD.dual_level():")
            w.base = 2
            w.forward(w.leaves(with_tangents=True), plain_forward=True)
        w.base = 0
        w.add("except Exception as e:  # what was raised, and where")
        w.add('return f"{type(e).__name__} at {step}"', 2)
        w.add('return "no error"')
        return "def run(compiled):\n" + "\n".join(w.lines)
    phase = m.checkpoint[len("meta:"):] if m.checkpoint.startswith("meta:") else m.checkpoint
    if phase == "forward_ad":  # forward AD runs the Functions eagerly on every path (harness.run._forward_ad)
        w.add("with fwAD.dual_level():")
        w.base = 1
        w.forward(w.leaves(with_tangents=True), plain_forward=True)
        w.add(f"return {w.observed()}")
        return "def run(compiled):\n" + "\n".join(w.lines)
    w.forward(w.leaves())
    if phase != "forward":
        w.hooks()
        w.loss()
        w.backward(m.role.split(":", 1)[1] if m.role.startswith("stride:") else m.role)
    w.add(f"return {w.observed()}")
    return "def run(compiled):\n" + "\n".join(w.lines)


def _check_part(w: _Writer, expected_literal: str | None, bound: str | None) -> tuple[str, bool]:
    """The comparison at the end of the script, and whether it is reducible (eager's value is
    computed by the script)."""
    m, path = w.m, w.path.name
    lines = [CHECK_LINE]
    against_eager = m.against == "eager"
    if against_eager:
        lines.append("expected, observed = run(compiled=False), run(compiled=True)")
    else:
        lines.append(f"expected = {expected_literal}  # what the math oracle (plain autograd of the same ops) gives")
        lines.append(f"observed = run(compiled={w.path.family != 'eager'})")
    reference = "eager" if against_eager else "math"
    where = f"{m.checkpoint} {m.role}"
    lines.append(f'print("expected ({reference}):", expected, "\\nobserved ({path}):", observed)')
    if w.kind == "value":
        wide = "torch.complex128" if w.dtype.is_complex else "torch.float64"
        lines.append(f"bound = {bound}  # the harness's elementwise error bound for this value")
        lines.append("if expected is None or observed is None or expected.shape != observed.shape:")
        if against_eager:
            lines.append("    ratio = 0.0 if expected is observed else torch.inf")
        else:  # the math oracle's zeros stand for a gradient a Function does not return (None)
            lines.append("    ratio = 0.0 if expected is observed or not (expected if observed is None else observed)"
                         ".count_nonzero() else torch.inf")
        lines.append("else:  # the worst error as a multiple of its bound (equal values, and nan with nan, agree)")
        lines.append(f"    error = (observed.to({wide}) - expected.to({wide})).abs() / bound")
        lines.append("    ratio = error.masked_fill((observed == expected) | (observed.isnan() & expected.isnan()) "
                     "| bound.isinf(), 0).nan_to_num(torch.inf).max().item() if error.numel() else 0.0")
        lines.append('print(f"worst error / bound: {ratio:.3g}")')
        lines.append("if ratio > 1:")
        lines.append(f'    raise SystemExit("{FAILS}{path} differs from {reference} at {where}")')
    else:
        lines.append("if observed != expected:")
        lines.append(f'    raise SystemExit(f"{FAILS}{path} differs from {reference} at {where}: {{observed!r}}, '
                     f'{reference}: {{expected!r}}")')
    return "\n".join(lines) + "\n", against_eager


def plain_script(spec: GraphSpec, outcome: "PathOutcome", mismatch: "Mismatch", device: str) -> tuple[str, bool]:
    """(the script's text, whether it is reducible) for one failed comparison."""
    from harness.check import _error_bounds
    from harness.oracles.compare import Tolerances
    from harness.oracles.math import run_math

    path = _Path.parse(mismatch.path, outcome.result.note if outcome.result is not None else "")
    w = _Writer(spec, device, path, mismatch)
    functions = w.functions()
    forward = plain.graph_forward_source(spec).text.rstrip("\n")
    run = _run_function(w)
    expected = bound = None
    if w.kind == "value":
        try:
            bound = bound_literal(Tolerances(lambda: _error_bounds(w.built)).for_role(mismatch.checkpoint,
                                                                                      mismatch.role).atol)
        except KeyError as e:
            raise NotPlain(str(e)) from None
    if mismatch.against == "math":
        math = run_math(w.built)
        if w.kind == "error":
            expected = repr("RuntimeError at backward" if "ran without" in mismatch.detail else "no error")
        elif w.kind == "value":
            value = math.tensors.get(mismatch.checkpoint, {}).get(mismatch.role)
            expected = "None" if value is None else tensor_literal(value, device)
        else:
            value = math.values.get(mismatch.checkpoint, {}).get(mismatch.role)
            expected = repr(value)
    check, reducible = _check_part(w, expected, bound)
    imports = "import torch\n" + ("import torch.autograd.forward_ad as fwAD\n" if "fwAD." in run else "")
    imports += data_section(w.data)
    header = _docstring(f"{mismatch.path} vs {mismatch.against}: {mismatch.checkpoint} {mismatch.role}: {mismatch.detail}.")
    text = f"{header}{imports}\n\n{forward}\n\n\n{functions}\n\n\n{run}\n\n\n{check}"
    return text, reducible


# --- a crash or hang ---------------------------------------------------------------------------------


def crash_script(spec: GraphSpec, path_name: str, device: str, what: str, hang_s: float = 300.0) -> str:
    """A plain script that runs every phase of `spec` on one path in a child process (torch's
    multiprocessing, forked) and fails when the child dies or makes no progress for `hang_s`."""
    from harness.oracles.compare import Mismatch

    path = _Path.parse(path_name)
    w = _Writer(spec, device, path, Mismatch(path_name, "eager", "forward", "error", what))
    run = _run_function(w)  # what was raised is returned: only a crash or a hang fails
    check = "\n".join([
        CHECK_LINE,
        "if __name__ == '__main__':",
        "    child = torch.multiprocessing.get_context('fork').Process(target=run, args=(True,))",
        "    child.start()",
        f"    child.join({hang_s:g})",
        "    if child.is_alive():",
        "        child.kill()",
        f"        raise SystemExit('{FAILS}hang: {path_name} made no progress for {hang_s:g} s')",
        "    if child.exitcode != 0:",
        f"        raise SystemExit('{FAILS}crash: {path_name} ended with exit code ' + str(child.exitcode))",
        "    print('ran to the end')",
    ]) + "\n"
    header = _docstring(f"The campaign worker died on this graph on {path_name}: {what}.")
    imports = "import torch\nimport torch.multiprocessing\n" + (
        "import torch.autograd.forward_ad as fwAD\n" if "fwAD." in run else "") + data_section(w.data)
    return (f"{header}{imports}\n\n{plain.graph_forward_source(spec).text.rstrip()}\n\n\n{w.functions()}\n\n\n"
            f"{run}\n\n\n{check}")


def write_crash_reproducer(spec: GraphSpec, path_names: list[str], device: str, what: str, destination: str | Path,
                           *, until: float | None = None) -> Path:
    """The reproducer of a worker's crash or hang: the plain script of the first path whose run dies
    the same way (checked in a child, reduced until `until`), else the harness script."""
    destination = Path(destination)
    text, why = None, "no path's plain script died the same way"
    for name in path_names:
        try:
            text = _checked_and_reduced(crash_script(spec, name, device, what), until, f"the plain script on {name}")
            break
        except NotPlain as e:
            why = str(e)
    if text is None:
        text = harness_script(spec, path_names, device, f"The campaign worker ended with {what} on this spec.",
                              destination.name, why)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(text)
    return destination


# --- gradcheck ----------------------------------------------------------------------------------------


def gradcheck_script(spec: GraphSpec, device: str) -> str:
    """A plain script of the campaign's float64 gradcheck of `spec` (harness.check.gradcheck_verdict):
    the Functions in float64 (complex128), the outputs it compares as a function of the leaves it
    varies, and torch.autograd.gradcheck with the harness's options. Reducible: the reference is
    finite differences of the script's own forward."""
    from harness.check import gradchecked_spec
    from harness.oracles.math import gradcheck_setup

    setup = gradcheck_setup(gradchecked_spec(spec), device)
    if not setup.refs:
        raise NotPlain("gradcheck compares no output of this spec")
    checked = setup.spec
    styled = plain.in_code_style(checked, "plain")
    if any(fn.code != "plain" for fn in styled.functions):
        raise NotPlain("a Function with a hand-written vmap rule has no plain source")
    dtype = setup.built.dtype
    functions = "\n\n\n".join(plain.function_source(fn, n, tuple(checked.shape), dtype, device).rstrip("\n")
                              for n, fn in enumerate(styled.functions))
    forward = plain.graph_forward_source(checked).text.rstrip("\n")
    outputs = [f"f{n}.{k}" for n, fn in enumerate(checked.functions) for k in range(len(fn.outputs))]
    lines = [f"def outputs({', '.join(f'x{i}' for i in setup.varied)}):",
             "    # the outputs gradcheck compares: those that require grad, fed by no non-differentiable output"]
    args: list[str] = []
    for i, leaf in enumerate(checked.leaves):
        if i not in setup.varied:
            lines.append(f"    x{i} = LEAVES[{i}]")
        args += [f"x{i}[{j}]" for j in range(leaf.views)] if leaf.views else [f"x{i}"]
    lines.append(f"    values = graph_forward({', '.join(args)})")
    lines.append(f"    return tuple(values[k] for k in {tuple(outputs.index(r) for r in setup.refs)!r})")
    data = {"leaves": "LEAVES = [" + ", ".join(_leaf_literal(t.detach().requires_grad_(t.requires_grad), leaf.layout,
                                                                device)
                                            for leaf, t in zip(checked.leaves, setup.leaves)) + "]"}
    check = "\n".join([
        CHECK_LINE,
        f"inputs = ({', '.join(f'LEAVES[{i}]' for i in setup.varied)}{',' if len(setup.varied) == 1 else ''})",
        "torch.manual_seed(0)  # fast mode's random vectors",
        "try:",
        f"    torch.autograd.gradcheck(outputs, inputs, check_forward_ad={setup.forward_ad}, check_backward_ad=True,",
        "                             check_undefined_grad=False, fast_mode=True)",
        "except Exception as e:  # what gradcheck says; the FAILS line leaves its numbers out",
        "    print(e)",
        "    first = str(e).splitlines()[0] if str(e) else ''",
        f"    raise SystemExit('{FAILS}gradcheck: ' + type(e).__name__ + ': ' + "
        "' '.join(w for w in first.split() if not any(c.isdigit() for c in w)))",
    ]) + "\n"
    header = _docstring("float64 gradcheck of the graph fails: its backward or jvp disagrees with finite differences.")
    return (f"{header}import torch\n{data_section(data)}\n\n{forward}\n\n\n{functions}\n\n\n" + "\n".join(lines)
            + f"\n\n\n{check}")


def write_gradcheck_reproducer(spec: GraphSpec, device: str, summary: str, destination: str | Path, *,
                               until: float | None = None) -> Path:
    """The reproducer of a gradcheck failure: the plain gradcheck script when it fails on its own
    (then reduced until `until`), else a script that runs the harness's gradcheck of the spec."""
    destination = Path(destination)
    try:
        text = _checked_and_reduced(gradcheck_script(spec, device), until, "the plain gradcheck script")
    except NotPlain as e:
        text = _GRADCHECK_TEMPLATE.format(torch=torch.__version__, summary=summary.replace('"""', "'''"),
                                          why=str(e), name=destination.name, spec=spec.to_json(), device=device)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(text)
    return destination


def _checked_and_reduced(text: str, until: float | None, what: str) -> str:
    """`text` once it has failed on its own (NotPlain when it does not), reduced until `until`."""
    timeout = RUN_TIMEOUT_S if until is None else max(1.0, min(RUN_TIMEOUT_S, until - time.perf_counter()))
    code, output = reduce.run_script(text, timeout=timeout)
    if code is None and until is not None and time.perf_counter() >= until - 0.5:
        # out of budget before the script finished: written as it is, and it says so
        return with_note(text, "Not run before it was written (the campaign was out of budget).")
    if code != 1 or not reduce.fails_line(output):
        raise NotPlain(f"{what} did not fail on its own (exit status {code}): the failure needs the harness' "
                       "generic Functions or its runner")
    if until is None:  # (or the comparison's reference is a literal: reduction would change its meaning)
        return text
    try:
        return reduce.reduce_text(text, until=until, first=(code, output)).text
    except ModuleNotFoundError as e:  # the reduce extra is not installed
        return with_note(text, f"Not reduced: {e}.")


_GRADCHECK_TEMPLATE = '''\
#!/usr/bin/env python3
"""Reproducer written by the autograd.Function differential harness (torch {torch}).

{summary}

Why this script uses the harness: {why}
It needs this project installed (pip install -e .). Run: python {name}
Exit status 1 means the failure reproduced; 0 means it did not.
"""
import sys

from harness.check import gradcheck_verdict
from harness.spec import GraphSpec

SPEC = {spec!r}
status, detail = gradcheck_verdict(GraphSpec.from_json(SPEC), {device!r})
print("gradcheck:", status, detail)
sys.exit(1 if status == "failed" else 0)
'''


# --- the fallback: the installed harness on the spec ---------------------------------------------

_HARNESS_TEMPLATE = '''\
#!/usr/bin/env python3
"""Reproducer written by the autograd.Function differential harness (torch {torch}).

{summary}

Why this script uses the harness: {why}
It needs this project installed (pip install -e .). Run: python {name}
Exit status 1 means the failure reproduced; 0 means it did not.
"""
import sys

from harness import check, paths
from harness.spec import GraphSpec

SPEC = {spec!r}
verdict = check.check(GraphSpec.from_json(SPEC), [paths.get(name) for name in {paths!r}], {device!r}, twins={twins!r})
for outcome in verdict.outcomes.values():
    print(f"{{outcome.path}}: {{outcome.status}} {{outcome.reason}}")
print(verdict.report())
sys.exit(1 if verdict.failed else 0)
'''


def harness_script(spec: GraphSpec, paths: list[str], device: str, summary: str, name: str, why: str,
                   twins: bool | str = False) -> str:
    return _HARNESS_TEMPLATE.format(torch=torch.__version__, summary=summary.replace('"""', "'''"),
                                    why=why.replace('"""', "'''"), name=name, spec=spec.to_json(), paths=list(paths),
                                    device=device, twins=twins)


# --- a user's own Function (harness.function_check) ---------------------------------------------


def _argument_literal(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        on = None if value.device.type == "cpu" else str(value.device)
        return tensor_literal(value, on) + (".requires_grad_()" if value.requires_grad else "")
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_argument_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    return repr(value)


def _import_or_source(function: type) -> str:
    """How the reproducer gets the Function: an import when it can be imported, else its source."""
    module, qualname = function.__module__, function.__qualname__
    if module != "__main__" and "<locals>" not in qualname and "." not in qualname:
        return f"from {module} import {qualname}"
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return f"# {module}.{qualname} can be neither imported nor read: define it here\n"
    lines = source.splitlines()
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "# the Function, copied from its source (it cannot be imported)\n" + "\n".join(
        line[indent:] for line in lines)


def function_script(function: type, sample: Sequence[Any], checks: Sequence[str], paths: Sequence[str],
                    device: str | None, summary: str) -> str:
    """A standalone script that re-runs exactly these checks of check_function on these paths
    (registry path names) and this sample, with its exact values; exits 1 while they fail."""
    summary = summary.replace('"""', "'''")
    return f'''#!/usr/bin/env python3
"""Reproducer written by harness.check_function (torch {torch.__version__}).

{summary}
"""
import sys

import torch
from torch import inf, nan  # noqa: F401  (tensor literals may use them)

from harness.function_check import FunctionCheckError, check_function

{_import_or_source(function)}

SAMPLE = ({", ".join(_argument_literal(a) for a in sample)},)

try:
    check_function({function.__name__}, [SAMPLE], paths={list(paths)!r}, checks={list(checks)!r}, device={device!r})
except FunctionCheckError as error:
    print(error)
    sys.exit(1)
print("did not reproduce")
'''


# --- writing ----------------------------------------------------------------------------------------


def write_reproducer(spec: GraphSpec, paths: list[str], device: str, summary: str,
                     destination: str | Path, *, verdict: "Verdict | None" = None,
                     twins: bool | str = False, until: float | None = None) -> Path:
    """Write the reproducer of a failure. With `verdict` (the check of `spec` that failed), a
    plain-torch script of its chosen comparison, kept when running it shows the failure, and then
    reduced (harness.reduce) until `until` (a time.perf_counter() deadline; None: not reduced);
    else, or when the plain script does not fail, a script that runs the installed harness.
    twins: the check's twins option (a failure against a twin)."""
    destination = Path(destination)
    written = None
    why = "the campaign wrote it without a check of its own (out of budget, or the worker died)"
    if verdict is not None:
        try:
            written = plain_reproducer(verdict, device, until=until)
        except NotPlain as e:
            why = str(e)
    text = written if written is not None else harness_script(spec, paths, device, summary, destination.name, why,
                                                               twins)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(text)
    return destination


def plain_reproducer(verdict: "Verdict", device: str, *, until: float | None = None) -> str:
    """The plain script of the verdict's chosen comparison, checked by running it (and, where its
    reference is computed in the script, reduced until `until`). Raises NotPlain with the reason
    when it cannot be written or does not fail on its own."""
    outcome, mismatch = chosen_mismatch(verdict)
    text, reducible = plain_script(outcome.checked_spec or verdict.spec, outcome, mismatch, device)
    return _checked_and_reduced(text, until if reducible else None, f"the plain-torch script of {mismatch.path} vs "
                                f"{mismatch.against} at {mismatch.checkpoint} {mismatch.role}")


__all__ = ["NotPlain", "chosen_mismatch", "function_script", "harness_script", "plain_reproducer",
           "crash_script", "gradcheck_script", "plain_script", "write_crash_reproducer",
           "write_gradcheck_reproducer", "write_reproducer"]
