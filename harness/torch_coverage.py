"""The torch modules that handle custom autograd Functions, whose coverage guides fuzzing.

Minimal for now (harness/fuzz_target.py needs the list); the `coverage` branch extends this module.
"""

from __future__ import annotations

from pathlib import Path

#: paths relative to the torch package of the Python modules that apply, trace, compile or
#: register custom Functions: eager apply and ctx, torch.func's Function support, Dynamo's
#: tracing of Functions (autograd_function_apply) and of their ctx, compiled autograd, and
#: torch.library's autograd registration
FUNCTION_MODULES: tuple[str, ...] = (
    "autograd/function.py",
    "_functorch/autograd_function.py",
    "_dynamo/variables/higher_order_ops.py",
    "_dynamo/variables/misc.py",
    "_dynamo/compiled_autograd.py",
    "_library/autograd.py",
    "_library/custom_ops.py",
)


def function_module_files() -> frozenset[str]:
    """The absolute file names of FUNCTION_MODULES in the installed torch (as code objects name
    them in co_filename); a module this torch does not have is left out."""
    import torch

    root = Path(torch.__file__).parent
    return frozenset(str(root / m) for m in FUNCTION_MODULES if (root / m).exists())


__all__ = ["FUNCTION_MODULES", "function_module_files"]
