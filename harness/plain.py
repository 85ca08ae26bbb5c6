"""The `plain` generation style: a Function class written out as Python source text.

`harness.generic` makes a `generic` Function from one class body that reads its spec from
class attributes, closures and module globals and takes its inputs as `*args`; that is
how the three Dynamo bugs about such Functions stay covered. A `plain` Function is what a
user writes instead: explicit parameters (`forward(ctx, a0, a1)`, or `forward(a0, a1)`
plus `setup_context`), every constant a literal (shape, `torch.float64`, the device,
coefficients, biases, which outputs are views or dirty), and nothing read inside
forward/backward/jvp/setup_context but the `torch` module itself. The text is compiled
with exec() into a namespace that holds only `torch`.

The code follows the generic style's op order exactly (`y = torch.full(shape, bias)`,
then `y = y + c * op(x)` per term; `g * c * deriv` in the same accumulation order; the
same jvp), so both styles give bit-identical results; tests/test_plain_style.py checks it.

Not in the plain style, by nature:
  * the lifetime oracle's observer of saved intermediates (`generic.SAVED_OBSERVER` is a
    module global called from inside the forward): plain Functions report no saved
    intermediates, so the saved-tensor lifetime rules see only generic Functions.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import linecache
import math
from dataclasses import dataclass
from types import CodeType
from typing import Any

import torch

from harness.spec import FunctionSpec, GraphSpec, custom_op_name, parameter_name

#: classes to run for plain-style Function n instead of compiling its generated source: a
#: plain reproducer defines its Functions as code and hands them over here, so what the
#: user reads is what runs (empty otherwise)
PLAIN_CLASSES: dict[int, type[torch.autograd.Function]] = {}
#: how the straight-line forward's filename starts (its source is in linecache under that name):
#: tracebacks tell its lines apart from the harness's own (harness.run.recording_errors)
GRAPH_FORWARD_FILE = "<harness graph_forward "

_INDENT = "    "
#: the most recent distinct sources kept compiled and registered with linecache: a campaign
#: writes new sources for every example, and each linecache entry (~4 kB) would otherwise
#: stay for the life of the process (about 3 kB an example, gigabytes in a night)
SOURCES_KEPT = 4096
_registered: collections.OrderedDict[str, None] = collections.OrderedDict()  # linecache names, oldest first


# --- literals ------------------------------------------------------------------------


def literal(value: Any) -> str:
    """Python source for a constant; evaluates to an equal value of the same type
    (tuples as plain tuples; non-finite floats through torch, the one name in scope)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "torch.nan" if math.isnan(value) else ("torch.inf" if value > 0 else "-torch.inf")
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise ValueError(f"value={value!r} has no literal in the plain style; use code='generic' for it.")


def _names(prefix: str, indices: Any) -> list[str]:
    return [f"{prefix}{i}" for i in indices]


def _unpack(names: list[str], source: str) -> str:
    """`a, b = source` or `(a,) = source`."""
    if len(names) == 1:
        return f"({names[0]},) = {source}"
    return f"{', '.join(names)} = {source}"


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _packed(fn: FunctionSpec, names: list[str]) -> list[str]:
    """The output names as the forward returns them: a listed output inside a list, `[z]`
    (FunctionSpec.pack_outputs)."""
    return [f"[{name}]" if o.listed else name for o, name in zip(fn.outputs, names)]


def _assigned(fn: FunctionSpec, names: list[str], source: str) -> str:
    """`a, [b] = source`: a Function's outputs taken apart as it returned them (unpack_outputs)."""
    packed = _packed(fn, names)
    return _unpack(packed, source) if fn.tuple_output else f"{packed[0]} = {source}"


def _op(op: str, x: str) -> str:
    """The source of op(x), as generic._op computes it."""
    return {"linear": x, "sin": f"torch.sin({x})", "square": f"({x} * {x})", "tanh": f"torch.tanh({x})"}[op]


def _derivative(op: str, x: str) -> str:
    """The source of d op/dx at x, as generic._derivative computes it (parenthesised)."""
    return {"sin": f"torch.cos({x})", "square": f"(2 * {x})", "tanh": f"(1 - torch.tanh({x}) ** 2)"}[op]


class _Code:
    """Lines of source with indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def add(self, line: str) -> None:
        self.lines.append(_INDENT * self.depth + line if line else "")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# --- the class -----------------------------------------------------------------------


class _Writer:
    def __init__(self, spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device, name: str | None = None) -> None:
        self.spec, self.index = spec, index
        self.name = name or f"F{index}"
        self.inner = _Writer(spec.inner(), index, shape, dtype, device, f"F{index}Inner") if spec.nested else None
        self.shape_tuple = tuple(shape)
        self.shape = literal(self.shape_tuple)
        self.dtype = str(dtype)  # "torch.float16": the literal
        self.complex = dtype.is_complex
        self.options = f"dtype={dtype}, device={str(torch.device(device))!r}"
        self.args = [parameter_name(i) for i in range(len(spec.args))]
        self.outs = _names("o", range(len(spec.outputs)))
        #: ctx.needs_input_grad per argument, and the slots backward returns gradients for (all;
        #: a custom_op's differ, _OpWriter)
        self.needs_source = "tuple(ctx.needs_input_grad)"
        self.returned_slots: tuple[int, ...] = tuple(range(len(spec.args)))
        # the index of each nonlinear term among the saved intermediates, as generic._backward
        # counts them (compute outputs only)
        self.deriv_index: dict[tuple[int, int], int] = {}
        d = 0
        for k, out in enumerate(spec.outputs):
            if out.kind == "compute":
                for i, t in enumerate(out.terms):
                    if t.op != "linear":
                        self.deriv_index[k, i] = d
                        d += 1

    def zeros(self, shape: str | None = None) -> str:
        return f"torch.zeros({shape or self.shape}, {self.options})"

    # --- forward -------------------------------------------------------------------
    def untraceable(self, c: _Code) -> None:
        """Forward code Dynamo cannot trace (spec.UNTRACEABLE), as the generic style runs it."""
        kind = self.spec.untraceable
        if kind == "print":
            c.add('print(end="")  # prints nothing, and still breaks Dynamo\'s graph')
        elif kind == "side_effect":
            c.add(f"forward_calls.append({self.index})")
        elif kind == "data_branch":
            total = f"{self.args[self.spec.tensor_slots[0]]}.sum()" + (".real" if self.complex else "")
            c.add(f"if {total} > 0:  # Dynamo cannot know which arm runs")
            c.add(f'{_INDENT}branch = "positive"')
            c.add("else:")
            c.add(f'{_INDENT}branch = "not positive"')
            c.add("del branch  # both arms compute the same outputs")

    def listed_args(self) -> list[str]:
        """The parameter names as the arguments arrive: a tensor passed in a list as `[a1]` (Arg.listed)."""
        return [f"[{name}]" if arg.listed else name for arg, name in zip(self.spec.args, self.args)]

    def unlisted(self, c: _Code) -> None:
        """The forward's first lines: each tensor passed in a list taken out of it (`[a1] = a1`)."""
        for slot in self.spec.listed_slots:
            c.add(f"[{self.args[slot]}] = {self.args[slot]}  # a tensor passed in a list")

    def outputs(self, c: _Code) -> None:
        """The forward's values, in output order, as generic._raw_outputs makes them."""
        if self.inner is not None:
            computed = [self.outs[k] for k, o in enumerate(self.spec.outputs) if o.kind == "compute"]
            c.add(_unpack(computed, f"{self.inner.name}.apply({', '.join(self.args)})"))
        for k, out in enumerate(self.spec.outputs):
            o = self.outs[k]
            if out.kind == "compute" and self.inner is not None:
                continue  # made by the inner Function above
            if out.kind == "compute":
                c.add(f"{o} = torch.full({self.shape}, {literal(out.bias)}, {self.options})")
                for t in out.terms:
                    c.add(f"{o} = {o} + {literal(t.coeff)} * {_op(t.op, self.args[t.slot])}")
                if out.mask >= 0:
                    c.add(f"{o} = {o} * {self.mask(out)}")
            elif out.kind == "input":
                c.add(f"{o} = {self.args[out.slot]}")
            elif out.kind == "view":
                c.add(f"{o} = {self.args[out.slot]}.view_as({self.args[out.slot]})")
            elif out.kind == "dirty" and self.spec.dirty_return == "input":
                c.add(f"{self.args[out.slot]}.mul_({literal(out.coeff)})")
                c.add(f"{o} = {self.args[out.slot]}")
            elif out.kind == "dirty":
                c.add(f"{o} = {self.args[out.slot]}.mul_({literal(out.coeff)})")
            else:
                c.add(f"{o} = {literal(out.value)}")

    def mask(self, out: Any) -> str:
        """The source of an output's int64 / bool mask cast to the dtype (generic._masked)."""
        return f"{self.args[out.mask]}.to({self.dtype})"

    def setup(self, c: _Code) -> None:
        """Everything the forward tells ctx, in generic._setup's order."""
        spec = self.spec
        if not spec.materialize_grads:
            c.add("ctx.set_materialize_grads(False)")
        dirty = [self.args[o.slot] for o in spec.outputs if o.kind == "dirty"]
        if dirty:
            c.add(f"ctx.mark_dirty({', '.join(dirty)})")
        nondiff = [self.outs[k] for k, o in enumerate(spec.outputs) if o.non_differentiable]
        if nondiff:
            c.add(f"ctx.mark_non_differentiable({', '.join(nondiff)})")
        if spec.ctx_state:
            coeffs = tuple(tuple(t.coeff for t in o.terms) for o in spec.outputs)
            c.add(f"ctx.term_coeffs = {literal(coeffs)}")
        if spec.needs_input_grad == "saved":
            c.add(f"ctx.needs_input_grad_at_forward = {self.needs_source}")
        nonlinear = [self.args[s] for s in spec.nonlinear_slots]
        masks = [self.args[s] for s in spec.mask_slots]
        saved: list[str] = list(masks)  # what the gradient of a masked output needs, always
        if "inputs" in spec.save:
            saved += nonlinear
        if "intermediates" in spec.save:
            terms = [(self.args[t.slot], t.op) for o in spec.outputs for t in o.terms if t.op != "linear"]
            for d, (x, op) in enumerate(terms):
                deriv = _derivative(op, x)
                c.add(f"d{d} = {deriv[1:-1] if deriv.startswith('(') else deriv}")
            saved += _names("d", range(len(terms)))
        if "outputs" in spec.save:
            saved += [self.outs[k] for k in spec.tensor_outputs]
        if saved:
            c.add(f"ctx.save_for_backward({', '.join(saved)})")
        if spec.jvp and masks + nonlinear:
            c.add(f"ctx.save_for_forward({', '.join(masks + nonlinear)})")

    def returned(self, names: list[str], packed: bool = True) -> str:
        """The return statement of the forward (`packed`: listed outputs in their lists) or the jvp."""
        names = _packed(self.spec, names) if packed else names
        return f"return {_tuple(names)}" if self.spec.tuple_output else f"return {names[0]}"

    # --- backward ------------------------------------------------------------------
    def backward(self, c: _Code) -> None:
        spec = self.spec
        saved: list[str] = [self.args[s] for s in spec.mask_slots]
        if "inputs" in spec.save:
            saved += [self.args[s] for s in spec.nonlinear_slots]
        if "intermediates" in spec.save:
            saved += _names("d", range(sum(1 for o in spec.outputs for t in o.terms if t.op != "linear")))
        saved_outputs = [self.outs[k] for k in spec.tensor_outputs] if "outputs" in spec.save else []
        if saved or saved_outputs:
            c.add(_unpack(saved + saved_outputs, f"ctx.{spec.saved_read}"))
        for o in saved_outputs:  # unpacked (version checks) and sanity-checked, as generic does
            c.add(f"if tuple({o}.shape) != {self.shape}:")
            c.add(f"{_INDENT}raise AssertionError(f\"saved output has shape {{tuple({o}.shape)}}, "
                  f"expected {{{self.shape}}}\")")
        if spec.ctx_state:
            c.add("c = ctx.term_coeffs")
        if spec.needs_input_grad != "ignore":
            c.add(f"needs = {self.needs_source}")
        if spec.needs_input_grad == "saved":
            c.add("if needs != ctx.needs_input_grad_at_forward:")
            c.add(f"{_INDENT}raise AssertionError(f\"needs_input_grad changed between forward "
                  "{ctx.needs_input_grad_at_forward} and backward {needs}\")")
        # Per slot: "none" (no gradient yet), "some" (one for sure), "maybe" (only decided at
        # run time: with materialize_grads=False an output's gradient may be None)
        state = {s: "none" for s in spec.tensor_slots}
        runtime = not spec.materialize_grads
        if runtime:
            touched = sorted({s for k in range(len(spec.outputs)) for s, _ in self._contributions(k)})
            for s in touched:
                c.add(f"gx{s} = None")
        for k, out in enumerate(spec.outputs):
            contributions = self._contributions(k)
            if not contributions:
                continue
            before = dict(state)
            if runtime:
                c.add(f"if g{k} is not None:")
                c.depth += 1
            for s, term in contributions:
                self._add(c, state, s, term)
            if runtime:
                c.depth -= 1
                for s in state:
                    if state[s] != before[s]:
                        state[s] = "maybe" if before[s] in ("none", "maybe") else before[s]
        self._grads_returned(c, state)

    def _contributions(self, k: int) -> list[tuple[int, str]]:
        """(slot, source of the gradient term) that output k adds, in generic._backward's order."""
        out, g = self.spec.outputs[k], f"g{k}"
        if not out.differentiable:
            return []
        if out.kind == "compute":
            if out.mask >= 0:
                g = f"{g} * {self.mask(out)}"
            terms = []
            for i, t in enumerate(out.terms):
                coeff = f"c[{k}][{i}]" if self.spec.ctx_state else literal(t.coeff)
                if t.op == "linear":
                    terms.append((t.slot, f"{g} * {coeff}"))
                else:
                    deriv = (_derivative(t.op, self.args[t.slot]) if "inputs" in self.spec.save
                             else f"d{self.deriv_index[k, i]}")
                    if self.complex:  # grad_input = grad_output * conj(f'(z)), torch's convention
                        deriv = f"{deriv}.conj()"
                    terms.append((t.slot, f"{g} * {coeff} * {deriv}"))
            return terms
        if out.kind in ("input", "view"):
            return [(out.slot, g)]
        return [(out.slot, f"{g} * {literal(out.coeff)}")]  # dirty

    @staticmethod
    def _add(c: _Code, state: dict[int, str], s: int, term: str) -> None:
        if state[s] == "none":
            c.add(f"gx{s} = {term}")
        elif state[s] == "some":
            c.add(f"gx{s} = gx{s} + {term}")
        elif term.isidentifier():  # the first term of this slot only if no earlier one ran
            c.add(f"gx{s} = {term} if gx{s} is None else gx{s} + {term}")
        else:
            c.add(f"t = {term}")
            c.add(f"gx{s} = t if gx{s} is None else gx{s} + t")
        state[s] = "some"

    def _grads_returned(self, c: _Code, state: dict[int, str]) -> None:
        spec = self.spec
        grads: list[str] = []
        for slot, arg in enumerate(spec.args):
            if not arg.is_tensor_input or slot in spec.mask_slots:
                grads.append("None")  # a non-tensor, a list, or an int64 / bool mask: no gradient
                continue
            if state[slot] == "none":
                grad = self.zeros() if spec.unused_grad == "zeros" else "None"
            elif state[slot] == "maybe" and spec.unused_grad == "zeros":
                grad = f"(gx{slot} if gx{slot} is not None else {self.zeros()})"
            else:
                grad = f"gx{slot}"
            if spec.needs_input_grad != "ignore":
                grad = f"{grad} if needs[{slot}] else None"
            grads.append(grad)
        # the deliberate error cases (generic._break)
        if spec.error == "grad_count":
            c.add("# deliberately one gradient too few (error case grad_count)")
            grads = grads[:-1]
        elif spec.error == "grad_shape":
            slot = spec.float_slots[0]
            c.add(f"# deliberately a gradient of the wrong shape for input {slot} (error case grad_shape)")
            grads[slot] = self.zeros(literal(tuple(s + 1 if s != 1 else s for s in self.shape_tuple)))
        elif spec.error == "grad_for_nontensor":
            slot = next(i for i, a in enumerate(spec.args) if a.ref is None)
            c.add(f"# deliberately a gradient for the non-tensor input {slot} (error case grad_for_nontensor)")
            grads[slot] = self.zeros()
        grads = [grads[s] for s in self.returned_slots if s < len(grads)]
        c.add(f"return {_tuple(grads)}" if grads else "return ()")

    # --- jvp -----------------------------------------------------------------------
    def jvp(self, c: _Code) -> None:
        spec = self.spec
        tangents = _names("t", range(len(spec.args)))
        if spec.mask_slots + spec.nonlinear_slots:
            c.add(_unpack([self.args[s] for s in spec.mask_slots + spec.nonlinear_slots], "ctx.saved_tensors"))
        results = _names("r", range(len(spec.outputs)))
        for k, out in enumerate(spec.outputs):
            r = results[k]
            if not out.differentiable:  # (a listed output's tangent too: torch tracks none)
                c.add(f"{r} = None")
            elif out.kind == "compute":
                c.add(f"{r} = {self.zeros()}")
                for t in out.terms:
                    if spec.args[t.slot].ref is None:
                        continue  # a non-tensor argument has no tangent
                    tx = tangents[t.slot]
                    change = tx if t.op == "linear" else f"{_derivative(t.op, self.args[t.slot])} * {tx}"
                    c.add(f"if {tx} is not None:")
                    c.add(f"{_INDENT}{r} = {r} + {literal(t.coeff)} * ({change})" if t.op != "linear"
                          else f"{_INDENT}{r} = {r} + {literal(t.coeff)} * {tx}")
                if out.mask >= 0:
                    c.add(f"{r} = {r} * {self.mask(out)}")
            elif out.kind in ("input", "view"):  # torch requires a view here
                tx = tangents[out.slot]
                c.add(f"{r} = None if {tx} is None else {tx}.view_as({tx})")
            else:  # dirty: the tangent is updated in place, like the primal
                tx = tangents[out.slot]
                c.add(f"{r} = None if {tx} is None else {tx}.mul_({literal(out.coeff)})")
        c.add(self.returned(results, packed=False))

    # --- the whole class -----------------------------------------------------------
    def preamble(self) -> _Code:
        """What the source has before the class (or op): the inner Function's source, and the list a
        forward with a side effect appends to."""
        c = _Code()
        if self.inner is not None:
            c.lines += self.inner.source().splitlines() + ["", ""]
        if self.spec.untraceable == "side_effect":
            c.add("forward_calls = []  # what each forward appends to: a side effect at module level")
            c.add("")
            c.add("")
        return c

    def source(self) -> str:
        spec = self.spec
        c = self.preamble()
        c.add(f"class {self.name}(torch.autograd.Function):")
        c.depth += 1
        if spec.style == "setup_context" and spec.vmap:
            c.add("generate_vmap_rule = True")
            c.add("")
        if spec.clear_saved_tensors_on_access:
            c.add("clear_saved_tensors_on_access = True  # the first ctx.saved_tensors drops ctx's references")
            c.add("")
        c.add("@staticmethod")
        if spec.style == "old":
            c.add(f"def forward({', '.join(['ctx', *self.args])}):")
            c.depth += 1
            self.unlisted(c)
            self.untraceable(c)
            self.outputs(c)
            self.setup(c)
            c.add(self.returned(self.outs))
            c.depth -= 1
        else:
            defaults = spec.parameter_defaults()  # (spec.keyword_default)
            parameters = [f"{a}={literal(defaults[i])}" if i in defaults else a for i, a in enumerate(self.args)]
            c.add(f"def forward({', '.join(parameters)}):")
            c.depth += 1
            self.unlisted(c)
            self.untraceable(c)
            self.outputs(c)
            c.add(self.returned(self.outs))
            c.depth -= 1
            c.add("")
            c.add("@staticmethod")
            c.add("def setup_context(ctx, inputs, output):")
            c.depth += 1
            if self.args:
                c.add(_unpack(self.listed_args(), "inputs"))
            c.add(_assigned(spec, self.outs, "output"))
            self.setup(c)
            c.depth -= 1
        c.add("")
        c.add("@staticmethod")
        if spec.once_differentiable:
            c.add("@torch.autograd.function.once_differentiable")
        c.add(f"def {spec.backward_method}({', '.join(['ctx', *_names('g', range(len(spec.outputs)))])}):")
        c.depth += 1
        self.backward(c)
        c.depth -= 1
        if spec.jvp:
            c.add("")
            c.add("@staticmethod")
            c.add(f"def jvp({', '.join(['ctx', *_names('t', range(len(spec.args)))])}):")
            c.depth += 1
            self.jvp(c)
            c.depth -= 1
        return c.text()


class _OpWriter(_Writer):
    """A custom_op Function (FunctionSpec.api) in the plain style, as harness/custom_op.py makes
    it generically: the op `F<n>_op` of the tensor arguments (the constant ones are literals in
    it) returning the computed outputs, its fake (the same ops, no untraceable code),
    setup_context and backward registered with register_autograd, and the class `F<n>` whose
    `apply` takes the Function's arguments and returns its outputs. torch's ctx has one
    needs_input_grad per op argument (and in setup_context one more, for torch/_library/
    autograd.py's metadata): the Function's are read from them by position."""

    def __init__(self, spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device, op_name: str) -> None:
        super().__init__(spec, index, shape, dtype, device)
        self.op_name = op_name
        self.op = f"{self.name}_op"
        position = {s: i for i, s in enumerate(spec.tensor_slots)}
        self.needs_source = _tuple([f"ctx.needs_input_grad[{position[s]}]" if s in position else "False"
                                    for s in range(len(spec.args))])
        self.returned_slots = spec.tensor_slots
        self.tensor_args = [self.args[s] for s in spec.tensor_slots]
        self.computed = [self.outs[k] for k, o in enumerate(spec.outputs) if o.kind == "compute"]

    def _constants(self, c: _Code) -> None:
        for a, arg in enumerate(self.spec.args):
            if arg.ref is None:
                c.add(f"{self.args[a]} = {literal(arg.const)}")

    def _op_body(self, c: _Code, *, fake: bool) -> None:
        self._constants(c)
        inner = self.inner
        if fake:  # the ops only: fake tensors have no values to print or branch on
            self.inner = None
        else:
            self.untraceable(c)
        self.outputs(c)
        self.inner = inner
        c.add(f"return {self.computed[0]}" if len(self.computed) == 1 else f"return {_tuple(self.computed)}")

    def source(self) -> str:
        spec = self.spec
        c = self.preamble()
        params = ", ".join(f"{a}: torch.Tensor" for a in self.tensor_args)
        returns = ("torch.Tensor" if len(self.computed) == 1
                   else f"tuple[{', '.join(['torch.Tensor'] * len(self.computed))}]")
        c.add(f"@torch.library.custom_op({self.op_name!r}, mutates_args=())")
        c.add(f"def {self.op}({params}) -> {returns}:")
        c.depth += 1
        self._op_body(c, fake=False)
        c.depth -= 1
        c.add("")
        c.add("")
        c.add(f"@{self.op}.register_fake")
        c.add(f"def {self.op}_fake({', '.join(self.tensor_args)}):")
        c.depth += 1
        self._op_body(c, fake=True)
        c.depth -= 1
        c.add("")
        c.add("")
        c.add(f"def {self.op}_setup_context(ctx, inputs, output):")
        c.depth += 1
        c.add(_unpack(self.tensor_args, "inputs"))
        c.add(_unpack(self.computed, "output") if len(self.computed) > 1 else f"{self.computed[0]} = output")
        self.setup(c)
        c.depth -= 1
        c.add("")
        c.add("")
        if spec.once_differentiable:
            c.add("@torch.autograd.function.once_differentiable")
        grads = [f"g{k}" for k, o in enumerate(spec.outputs) if o.kind == "compute"]
        c.add(f"def {self.op}_backward({', '.join(['ctx', *grads])}):")
        c.depth += 1
        self.backward(c)
        c.depth -= 1
        c.add("")
        c.add("")
        c.add(f"{self.op}.register_autograd({self.op}_backward, setup_context={self.op}_setup_context)")
        c.add("")
        c.add("")
        c.add(f"class {self.name}:")
        c.depth += 1
        c.add('"""The op as the graph applies a Function: its arguments in, its outputs out."""')
        c.add("")
        c.add(f"op = {self.op}")
        c.add("")
        c.add("@staticmethod")
        c.add(f"def apply({', '.join(self.args)}):")
        c.depth += 1
        made = f"{self.op}({', '.join(self.tensor_args)})"
        c.add(_unpack(self.computed, made) if len(self.computed) > 1 else f"{self.computed[0]} = {made}")
        for k, out in enumerate(spec.outputs):
            if out.kind == "const":
                c.add(f"{self.outs[k]} = {literal(out.value)}")
        c.add(self.returned(self.outs))
        return c.text()


def function_source(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                    device: torch.device | str) -> str:
    """The source text of the plain-style class `F<index>` for one Function spec (for a custom_op
    Function, its op's registrations and the class that applies it)."""
    if spec.api == "custom_op":
        return _OpWriter(spec, index, tuple(shape), dtype, torch.device(device),
                         custom_op_name(spec, index, tuple(shape), dtype, torch.device(device))).source()
    return _Writer(spec, index, tuple(shape), dtype, torch.device(device)).source()


def compile_function(source: str, name: str) -> type[torch.autograd.Function]:
    """exec() `source` in a namespace that holds only `torch` and what the source itself
    defines at module level; return its class `name`.

    The source is registered with linecache, so tracebacks (and Dynamo's graph-break
    messages) show its lines, as long as it is one of the SOURCES_KEPT most recent."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<plain {name} {digest}>"
    _register(filename, source)
    namespace: dict[str, Any] = {"torch": torch}
    exec(_compiled(source, filename), namespace)
    cls = namespace.pop(name)  # the namespace keeps torch and the source's own module-level names
    cls.__module__ = __name__
    return cls




# --- the whole graph's forward, straight-line ------------------------------------------


def value_name(ref: str) -> str:
    """The Python name of a value in the straight-line forward: x3, x3_1 (view 1 of x3), f2_0."""
    return ref.replace("[", "_").replace("]", "").replace(".", "_")


@dataclass(frozen=True)
class GraphForwardSource:
    """`def graph_forward(<leaf values>)`: one line per Function application (`F<n>.apply(...)`,
    the classes are globals of its namespace), returning every Function output, constants
    included, in spec order. `apply_lines` maps each application's line number to its Function,
    which is how a compiled graph's nodes are traced back to Functions (their stack traces name
    the line; harness.paths.tracing)."""

    text: str
    filename: str
    apply_lines: dict[int, int]


def graph_forward_source(spec: GraphSpec) -> GraphForwardSource:
    leaves = [value_name(r) for r in spec.value_refs() if r.startswith("x")]
    c = _Code()
    c.add(f"def graph_forward({', '.join(leaves)}):")
    c.depth += 1
    apply_lines: dict[int, int] = {}
    returned: list[str] = []
    for n, fn in enumerate(spec.functions):
        args = []
        for a, arg in enumerate(fn.args):
            if arg.ref is None:
                args.append(literal(arg.const))
            elif arg.listed:  # in a list, as harness.run._argument passes it
                args.append(f"[{value_name(arg.ref)}]")
            elif not arg.clone:
                args.append(value_name(arg.ref))
            else:  # a fresh clone (and a view of it), as harness.run._argument makes it
                name = f"c{n}_{a}"
                c.add(f"{name} = {value_name(arg.ref)}.clone()")
                if arg.view:
                    c.add(f"{name}_view = {name}.view_as({name})")
                    name += "_view"
                args.append(name)
        outs = [f"f{n}_{k}" for k in range(len(fn.outputs))]
        positional, keywords = fn.keyword_split(args)  # the last keyword_args by name: `a2=x0`
        call = f"F{n}.apply({', '.join([*positional, *(f'{k}={v}' for k, v in keywords.items())])})"
        if fn.grad_mode == "no_grad":  # as harness.run.forward applies it
            c.add("with torch.no_grad():")
            c.depth += 1
        apply_lines[len(c.lines) + 1] = n
        c.add(_assigned(fn, outs, call))
        if fn.grad_mode == "no_grad":
            c.depth -= 1
        returned += outs
    c.add(f"return {_tuple(returned)}" if returned else "return ()")
    text = c.text()
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    return GraphForwardSource(text, f"{GRAPH_FORWARD_FILE}{digest}>", apply_lines)


def graph_forward(source: GraphForwardSource, functions: Any) -> Any:
    """The straight-line forward as a function, its F<n> bound to `functions[n]` (anything with
    an `apply`). The namespace gets no `__name__`: torch.compile traces a function of such a
    namespace like a user's script (with `__name__` set, Dynamo took the module for a library's)."""
    _register(source.filename, source.text)
    namespace: dict[str, Any] = {"torch": torch, **{f"F{n}": f for n, f in enumerate(functions)}}
    exec(_compiled(source.text, source.filename), namespace)
    function = namespace["graph_forward"]
    function.__module__ = __name__  # torch.jit.trace names the function by its module
    return function


def _register(filename: str, source: str) -> None:
    """Put `source` in linecache under `filename`, dropping the least recently registered
    beyond SOURCES_KEPT."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    _registered[filename] = None
    _registered.move_to_end(filename)
    while len(_registered) > SOURCES_KEPT:
        linecache.cache.pop(_registered.popitem(last=False)[0], None)


@functools.lru_cache(maxsize=SOURCES_KEPT)
def _compiled(source: str, filename: str) -> CodeType:
    """compile(), once per source: a spec's classes are built again for each oracle and run
    (~0.5 ms a compile). Each exec still makes a new class."""
    return compile(source, filename, "exec")


def in_code_style(spec: GraphSpec, code: str) -> GraphSpec:
    """`spec` with every Function written in one code style, but those this module cannot write in
    the plain style (a hand-written vmap rule, a custom_op's register_vmap), which stay generic."""
    def styled(fn):
        if code == "plain" and (fn.vmap_rule == "user" or fn.api == "custom_op" and fn.vmap):
            return fn
        return dataclasses.replace(fn, code=code)
    return dataclasses.replace(spec, functions=tuple(styled(fn) for fn in spec.functions))


__all__ = ["GraphForwardSource", "compile_function", "function_source", "graph_forward", "graph_forward_source",
           "in_code_style", "literal", "value_name"]
