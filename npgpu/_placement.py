"""Host or device? Work on host inputs moves to the device only where it pays.

Below a size threshold (bytes, measured per backend, overridable with enable(threshold=...))
it stays in NumPy; device inputs always stay on the device. (How large a creation call's request
is: npgpu/_ops.py, CREATIONS.)
"""

from __future__ import annotations

from ._config import State


def threshold_bytes(state: State) -> int:
    """The size from which arrays made from nothing (zeros, arange, random) are made on the device."""
    if state.threshold is not None:
        return state.threshold
    return 1 << 20 if state.backend is None else int(state.backend.default_threshold_bytes)


def upload_threshold_bytes(state: State) -> int:
    """The size of host inputs from which work moves them to the device (the upload must pay)."""
    if state.threshold is not None:
        return state.threshold
    return 16 << 20 if state.backend is None else int(state.backend.upload_threshold_bytes)
