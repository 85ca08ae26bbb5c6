"""Build, cache, version record, error messages and the stub of harness.native."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import harness.native as native_module

REPO = Path(__file__).resolve().parents[2]


def test_info_records_this_torch(native):
    info = native.info()
    assert info.torch_version == torch.__version__
    assert info.path.is_file()
    assert info.path.parent == native.cache_dir()


def test_arrayref_detection_agrees_with_the_installed_header(native):
    header = Path(torch.__file__).parent / "include/torch/csrc/autograd/custom_function.h"
    has_overload = "at::ArrayRef<const Variable*> input_vars" in header.read_text()
    assert native.info().borrowed_uses_arrayref == has_overload


def test_cache_dir_is_keyed_by_torch_python_and_sources(native, monkeypatch, tmp_path):
    name = native.cache_dir().name
    assert name.startswith(f"{torch.__version__}-{sys.implementation.cache_tag}-")
    assert len(name.rsplit("-", 1)[1]) == 16
    monkeypatch.setenv("HARNESS_NATIVE_CACHE", str(tmp_path))
    assert native.cache_dir().parent == tmp_path
    assert native.cache_dir().name == name


def test_import_does_not_build_or_load():
    code = "import sys, harness.native; print('_harness_native' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert result.stdout.strip() == "False"


def test_missing_compiler_is_one_clear_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(native_module.NativeBuildError) as info:
        native_module._compile(tmp_path / "build", verbose=False)
    message = str(info.value)
    assert "no C++ compiler found (looked for '/nonexistent/c++')" in message
    assert "\n" not in message
    assert not (tmp_path / "build").exists()


def test_missing_ninja_names_the_fix(monkeypatch):
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "is_ninja_available", lambda: False)
    with pytest.raises(native_module.NativeBuildError, match="pip install ninja"):
        native_module._check_toolchain()


def test_a_torch_whose_autograd_node_is_a_shared_ptr_is_refused_in_one_sentence(monkeypatch, tmp_path):
    installed = Path(torch.__file__).parent / "include/torch/csrc/autograd/node.h"
    assert native_module._node_is_intrusive(installed)  # torch >= 2.13, which the tests run on
    older = tmp_path / "node.h"  # torch 2.11 declares it so (in function.h; node.h does not exist)
    older.write_text("struct TORCH_API Node : std::enable_shared_from_this<Node> {")
    assert not native_module._node_is_intrusive(older)
    assert not native_module._node_is_intrusive(tmp_path / "missing.h")
    monkeypatch.setattr(native_module, "_node_is_intrusive", lambda path: False)
    with pytest.raises(native_module.NativeBuildError, match=r"std::shared_ptr.*install torch>=2.13") as info:
        native_module._check_toolchain()
    assert "\n" not in str(info.value)


def test_a_compile_error_is_a_build_error_naming_the_first_compiler_error(tmp_path):
    """A real compiler run that fails (a forced include that does not exist): campaigns on paths
    without the extension go on (the lifetime probes catch NativeBuildError), so it must be one."""
    with pytest.raises(native_module.NativeBuildError) as info:
        native_module._compile(tmp_path / "build", False, "_harness_native_broken",
                               ("-include", "/nonexistent/harness-test.h"))
    message = str(info.value)
    assert message.startswith(f"the native extension did not compile against torch {torch.__version__}: ")
    assert "fatal error: /nonexistent/harness-test.h" in message and "\n" not in message


def test_version_mismatch_is_refused():
    fake = types.SimpleNamespace(TORCH_VERSION="1.0.0")
    with pytest.raises(ImportError, match="was built for torch 1.0.0 but torch .* is imported"):
        native_module._check_built_for_this_torch(fake, Path("/x/_harness_native.so"))


def _stub_tree() -> ast.Module:
    return ast.parse((REPO / "harness" / "native.pyi").read_text())


def test_stub_lists_the_public_api():
    tree = _stub_tree()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    names.discard("__all__")
    assert names == set(native_module.__all__)
    stub_all = next(
        n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__"
    )
    assert ast.literal_eval(stub_all.value) == native_module.__all__


def test_stub_signatures_match():
    for node in _stub_tree().body:
        if not isinstance(node, ast.FunctionDef):
            continue
        real = inspect.signature(getattr(native_module, node.name))
        stub_params = [
            *(a.arg for a in node.args.posonlyargs),
            *(a.arg for a in node.args.args),
            *([node.args.vararg.arg] if node.args.vararg else []),
            *(a.arg for a in node.args.kwonlyargs),
            *([node.args.kwarg.arg] if node.args.kwarg else []),
        ]
        assert stub_params == list(real.parameters), node.name
