"""Faults in the native paths (owned/borrowed), compiled into a test-only build variant.

The C++ fault sites sit in native/*.cpp between `#ifdef HARNESS_SELFEVAL_FAULTS` and
`#endif`: a normal build never compiles them. The variant is built with that define into
its own cache folder and module (harness.native.load_variant), and installing a fault
points harness.native's apply and probes at it and activates the fault by name there.
"""

from __future__ import annotations

from types import ModuleType

from harness import native
from harness.selfeval._patching import Patches

VARIANT = "selfeval"
DEFINES = ("-DHARNESS_SELFEVAL_FAULTS",)

#: fault name -> what goes wrong, where (the C++ sites test these names)
FAULTS = {
    "native_wide_grad_dropped":
        "borrowed: past the SmallVector's inline room of 24 tensor inputs, the inputs get no "
        "gradient edge (apply.cpp, edges)",
    "native_borrowed_use_after_release":
        "borrowed: the handles point into a copy released once forward has run; _wrap_outputs "
        "then reads emptied slots (apply.cpp)",
    "native_extra_reference":
        "an extra reference to the first tensor input is kept past apply, forever (apply.cpp)",
    "native_saved_released_early":
        "the first saved tensor is released as soon as it is saved, before backward (save_variables)",
    "native_mark_dirty_ignored":
        "ctx.mark_dirty is ignored: no version bump, outputs not rebased (apply.cpp, mark_dirty)",
    "native_non_differentiable_ignored":
        "ctx.mark_non_differentiable is ignored: those outputs get a grad_fn (parse_non_differentiable)",
    "native_materialize_grads_ignored":
        "ctx.set_materialize_grads(False) is ignored: undefined gradients arrive as zeros "
        "(node.cpp apply, and the jvp callback)",
    "native_needs_input_grad_off_by_one":
        "ctx.needs_input_grad entry i holds argument i+1's flag (apply.cpp)",
    "native_listed_output_tracked":
        "a tensor returned inside a one-element list is wrapped as a top-level output: it gets a grad_fn "
        "(apply.cpp, process_outputs; only the OutputSpec.listed axis returns one)",
    "native_listed_argument_counted":
        "a tensor passed inside a one-element list makes the node executable when it requires grad: outputs "
        "get a grad_fn where no tensor input requires grad (apply.cpp, apply_function; only Arg.listed passes one)",
}


def variant() -> ModuleType:
    """The test-only build of the extension (built on first use, then cached)."""
    return native.load_variant(VARIANT, DEFINES)


def install(p: Patches, name: str) -> None:
    module = variant()
    native._extension()  # the normal one loaded first, so the swap below is undone cleanly
    p.set(native, "_ext", module)
    p.set_item(native._apply_fns, "owned", module.apply_owned)
    p.set_item(native._apply_fns, "borrowed", module.apply_borrowed)
    module._set_seeded_fault(name)
    p.on_undo(lambda: module._set_seeded_fault(""))
