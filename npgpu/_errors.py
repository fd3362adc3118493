"""Warning and exception classes of npgpu.

NumPy's own errors are raised as NumPy raises them; these are only for npgpu's signals.
"""

from __future__ import annotations


class FallbackWarning(UserWarning):
    """Work ran in NumPy on the host because the active backend can't do it."""


class FallbackError(RuntimeError):
    """Raised instead of falling back when ``on_fallback="raise"``."""


class BackendUnavailableError(RuntimeError):
    """The requested backend can't run on this machine; the message says why."""


class PerformanceWarning(UserWarning):
    """A pattern that works but is slow (e.g. a device array converted to host in a loop)."""


# -- device faults: raised by backends at their boundary, translated from the device library's
# own errors (PyOpenCL, CuPy), so the core catches these classes and nothing broader.

def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


class DeviceMemoryError(MemoryError):
    """The device can't hold an array: ``requested`` bytes asked (None: not known), against what
    it gives: at most ``per_array`` bytes for one array, ``free`` bytes free now, ``total`` in all.
    Work that meets it falls back to NumPy where its inputs can be brought to the host (counted,
    reason "device memory"); where it can't, this is raised, and inputs and pending work are intact."""

    def __init__(self, device: str, requested: int | None, *, per_array: int | None = None,
                 free: int | None = None, total: int | None = None, detail: str = "") -> None:
        self.device = device
        self.requested = requested
        self.per_array = per_array
        self.free = free
        self.total = total
        asked = "the memory asked" if requested is None else f"{_size(requested)} ({requested} bytes asked)"
        facts = ((per_array, "at most {} for one array"), (free, "{} free now"), (total, "{} in all"))
        has = [text.format(_size(value)) for value, text in facts if value is not None]
        parts = [f"npgpu: the {device} can't hold {asked}"]
        if has:
            parts.append(f"; it has {', '.join(has)}")
        if detail:
            parts.append(f" ({detail})")
        parts.append(". Free device arrays you no longer need (del), work on smaller pieces, or run this part "
                     "in NumPy (with npgpu.disable(): ...).")
        super().__init__("".join(parts))

    @property
    def reason(self) -> str:
        """The fallback reason the report shows."""
        asked = "" if self.requested is None else f"{_size(self.requested)} asked, "
        return f"device memory: {asked}more than the {self.device} can hold"


class KernelBuildError(RuntimeError):
    """The device's compiler rejected a generated kernel; ``log`` is its message. Work that meets
    it runs in NumPy instead (counted, with the compiler's message as the reason)."""

    def __init__(self, backend: str, log: str) -> None:
        self.log = log
        super().__init__(f"npgpu: the {backend} compiler could not build a generated kernel: {log}")

    @property
    def reason(self) -> str:
        # (the compiler's first error line: a log may open with paths, options or the source)
        lines = [line for line in self.log.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        first = " ".join((errors or lines or [""])[0].split())
        return f"kernel build failed: {first[:200]}"


class NeedsNumpyError(RuntimeError):
    """A device function found, in the values it was given, a case only NumPy's own sequential
    algorithm answers as NumPy does (interp's sample points holding NaN, where NumPy's search
    follows its guess from the element before). The call runs in NumPy instead, counted, with
    ``reason``; raised before anything is written."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"npgpu: {reason}")


class DeviceLostError(RuntimeError):
    """The device stopped working after the backend was enabled (removed, reset, driver failure).
    Arrays on it are lost; npgpu can't recover them."""


class StagingTimeoutError(TimeoutError):
    """A transfer through the pinned staging threads made no progress in time (a stuck worker).
    The message names the chunk each stuck worker was on; tracebacks of every thread went to
    stderr."""


#: What a backend raises that the core turns into a counted fallback to NumPy.
FALLBACK_FAULTS = (DeviceMemoryError, KernelBuildError, NeedsNumpyError)
