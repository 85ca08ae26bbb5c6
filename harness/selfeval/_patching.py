"""Installing a fault: attributes replaced from outside and put back afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISSING = object()


class Patches:
    """Replaced attributes, restored in reverse order by `undo`; `on_undo` adds any other
    clean-up (clearing a fault's module state, say)."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        setattr(owner, name, value)
        self._undo.append(lambda: delattr(owner, name) if old is _MISSING else setattr(owner, name, old))

    def wrap(self, owner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        """owner.name = make(the current owner.name)."""
        self.set(owner, name, make(getattr(owner, name)))

    def set_item(self, mapping: dict, key: Any, value: Any) -> None:
        old = mapping.get(key, _MISSING)
        mapping[key] = value
        self._undo.append(lambda: mapping.pop(key) if old is _MISSING else mapping.__setitem__(key, old))

    def on_undo(self, action: Callable[[], None]) -> None:
        self._undo.append(action)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()
