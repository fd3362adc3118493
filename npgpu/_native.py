"""npgpu._speedups, the optional C extension: the only module that configures it.

``speedups`` is the module, or None: not built (no C compiler at install), or
``NPGPU_PURE_PYTHON=1``. Everything it does has a Python implementation, which stays the
reference (tests/test_speedups.py compares the two). The composition root (npgpu/__init__.py)
hands ``configure`` every object the C code mirrors or reads, once, as one ``Parts``;
``use_native`` then switches the recorder, the graph walk and the operators between C and Python.
This module imports only ``_hooks``: the modules it configures are above it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _hooks

speedups: Any = None
if not os.environ.get("NPGPU_PURE_PYTHON"):
    try:
        from . import _speedups as speedups
    except ImportError:  # a source tree or an install without a C compiler
        speedups = None


@dataclass(frozen=True)
class Parts:
    """What the C extension reads, and where its C twins go (one field per object)."""

    # the namespace wrappers' small-call check (C ``configure``)
    state_var: Any                  # _config._state, the ContextVar of the State
    config_globals: dict[str, Any]  # vars(_config): "_default" is the process default State
    ndarray: type
    dtype: type
    host_scalars: tuple[type, ...]  # _ops.HOST_SCALARS
    dispatch_function: Callable[..., Any]  # _dispatch.function
    place_constructed: Callable[..., Any]  # _dispatch.place_constructed
    # the fusion recorder (C ``configure_fusion``): the classes whose __slots__ it reads by name
    array_type: type     # DeviceArray
    pending_type: type   # lazy.registry.Pending
    scalar_type: type    # lazy.registry.ScalarArg
    ref_type: type       # lazy.registry._Ref
    forget: Any          # the registry's weakref callback (its set's discard)
    refs: set[Any]       # the registry of pending arrays: weak references
    recorder_globals: dict[str, Any]  # vars(lazy.recorder): MAX_NODES is read per call
    materialize: Callable[..., Any]
    # NumPy's errstate (C ``configure_errstate``); None: a NumPy without its context variable
    errstate_var: Any
    errstate_cache: list[Any]
    warnings_globals: dict[str, Any]
    # the operators, the kept-view road of __getitem__ and __setitem__'s same view (C ``configure_methods``)
    code_kind: dict[int, int]  # _callsite.CODE_KIND
    tracked: dict[int, Any]    # _array.tracked: residency charges index work while it is non-empty
    report_local: Any          # _report._local: each thread's table of call counts
    getitem: Any               # _dispatch._GETITEM: the function views are counted under
    setitem: Any               # _dispatch._SETITEM: the function writes are counted under
    # the Python twins, and the owners' switches between them and the C ones
    record_binary: Callable[..., Any]
    record_unary: Callable[..., Any]
    use_walk: Callable[[Any], None]        # lazy.materialize.use_walk
    front_methods: Callable[[Any], None]   # _array.use_native_methods


_parts: Parts | None = None


def configure(parts: Parts) -> None:
    """Hand the C extension what it reads (the composition root, once), then use it."""
    global _parts
    _parts = parts
    if speedups is not None:
        speedups.configure(parts.state_var, parts.config_globals, parts.ndarray, parts.dtype, parts.host_scalars,
                           parts.dispatch_function, parts.place_constructed)
    use_native(True)


def use_native(native: bool) -> None:
    """Record (and walk graphs, and front the operators) with the C functions, or with the
    Python ones (``native=False``, or when the extension is not in use)."""
    parts = _parts
    if parts is None:
        raise RuntimeError("npgpu._native.configure() was not called (import npgpu)")
    module = speedups if native else None
    if module is not None and parts.errstate_var is None:
        module = None  # (a NumPy without the errstate context variable: the recorder can't read it in C)
    if module is None:
        parts.use_walk(None)
        _hooks.install(record_binary=parts.record_binary, record_unary=parts.record_unary)
    else:
        module.configure_fusion(parts.array_type, parts.pending_type, parts.scalar_type, parts.ref_type, parts.forget,
                                parts.refs, parts.recorder_globals, parts.materialize)
        module.configure_errstate(parts.errstate_var, parts.errstate_cache, parts.warnings_globals)
        module.configure_methods(parts.code_kind, vars(_hooks.core), parts.tracked, parts.report_local,
                                 parts.getitem, parts.setitem)
        parts.use_walk(module.walk)
        _hooks.install(record_binary=module.record_binary, record_unary=module.record_unary)
    parts.front_methods(module)
