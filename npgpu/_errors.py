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
