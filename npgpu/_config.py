"""Acceleration state: which backend is on, what to do on fallback, fusion, thresholds.

The state lives in a ContextVar so threads and asyncio tasks never see each other's settings.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from .backends import _REGISTRY, get_backend, resolve_auto

_ON_FALLBACK = ("ignore", "warn", "raise", "log")
#: Where large random draws come from (npgpu/_random.py): "auto": NumPy's streams for seeded
#: generators, the device's own streams for unseeded ones; "numpy": NumPy's always; "device":
#: the device's always (fast, but other numbers than NumPy's for the same seed).
RANDOM_MODES = ("auto", "numpy", "device")


@dataclass(frozen=True)
class State:
    """One immutable snapshot of the acceleration settings."""

    backend: Any = None  # a Backend instance, or None when acceleration is off
    on_fallback: str = "ignore"
    fusion: bool = True
    threshold: int | None = None  # bytes; None means the backend's measured default
    random: str = "auto"  # one of RANDOM_MODES
    #: What placement learned while this enable() is in force (npgpu/_residency.py: the origins whose
    #: arrays run faster in NumPy); states derived from it (``replace``) share it
    learned: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    #: Whether creations below the creation threshold go to the dispatcher rather than straight to
    #: NumPy: set (``route_creations``) once placement learned a line whose small creation is
    #: better made on the device; the wrappers' short road then asks where each one belongs
    routes_creations: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Host inputs below this many bytes stay in NumPy; computed once, read on every small call.
        limit = self.threshold
        if limit is None:
            limit = 0 if self.backend is None else self.backend.upload_threshold_bytes
        object.__setattr__(self, "host_limit", limit)
        # Arrays made from nothing (zeros, arange, ...) below this many bytes are made by NumPy.
        create = self.threshold
        if create is None:
            create = 1 << 20 if self.backend is None else self.backend.default_threshold_bytes
        object.__setattr__(self, "create_limit", create)
        # (the creation wrappers' short road, C and Python, reads this one)
        object.__setattr__(self, "short_create_limit", 0 if self.routes_creations else create)

    @property
    def enabled(self) -> bool:
        return self.backend is not None


# The process-wide default (set from NPGPU_BACKEND at import); a context that never called
# enable()/disable() sees it, so the variable applies to every thread.
_default = State()
_state: contextvars.ContextVar[State | None] = contextvars.ContextVar("npgpu_state", default=None)


def current() -> State:
    """The settings in force in this thread / task."""
    return _state.get() or _default


def _after_fork_in_child() -> None:
    """In a child of ``os.fork()``, acceleration by a device the parent had opened is off (its
    context stayed in the parent: PoCL's calls would hang, CUDA's fail): the child's NumPy work is
    NumPy's (NumPy's test_linalg forks under an enabled PoCL device)."""
    global _default
    if _default.backend is not None and not _default.backend.survives_fork:
        _default = State()
    state = _state.get()
    if state is not None and state.backend is not None and not state.backend.survives_fork:
        _state.set(State())


os.register_at_fork(after_in_child=_after_fork_in_child)


def current_backend() -> str | None:
    """Name of the active backend, or None when acceleration is off."""
    backend = current().backend
    return None if backend is None else backend.name


class _StateChange:
    """Returned by enable()/disable(): the change is already in force; ``with`` undoes it on exit."""

    __slots__ = ("_token", "state")

    def __init__(self, state: State) -> None:
        self.state = state
        self._token = _state.set(state)

    def __enter__(self) -> _StateChange:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _state.reset(self._token)

    def __repr__(self) -> str:
        name = None if self.state.backend is None else self.state.backend.name
        return f"<npgpu state backend={name!r} on_fallback={self.state.on_fallback!r} fusion={self.state.fusion}>"


def _validated(on_fallback: str | None, threshold: int | None) -> None:
    if on_fallback is not None and on_fallback not in _ON_FALLBACK:
        raise ValueError(f"on_fallback must be one of {_ON_FALLBACK}, not {on_fallback!r}")
    if threshold is not None and (not isinstance(threshold, int) or threshold < 0):
        raise ValueError(f"threshold must be a non-negative int (bytes), not {threshold!r}")


def enable(
    backend: str = "auto",
    *,
    on_fallback: str | None = None,
    fusion: bool | None = None,
    threshold: int | None = None,
    device: int | str | None = None,
    random: str | None = None,
) -> _StateChange:
    """Turn acceleration on now; as a ``with`` block, restore the previous state on exit.

    ``backend`` is "auto", "cupy", "opencl" or "numpy". "auto" picks CuPy when a CUDA GPU
    is usable, else an OpenCL GPU, else NumPy; it never fails. A named backend that can't
    run here raises :class:`npgpu.BackendUnavailableError` saying why. ``random``: "auto"
    (default) gives NumPy's numbers from every seeded generator (``seed(s)``, ``RandomState(s)``,
    ``default_rng(s)``) and lets unseeded ones draw from the device's faster streams; "numpy"
    gives NumPy's numbers always; "device" draws from device streams always (other numbers).
    """
    _validated(on_fallback, threshold)
    if random is not None and random not in RANDOM_MODES:
        raise ValueError(f"random must be one of {RANDOM_MODES}, not {random!r}")
    name = resolve_auto() if backend == "auto" else backend
    options = {} if device is None else {"device": device}
    instance = get_backend(name, **options)
    old = current()
    new = State(
        backend=instance,
        on_fallback=old.on_fallback if on_fallback is None else on_fallback,
        fusion=old.fusion if fusion is None else bool(fusion),
        threshold=threshold,
        random=old.random if random is None else random,
    )
    return _StateChange(new)


def route_creations() -> None:
    """From now on, in this thread's ``enable()``, small creations go to the dispatcher (placement
    learned a line whose creation is better made on the device: npgpu/_residency.py). The state
    in force is replaced by one that says so and shares what was learned; the ``enable()``'s exit
    restores the state before it, as always."""
    state = current()
    if state.backend is not None and not state.routes_creations:
        _state.set(replace(state, routes_creations=True))


def device_backend(device: Any) -> Any:
    """The backend whose arrays report ``device`` (``x.device``: a device backend's name), or
    None where ``device`` names none (then it is NumPy's to accept or refuse)."""
    backend = current().backend
    if backend is not None and device == backend.name and not backend.is_host:
        return backend
    if isinstance(device, str) and device in _REGISTRY and device != "numpy":
        return get_backend(device)
    return None


def placing_all_on(backend: Any) -> _StateChange:
    """Now, and in a ``with`` block: ``backend`` in force with threshold 0, so what is made or
    converted goes to its device whatever its size (the array API's ``device=``)."""
    return _StateChange(replace(current(), backend=backend, threshold=0))


def disable() -> _StateChange:
    """Turn acceleration off now (npgpu is plain NumPy); as a ``with`` block, restore on exit."""
    return _StateChange(replace(current(), backend=None))


_SIZE_SUFFIXES = {"": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
                  "g": 1 << 30, "gb": 10**9, "gib": 1 << 30}


def parse_bytes(text: str, name: str = "NPGPU_THRESHOLD") -> int:
    """A byte count as written in an environment variable: ``0``, ``1048576``, ``16MiB``, ``4M``, ``1GB``."""
    value = text.strip().lower().replace(" ", "").replace("_", "")
    digits = value.rstrip("kmgib")
    suffix = value[len(digits):]
    try:
        number = float(digits)
    except ValueError:
        number = -1.0
    if suffix not in _SIZE_SUFFIXES or number < 0 or number != number:
        raise ValueError(f"{name} must be a byte count such as 0, 1048576, 16MiB or 1GB, not {text!r}")
    return int(number * _SIZE_SUFFIXES[suffix])


def enable_from_environment() -> None:
    """Honour the environment at import: NPGPU_BACKEND enables a backend as the process default
    (what a Dask worker or a script started by a tool needs), with NPGPU_ON_FALLBACK,
    NPGPU_THRESHOLD (the placement threshold in bytes, as ``enable(threshold=)``) and
    NPGPU_FUSION (0 turns fusion off)."""
    global _default
    name = os.environ.get("NPGPU_BACKEND", "").strip()
    on_fallback = os.environ.get("NPGPU_ON_FALLBACK", "").strip() or "ignore"
    threshold_text = os.environ.get("NPGPU_THRESHOLD", "").strip()
    threshold = parse_bytes(threshold_text) if threshold_text else None
    fusion_text = os.environ.get("NPGPU_FUSION", "").strip().lower()
    if fusion_text not in ("", "0", "1", "true", "false", "on", "off", "yes", "no"):
        raise ValueError(f"NPGPU_FUSION must be 0 or 1, not {fusion_text!r}")
    fusion = fusion_text not in ("0", "false", "off", "no")
    _validated(on_fallback, threshold)
    backend = None
    if name and name != "off":
        backend = get_backend(resolve_auto() if name == "auto" else name)
    _default = State(backend=backend, on_fallback=on_fallback, fusion=fusion, threshold=threshold)
