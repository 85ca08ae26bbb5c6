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

HOLDERS: tuple[str, ...]

class Unsupported(Exception):
    reason: str
    def __init__(self, reason: str) -> None: ...

class NativeBuildError(RuntimeError): ...

@dataclass(frozen=True)
class NativeInfo:
    torch_version: str
    path: Path
    borrowed_uses_arrayref: bool

def cache_dir(variant: str = "", defines: tuple[str, ...] = ()) -> Path: ...
def load_variant(variant: str, defines: tuple[str, ...], verbose: bool = False) -> ModuleType: ...
def build(verbose: bool = False) -> Path: ...
def info() -> NativeInfo: ...
def ctx_attributes_missing() -> dict[str, str]: ...
def apply(function_cls: type, *args: Any, holder: str, **keywords: Any) -> Any: ...
def weak_use_count(tensor: torch.Tensor) -> int: ...
def node_use_count(tensor: torch.Tensor) -> int: ...
