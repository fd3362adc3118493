"""The host backend: NumPy itself, the reference every other backend is compared with.

With it enabled every call goes through the dispatcher (and is counted) but runs in NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    is_host = True

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "device": "host CPU (NumPy)", "numpy": numpy.__version__}

    def is_native(self, obj: Any) -> bool:
        return issubclass(type(obj), numpy.ndarray)  # (by type: a device array's __class__ says ndarray)

    def from_host(self, array: numpy.ndarray) -> numpy.ndarray:
        return array

    def to_host(self, native: numpy.ndarray) -> numpy.ndarray:
        return native

    def address(self, native: Any) -> int:
        return int(native.__array_interface__["data"][0])

    def may_share_memory(self, a: Any, b: Any) -> bool:
        return numpy.may_share_memory(a, b)

    def shares_memory(self, a: Any, b: Any) -> bool:
        return numpy.shares_memory(a, b)
