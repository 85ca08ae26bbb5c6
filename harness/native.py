"""Facade over the harness's native ``torch.autograd.Function.apply``.

The C++ sources in ``native/`` re-implement torch's ``Function.apply`` (after
``THPFunction_apply`` in ``torch/csrc/autograd/python_function.cpp``) once,
templated on how tensor inputs are held while the Function runs:

``owned``
    an owned ``variable_list`` (one TensorImpl refcount bump per tensor input),
    the design before PyTorch's July 2026 change;
``borrowed``
    ``c10::SmallVector<const at::Tensor*, 24>`` handles passed as ``ArrayRef``,
    with an owned list built only where ownership is required (the user ``jvp``
    callback; on torch < 2.14 also ``_wrap_outputs``, which has no ``ArrayRef``
    overload there).

The extension is compiled on first use with ``torch.utils.cpp_extension.load``
into a cache directory keyed by torch version, Python ABI and a hash of the
sources, so one checkout serves several torch versions::

    ${HARNESS_NATIVE_CACHE:-~/.cache/autograd-function-harness/native}/<torch>-<python>-<hash>/

Importing this module is cheap: nothing is built or loaded until first use.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import inspect
import os
import shutil
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

__all__ = [
    "HOLDERS",
    "NativeBuildError",
    "NativeInfo",
    "Unsupported",
    "apply",
    "build",
    "cache_dir",
    "ctx_attributes_missing",
    "info",
    "load_variant",
    "node_use_count",
    "weak_use_count",
]

HOLDERS: tuple[str, ...] = ("owned", "borrowed")

_NATIVE_DIR = Path(__file__).resolve().parent.parent / "native"
_SOURCES = ("bindings.cpp", "apply.cpp", "node.cpp")
_MODULE_NAME = "_harness_native"
_EXTRA_CFLAGS = ("-O2",)
_CACHE_ENV = "HARNESS_NATIVE_CACHE"
_BUILT_MARKER = "BUILT"


class Unsupported(Exception):
    """The native path cannot run this faithfully; ``reason`` is short and stable.

    Reasons: ``"tracing"`` (``torch.jit.trace``), ``"functorch transform"``
    (``torch.func``/vmap), ``"compiled autograd"`` (backward under compiled
    autograd), ``"boxed_grads_call"``, ``"clear_saved_tensors_on_access"``,
    ``"set_output_grad_dtype"``; and for a member of torch's ctx that the native
    ctx does not offer (``ctx_attributes_missing``), one sentence starting
    ``"ctx.<name> is not offered by the native ctx"``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NativeBuildError(RuntimeError):
    """The native extension cannot be built here (missing compiler, headers, ...)."""


@dataclass(frozen=True)
class NativeInfo:
    """What the loaded extension was built against."""

    torch_version: str
    path: Path
    #: borrowed hands ``ArrayRef<const Variable*>`` to ``_wrap_outputs`` (torch >= 2.14)
    borrowed_uses_arrayref: bool


_lock = threading.Lock()
_ext: ModuleType | None = None
_apply_fns: dict[str, Callable[[type, tuple[Any, ...]], Any]] = {}


# --------------------------------------------------------------------------- build


def _source_files() -> list[Path]:
    if not _NATIVE_DIR.is_dir():
        return []  # _check_toolchain reports it when a build is attempted
    return sorted(p for p in _NATIVE_DIR.iterdir() if p.suffix in {".cpp", ".h"})


def _source_hash(defines: tuple[str, ...] = ()) -> str:
    digest = hashlib.sha256()
    digest.update(" ".join(_EXTRA_CFLAGS + defines).encode())
    for path in _source_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_dir(variant: str = "", defines: tuple[str, ...] = ()) -> Path:
    """The build directory for this torch version, Python and source tree (and, for a
    test-only build variant, the variant's own folder and its defines)."""
    base = os.environ.get(_CACHE_ENV)
    root = Path(base) if base else Path.home() / ".cache" / "autograd-function-harness" / "native"
    if variant:
        root = root / "variants" / variant
    return root / f"{torch.__version__}-{sys.implementation.cache_tag}-{_source_hash(defines)}"


def _library_path(directory: Path, name: str = _MODULE_NAME) -> Path:
    return directory / f"{name}.so"


def _check_toolchain() -> None:
    """Raise NativeBuildError naming what is missing, and the fix."""
    if not (_NATIVE_DIR / _SOURCES[0]).is_file():
        raise NativeBuildError(
            f"the native sources are missing from {_NATIVE_DIR}; "
            "use harness from a source checkout (pip install -e .)"
        )
    from torch.utils import cpp_extension

    compiler = cpp_extension.get_cxx_compiler()
    if shutil.which(compiler) is None:
        raise NativeBuildError(
            f"no C++ compiler found (looked for {compiler!r}); "
            "install one (e.g. apt-get install g++) or point CXX at it"
        )
    if not cpp_extension.is_ninja_available():
        raise NativeBuildError("ninja is not installed; install it with `pip install ninja`")
    python_h = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not python_h.is_file():
        raise NativeBuildError(
            f"the Python headers are missing ({python_h}); install the python3-dev package "
            "for this interpreter"
        )
    header = Path(torch.__file__).parent / "include/torch/csrc/autograd/custom_function.h"
    if not header.is_file():
        raise NativeBuildError(
            f"torch {torch.__version__} ships no C++ headers ({header} is missing); "
            "install a torch wheel that includes them"
        )
    if not _node_is_intrusive(header.parent / "node.h"):
        raise NativeBuildError(
            f"torch {torch.__version__}'s autograd Node is held by std::shared_ptr, and the native apply "
            "(native/) is written for torch >= 2.13, where it is a c10::intrusive_ptr_target; "
            "owned and borrowed cannot run here: install torch>=2.13"
        )


def _node_is_intrusive(node_h: Path) -> bool:
    """torch >= 2.13 declares `struct TORCH_API Node : c10::intrusive_ptr_target` in autograd/node.h;
    earlier releases derive it from std::enable_shared_from_this in autograd/function.h."""
    return node_h.is_file() and "Node : c10::intrusive_ptr_target" in node_h.read_text(errors="replace")


def _version_define() -> str:
    # Spelled as character codes so no shell or preprocessor can mangle it.
    codes = ",".join(str(ord(c)) for c in torch.__version__)
    return f"-DHARNESS_TORCH_VERSION_CHARS={codes}"


def _compile(directory: Path, verbose: bool, name: str = _MODULE_NAME,
             defines: tuple[str, ...] = ()) -> ModuleType:
    _check_toolchain()
    from torch.utils import cpp_extension

    directory.mkdir(parents=True, exist_ok=True)
    # torch's own build lock (a `lock` file, polled) outlives a builder that was killed, and
    # every later build would wait on it for ever. Builders here hold an flock instead, which
    # the kernel releases with its process: holding it, any `lock` file left is stale.
    with open(directory / ".harness-build-lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        (directory / "lock").unlink(missing_ok=True)
        library = _library_path(directory, name)
        if (directory / _BUILT_MARKER).is_file() and library.is_file():
            return _import(library, name)  # another process built it while we waited
        try:
            module = cpp_extension.load(
                name=name,
                sources=[str(_NATIVE_DIR / source) for source in _SOURCES],
                extra_cflags=[*_EXTRA_CFLAGS, _version_define(), *defines],
                build_directory=str(directory),
                verbose=verbose,
            )
        except RuntimeError as e:  # cpp_extension's "Error building extension": the compiler's output
            raise NativeBuildError(f"the native extension did not compile against torch {torch.__version__}: "
                                   f"{_first_compiler_error(str(e))}; the full log is in {directory}") from e
        (directory / _BUILT_MARKER).write_text(torch.__version__ + "\n")
    return module


def _first_compiler_error(output: str) -> str:
    """The first `error:` line of a compiler's output (the one to read first), else its last line."""
    lines = output.strip().splitlines() or ["no output"]
    return next((line.strip() for line in lines if ": error: " in line or ": fatal error: " in line),
                lines[-1].strip())


def _import(path: Path, name: str = _MODULE_NAME) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the native extension from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(verbose: bool, variant: str = "", defines: tuple[str, ...] = ()) -> ModuleType:
    directory = cache_dir(variant, defines)
    name = f"{_MODULE_NAME}_{variant}" if variant else _MODULE_NAME
    library = _library_path(directory, name)
    if (directory / _BUILT_MARKER).is_file() and library.is_file():
        module = _import(library, name)
    else:
        module = _compile(directory, verbose, name, defines)
    _check_built_for_this_torch(module, library)
    module._register_unsupported_type(Unsupported)
    return module


def _check_built_for_this_torch(module: ModuleType, library: Path) -> None:
    if module.TORCH_VERSION != torch.__version__:
        raise ImportError(
            f"the native extension at {library} was built for torch {module.TORCH_VERSION} "
            f"but torch {torch.__version__} is imported; delete {library.parent} and rebuild "
            "with `python -m harness build-native`"
        )


def _extension(verbose: bool = False) -> ModuleType:
    global _ext
    if _ext is None:
        with _lock:
            if _ext is None:
                module = _load(verbose)
                _apply_fns.update(
                    owned=module.apply_owned,
                    borrowed=module.apply_borrowed,
                )
                _ext = module
    return _ext


def load_variant(variant: str, defines: tuple[str, ...], verbose: bool = False) -> ModuleType:
    """A test-only build variant of the extension: the same sources compiled with extra
    `defines` into its own cache folder and module name, never loaded by a normal run
    (the seeded faults of harness/selfeval use it). Its C++ namespace is renamed, so it
    can be loaded beside the normal extension in one process."""
    defines = (*defines, f"-Dharness_native=harness_native_{variant}")
    with _lock:
        return _load(verbose, variant, defines)


def build(verbose: bool = False) -> Path:
    """Build (if needed) and load the extension; return the shared library's path."""
    _extension(verbose)
    return _library_path(cache_dir())


def info() -> NativeInfo:
    """Build/load the extension and describe it."""
    ext = _extension()
    return NativeInfo(
        torch_version=ext.TORCH_VERSION,
        path=_library_path(cache_dir()),
        borrowed_uses_arrayref=bool(ext.BORROWED_USES_ARRAYREF),
    )


# --------------------------------------------------------------------------- apply

_BASE_SETUP_CONTEXT = torch.autograd.function._SingleLevelFunction.setup_context


def _bind_default_args(function_cls: type, args: tuple[Any, ...],
                       keywords: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """Like Function.apply: with setup_context, keyword arguments are bound to their
    positions and forward's defaults become inputs (bind_default_args); without it, keyword
    arguments are resolved to positions as torch's C++ apply resolves them (no defaults)."""
    forward = function_cls.forward  # type: ignore[attr-defined]
    if function_cls.setup_context is _BASE_SETUP_CONTEXT:  # type: ignore[attr-defined]
        return _resolve_keywords(forward, args, keywords, ctx=True) if keywords else args
    if not keywords and getattr(forward, "__defaults__", None) is None and not getattr(
        forward, "__kwdefaults__", None
    ):
        return args
    bound = inspect.signature(forward).bind(*args, **(keywords or {}))
    bound.apply_defaults()
    # what is left (keyword-only parameters, **kwargs) Function.apply hands to the C++ apply
    # as keywords, which places keywords only at positional parameters: it raises
    return _resolve_keywords(forward, bound.args, bound.kwargs, ctx=False) if bound.kwargs else bound.args


def _resolve_keywords(forward: Any, args: tuple[Any, ...], keywords: dict[str, Any], ctx: bool) -> tuple[Any, ...]:
    """Keyword arguments in their positions, as torch's C++ apply places them: by the names of
    forward's positional parameters (its code's co_varnames, after ctx where it takes one), no
    default filled in (torch/_dynamo/variables/misc.py, _resolve_kwargs, mirrors the same rule)."""
    code = forward.__code__
    names = list(code.co_varnames[int(ctx):code.co_argcount])
    for name in keywords:
        if name not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        if names.index(name) < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
    resolved = list(args)
    for i in range(len(args), max(names.index(name) for name in keywords) + 1):
        if names[i] not in keywords:
            raise TypeError(f"forward() missing required argument: '{names[i]}' (position {i})")
        resolved.append(keywords[names[i]])
    return tuple(resolved)


def apply(function_cls: type, *args: Any, holder: str, **keywords: Any) -> Any:
    """Run ``function_cls.apply(*args, **keywords)`` through the native path with ``holder``.

    Returns what ``function_cls.apply(*args, **keywords)`` returns. Raises Unsupported for
    what the native path cannot run faithfully.
    """
    fn = _apply_fns.get(holder)
    if fn is None:
        if holder not in HOLDERS:
            raise ValueError(f"unknown holder {holder!r}; expected one of: {', '.join(HOLDERS)}")
        _extension()
        fn = _apply_fns[holder]
    return fn(function_cls, _bind_default_args(function_cls, args, keywords))


# --------------------------------------------------------------------------- ctx


def _torch_ctx_names() -> set[str]:
    """The members of the ctx torch hands a Function (an instance of the Function's
    ``_backward_cls``, a BackwardCFunction), dunder names aside. FunctionMeta sets two of them
    on each Function's own backward class."""
    names = set(dir(torch.autograd.function.BackwardCFunction)) | {"_forward_cls", "_autograd_function_id"}
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def ctx_attributes_missing() -> dict[str, str]:
    """The members of torch's ctx that the native ctx does not offer, each with the sentence
    the native paths report when a Function uses one (they raise Unsupported with it)."""
    ext = _extension()
    offered = set(dir(ext.NativeCtx)) - set(ext.CTX_NOT_OFFERED)
    missing = dict(ext.CTX_NOT_OFFERED)
    for name in sorted(_torch_ctx_names() - offered - set(missing)):
        missing[name] = (f"ctx.{name} is not offered by the native ctx: it is a member of torch's ctx "
                         "that the native ctx does not know")
    return dict(sorted(missing.items()))


# --------------------------------------------------------------------------- probes


def weak_use_count(tensor: torch.Tensor) -> int:
    """The TensorImpl weak count, as ``c10::intrusive_ptr`` defines it.

    That is the number of ``weak_intrusive_ptr``s (e.g. ``torch._C._WeakTensorRef``)
    plus one while any strong reference exists: a fresh tensor reads 1, and 0
    never shows from Python (a live tensor is strongly held). The probe adds
    no reference of its own.
    """
    return int(_extension().weak_use_count(tensor))


def node_use_count(tensor: torch.Tensor) -> int:
    """Strong refcount of ``tensor.grad_fn``'s autograd Node; 0 if it has none.

    Counts every owner: each output tensor whose grad_fn it is, edges from later
    nodes, and the node's Python ``grad_fn`` object (made with the node, as eager's
    ctx is; see docs/lifetimes.md). The probe adds none.
    """
    return int(_extension().node_use_count(tensor))
