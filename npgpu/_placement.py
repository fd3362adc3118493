"""Host or device? Work on host inputs moves to the device only where it pays.

Below a size threshold it stays in NumPy; device inputs always stay on the device. The threshold
is the size from which a few operations on an array pay for its upload, computed from the
device's costs measured at first use (npgpu/backends/costs.py: launch, device and host rates,
link), capped by the backend's own figures; enable(threshold=...) overrides it. (How large a creation call's request
is: npgpu/_ops.py, CREATIONS.)
"""

from __future__ import annotations

from typing import Any

from ._config import State
from ._report import (
    ABOVE_THRESHOLD,
    BELOW_THRESHOLD,
    DEVICE_OPERANDS,
    FASTER_ON_HOST,
    LEARNED_ON_DEVICE,
    LEARNED_ON_HOST,
    MADE_IN_NUMPY,
    MADE_ON_DEVICE,
    MOVED_TO_HOST,
    ONE_PASS_ON_HOST,
    RECORDED,
    RULES,
)
from .backends.costs import USES

__all__ = ["ABOVE_THRESHOLD", "BELOW_THRESHOLD", "DEVICE_OPERANDS", "FASTER_ON_HOST", "LEARNED_ON_DEVICE",
           "LEARNED_ON_HOST", "MADE_IN_NUMPY", "MADE_ON_DEVICE", "MOVED_TO_HOST", "ONE_PASS_ON_HOST", "RECORDED",
           "RULES", "describe", "made_other_choice_s", "other_choice_s", "threshold_bytes", "upload_threshold_bytes"]

def other_choice_s(backend: Any, rule: str, device_bytes: int, host_bytes: int) -> float | None:
    """What the call would have cost placed the other way, in seconds, by the backend's measured
    costs (None where none were measured): a device call in NumPy is a download of its device
    operands and NumPy's pass over the bytes; a host call on the device is an upload of its host
    operands and one launch. ``device_bytes``/``host_bytes``: the operands' bytes on each side."""
    costs = backend.costs
    if costs is None:
        return None
    nbytes = device_bytes + host_bytes
    if rule in (DEVICE_OPERANDS, ABOVE_THRESHOLD):
        moved = costs.upload_time_s(device_bytes) if device_bytes else 0.0  # (the link's rate both ways)
        return moved + costs.host_op_s(nbytes)
    moved = costs.upload_time_s(host_bytes) if host_bytes else 0.0
    return moved + costs.device_op_s(nbytes)


def made_other_choice_s(backend: Any, rule: str, nbytes: int) -> float | None:
    """What an array made from nothing (``nbytes`` asked for) would have cost made the other way,
    by the backend's measured costs (None where none were measured): made on the device, NumPy's
    pass writing the bytes; made by NumPy, a launch and the bytes at the device's rate."""
    costs = backend.costs
    if costs is None or nbytes < 0:
        return None
    if rule == MADE_IN_NUMPY:
        return costs.device_op_s(nbytes)
    return costs.host_call_s + costs.host_op_s(nbytes)


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



def describe(state: State) -> str:
    """One line for the report: where host data moves to the device, and what decided it."""
    backend = state.backend
    if backend is None or backend.is_host:
        return "placement: acceleration off: NumPy runs everything"
    limit, create = upload_threshold_bytes(state), threshold_bytes(state)
    if state.threshold is not None:
        why = f"enable(threshold={state.threshold})"
    elif backend.costs is not None:
        c = backend.costs
        cached = "" if c.host_cached_bytes_per_s is None else f" ({c.host_cached_bytes_per_s / 1e9:.1f} in cache)"
        why = (f"{USES} operations' break-even from costs measured at first use (launch "
               f"{c.launch_s * 1e6:.0f} us, device {c.device_bytes_per_s / 1e9:.1f} GB/s, NumPy "
               f"{c.host_bytes_per_s / 1e9:.1f} GB/s{cached}, upload {c.upload_s * 1e6:.0f} us + "
               f"{c.upload_bytes_per_s / 1e9:.1f} GB/s), at most the backend's own figures")
    else:
        why = f"the {backend.name} backend's fixed figures"
    return (f"placement ({backend.name}): host data moves to the device from {limit} bytes, arrays made "
            f"from nothing are made there from {create} bytes: {why}")
