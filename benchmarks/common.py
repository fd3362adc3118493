"""Shared pieces of the asv suites: the backend parameter and device synchronization.

A backend that can't run on this machine raises NotImplementedError in setup, which asv shows as skipped.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy

try:
    import npgpu
except ImportError:  # benchmarks run from a checkout that isn't installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import npgpu

from npgpu import _residency, backends, legacy

__all__ = ["BACKENDS", "BackendBenchmark", "backends", "legacy", "npgpu", "random_array"]

#: "numpy" is NumPy itself (the baseline); "npgpu-X" is npgpu with backend X enabled.
BACKENDS = ["numpy", "npgpu-cupy", "npgpu-opencl"]


def _noop() -> None:
    pass


class BackendBenchmark:
    """Base class: the first parameter of every benchmark is the backend.

    ``setup_backend`` sets ``self.xp`` (the module the timed body calls: NumPy or
    npgpu), ``self.sync`` (waits for queued device work; called inside every timed
    body so a GPU timing measures the work, not the launch) and enables npgpu.
    """

    params: Any = [BACKENDS]
    param_names = ["backend"]
    timeout = 120

    xp: Any = numpy
    sync: Any = staticmethod(_noop)
    _state: Any = None
    _rules: Any = None

    def setup_backend(self, backend: str, pinned: bool = False, **options: Any) -> None:
        """Enable ``backend`` with ``options``. ``pinned``: device arrays stay on the device (residency
        judges but moves nothing), for benchmarks of the device path's own cost: a statement timed
        200 times on a 320 kB array is work residency rightly moves to the host, after which the
        figure would be NumPy's (on the GPU hosts a scalar write then read 1 us, not the fill's launch)."""
        if backend == "numpy":
            self.xp, self.sync, self._state = numpy, _noop, None
            return
        name = backend.removeprefix("npgpu-")
        reason = backends.unavailable_reason(name)
        if reason is not None:
            raise NotImplementedError(reason)
        if pinned:
            self._rules = (_residency.SHARE, _residency.FLOOR)
            _residency.SHARE = _residency.FLOOR = float("inf")
        self._state = npgpu.enable(name, **options)
        self.xp, self.sync = npgpu, npgpu.sync

    def teardown(self, *params: Any) -> None:
        if self._state is not None:
            self._state.__exit__(None, None, None)
            self._state = None
        if self._rules is not None:
            _residency.SHARE, _residency.FLOOR = self._rules
            self._rules = None

    def to_backend(self, host: numpy.ndarray) -> Any:
        """``host`` where the backend keeps it: a device array above the placement threshold."""
        return self.xp.asarray(host)

    def finish(self, result: Any) -> Any:
        """Make a device ``result`` real and wait for it: pending fused work runs at ``sync()``.

        A NumPy result (placement kept the work on the host) has nothing in flight to wait for.
        """
        if isinstance(result, npgpu.DeviceArray):
            self.sync()
        return result


def random_array(n: int | tuple[int, ...], seed: int = 0, low: float = 0.5, high: float = 2.0) -> numpy.ndarray:
    """Host float64 data in [low, high): positive, so sqrt/log/division stay finite."""
    return numpy.random.default_rng(seed).uniform(low, high, n)
