"""The one inversion of the layers: how DeviceArray, low down, reaches the core above it.

A device array's NumPy methods, operators and protocols run through the dispatcher, which
imports ``_array`` (it makes and inspects device arrays), so ``_array`` can't import it. Instead
``_array`` calls ``core``, an object typed by ``Core`` whose parts ``npgpu/__init__.py`` (the
composition root, which imports every layer anyway) installs once. Nothing else is reached this
way; docs/ARCHITECTURE.md draws it.

The C operators (npgpu/_speedups.c, configured by _native) read ``record_binary``,
``record_unary`` and ``loops`` from ``vars(core)``: keep those names in step with the C.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Protocol


class Core(Protocol):
    """What DeviceArray asks of the layers above it."""

    #: npgpu's namespace module (``__array_namespace__``)
    namespace: types.ModuleType
    #: the dispatcher's cache of resolved ufunc loops, read by the recorder's short roads
    loops: dict[Any, Any]

    def function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run NumPy function (or ndarray method) ``func`` where it belongs (_dispatch.function)."""

    def ufunc(self, uf: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any], frame: Any = None) -> Any:
        """Run ``getattr(uf, method)(*inputs, **kwargs)`` where it belongs (_dispatch.ufunc)."""

    def fast_call(self, uf: Any, inputs: tuple[Any, ...], fusion: bool, frame: Any) -> Any:
        """The dispatcher's short road for device arrays and scalars; NotImplemented to decline."""

    def getitem(self, array: Any, key: Any, frame: Any) -> Any:
        """``array[key]`` for a basic key of a computed device array, counted at ``frame``; NotImplemented
        to decline (_dispatch.basic_getitem)."""

    def inplace(self, uf: Any, target: Any, other: Any, frame: Any, temporary: bool) -> bool:
        """``target <op>= other`` for device arrays and numbers from user code at ``frame``
        (``temporary``: nothing but the statement holds ``other``); False to decline
        (_dispatch.inplace)."""

    def setitem(self, array: Any, key: Any, value: Any, frame: Any, temporary: bool) -> Any:
        """``array[key] = value`` for a basic key and a device-array or scalar value, counted at ``frame``
        (``temporary``: nothing but the statement holds ``value``); NotImplemented to decline
        (_dispatch.basic_setitem)."""

    def on_host(self, key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A library's NumPy call on device arrays: NumPy runs it on host copies (_dispatch.on_host)."""

    def to_host(self, array: Any, func: Any = None, moved: list[float] | None = None) -> Any:
        """A host copy of a device array (_transfer.to_host)."""

    def materialize(self, array: Any, out: Any = None) -> None:
        """Compute a pending device array (lazy.materialize)."""

    def record_binary(self, ufunc: Any, x: Any, y: Any, reflected: bool, frame: Any, loops: dict[Any, Any]) -> Any:
        """The recorder's one-call road for ``x <op> y`` (lazy.recorder, or its C twin); None declines."""

    def record_unary(self, ufunc: Any, x: Any, frame: Any, loops: dict[Any, Any]) -> Any:
        """The recorder's one-call road for ``ufunc(x)``; None declines."""

    def before_write(self, backend: Any, native: Any) -> None:
        """Recorded work reading ``native``'s memory runs now: it is about to change, or the array
        holding it to hold another native (lazy.materialize.before_write)."""

    def charge_read(self, array: Any, key: Any, result: Any, seconds: float | None = None, frame: Any = None) -> None:
        """Residency: ``array[key]`` gave ``result``, taking ``seconds`` where measured, from user
        code at ``frame`` (default: the frame above DeviceArray's method) (npgpu/_residency.py)."""

    def charge_write(self, array: Any, key: Any, value: Any, frame: Any = None) -> None:
        """Residency: ``array[key] = value`` ran (npgpu/_residency.py)."""

    def charge_conversion(self, array: Any, moving_s: float | None = None) -> None:
        """Residency: NumPy converted ``array`` to a host array (npgpu/_residency.py)."""

    def charge_kernel(self, backend: Any, ops: int, nbytes: int, seconds: float = 0.0, computed: Any = None,
                      inputs: Any = ()) -> None:
        """Residency: a kernel of ``ops`` elementwise operations wrote ``nbytes``, its launch taking
        ``seconds`` here, into ``computed`` (a new array) from the natives ``inputs``
        (npgpu/_residency.py)."""


class _Hooks:
    """The installed parts (a plain object: the C operators read its ``__dict__``)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"npgpu's core is not installed (no {name!r}): import npgpu, not one of its modules alone")


#: The core, as DeviceArray sees it: filled once by ``install`` (npgpu/__init__.py).
core: Core = _Hooks()  # type: ignore[assignment]


def install(**parts: Any) -> None:
    """Fill ``core`` (the composition root, once; _native swaps the recorder's two roads)."""
    missing = [name for name in ("namespace", "loops", "function", "ufunc", "fast_call", "getitem", "inplace",
                                 "setitem", "on_host", "to_host", "materialize", "before_write", "record_binary",
                                 "record_unary", "charge_read", "charge_write", "charge_conversion", "charge_kernel")
               if name not in parts and name not in vars(core)]
    if missing:
        raise TypeError(f"npgpu core hooks missing: {', '.join(missing)}")
    vars(core).update(parts)
