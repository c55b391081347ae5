"""One remembered result per tensor object, for the injected code's per-forward reuse (eager calls).

A transformer computes some tensors once per forward and hands the same object to every block (LTX-Video's text
mask, its ``temb``); what each block derives from it alone is the same in every block.  :class:`LastResult` keeps
the last such result with a weak reference to the tensor it came from and that tensor's version counter, so it is
handed out again only for the same object, unchanged since, with the same key.  Inference-mode tensors have no
version counter and are never remembered.
"""

from __future__ import annotations

import weakref
from typing import Any, Hashable

import torch


class LastResult:
    """The last ``(tensor, key) -> value`` put, handed out while the same tensor object, unchanged, comes with an
    equal key."""

    __slots__ = ("_entry",)

    def __init__(self):
        self._entry: tuple | None = None  # (weakref to the tensor, (its version, key), value)

    @staticmethod
    def usable(t: torch.Tensor) -> bool:
        """Whether ``t`` can be remembered (it has a version counter)."""
        return not t.is_inference()

    def get(self, t: torch.Tensor, key: Hashable) -> Any | None:
        entry = self._entry
        if entry is not None and entry[0]() is t and entry[1] == (t._version, key):
            return entry[2]
        return None

    def put(self, t: torch.Tensor, key: Hashable, value: Any) -> Any:
        self._entry = (weakref.ref(t), (t._version, key), value)
        return value
