"""What a device operation costs here, measured once per backend instance at first use.

Placement (npgpu/_placement.py) decides from these figures where host data pays to move: the
time of one elementwise operation on the host and on the device (a launch plus bytes at the
device's rate), and the time of moving bytes over the link. They are measured with the backend's
own upload and ufunc calls, the same paths a program takes, on a float64 ``add``: a memory-bound
operation, the cheapest kind a program runs, so a size where it pays is one where most
operations pay.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy

#: elements of the arrays the rates are measured on (8 MiB of float64: past the caches of a
#: CPU device's cores, small enough to measure in milliseconds)
MEASURE_ELEMENTS = 1 << 20
#: elements of the second NumPy add, whose operands and result stay in a core's caches (512 kB of
#: float64 a result): a loop's per-iteration arrays are often this size, and NumPy runs them 1.5-2x
#: faster per byte than at MEASURE_ELEMENTS (here, 2 cores: the 512 kB add at 11-20 GB/s, the 8 MiB
#: one at 5-7; on the H100's host resnet's conv2 took NumPy about 77 us a pixel for a 590 kB product
#: and its sum, where the 8 MiB rate of 10.7 GB/s says 112)
CACHED_ELEMENTS = 1 << 16
_REPEATS = 5
_QUEUED = 16
_LARGE_BYTES = MEASURE_ELEMENTS * 8
_CACHED_BYTES = CACHED_ELEMENTS * 8
_SPAN = math.log(_LARGE_BYTES / _CACHED_BYTES)


@dataclass(frozen=True)
class Costs:
    """Measured costs of one backend's device, in seconds and bytes per second.

    Rates count the bytes of an operation's result (an ``add`` of two 8 MiB arrays: 8 MiB).
    ``upload_bytes_per_s`` is ``inf`` where an upload moves nothing (memory shared with the host).
    """

    launch_s: float  #: one small elementwise operation on device arrays, queued among others
    device_bytes_per_s: float  #: the device's elementwise rate beyond the launch
    host_bytes_per_s: float  #: NumPy's rate for the same operation on this host
    upload_s: float  #: a small upload, from the call to its end
    upload_bytes_per_s: float  #: the link's rate beyond that
    host_call_s: float = 1e-6  #: NumPy's time for the same add of one element (its per-call cost)
    #: NumPy's rate on arrays that stay in the caches (CACHED_ELEMENTS), at least ``host_bytes_per_s``;
    #: None where only the large rate was measured
    host_cached_bytes_per_s: float | None = None

    def host_op_s(self, nbytes: float) -> float:
        """NumPy's time for an operation of ``nbytes`` (beyond its call): at the cached rate up to
        the cached add's bytes, at the large rate from the large add's, and between the two a
        per-byte cost moving from one to the other with the logarithm of the size (so the time
        grows with the bytes)."""
        large = 1.0 / self.host_bytes_per_s
        cached = self.host_cached_bytes_per_s
        if cached is None or nbytes >= _LARGE_BYTES:
            return nbytes * large
        small = min(1.0 / cached, large)
        if nbytes <= _CACHED_BYTES:
            return nbytes * small
        return nbytes * (small + (large - small) * math.log(nbytes / _CACHED_BYTES) / _SPAN)

    def device_op_s(self, nbytes: float) -> float:
        return self.launch_s + nbytes / self.device_bytes_per_s

    def device_excess_s(self, nbytes: float) -> float:
        """What one operation of ``nbytes`` costs on the device beyond NumPy's time for it."""
        return self.device_op_s(nbytes) - self.host_call_s - self.host_op_s(nbytes)

    def upload_time_s(self, nbytes: float) -> float:
        return self.upload_s + nbytes / self.upload_bytes_per_s

    def break_even_bytes(self, uses: float, upload: bool) -> float:
        """The smallest array size from which ``uses`` device operations on it (after its upload,
        when ``upload``) take less time than the same operations in NumPy; ``inf`` where none does:
        ``uses * (host - device) >= upload``."""
        fixed = uses * self.launch_s + (self.upload_s if upload else 0.0)
        per_byte = uses * (1.0 / self.host_bytes_per_s - 1.0 / self.device_bytes_per_s)
        if upload:
            per_byte -= 1.0 / self.upload_bytes_per_s
        return fixed / per_byte if per_byte > 0 else math.inf

    def as_dict(self) -> dict[str, float]:
        found = {"launch_us": self.launch_s * 1e6, "device_GBps": self.device_bytes_per_s / 1e9,
                 "host_GBps": self.host_bytes_per_s / 1e9, "upload_us": self.upload_s * 1e6,
                 "upload_GBps": self.upload_bytes_per_s / 1e9, "host_call_us": self.host_call_s * 1e6}
        if self.host_cached_bytes_per_s is not None:
            found["host_cached_GBps"] = self.host_cached_bytes_per_s / 1e9
        return found


def _best(run: Callable[[], Any], repeats: int = _REPEATS) -> float:
    run()  # (warm: kernels built, memory pools filled)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _rate(nbytes: int, total_s: float, fixed_s: float) -> float:
    """Bytes per second beyond the fixed cost (a rate measured within the timer's noise of the
    fixed cost is taken as the total's: the device is then as fast as we can tell)."""
    beyond = total_s - fixed_s
    return nbytes / (beyond if beyond > 0.05 * total_s else total_s)


def measure(backend: Any) -> Costs:
    """Time ``backend``'s upload and a float64 add, small and large, and NumPy's add (a few ms)."""
    host = numpy.linspace(0.0, 1.0, MEASURE_ELEMENTS)
    tiny = host[:1].copy()
    loop = (numpy.dtype(numpy.float64),) * 3

    def upload(array: numpy.ndarray) -> Callable[[], Any]:
        def run() -> None:
            backend.from_host(array)
            backend.sync()
        return run

    def add(native: Any, times: int = 1) -> Callable[[], Any]:
        def run() -> None:
            for _ in range(times):
                backend.call_ufunc(numpy.add, "__call__", (native, native), {}, loop)
            backend.sync()
        return run

    upload_s = _best(upload(tiny))
    upload_big = _best(upload(host))
    small, big = backend.from_host(tiny), backend.from_host(host)
    # (a launch among others, as in a program's loop: queued back to back, one wait at the end)
    launch_s = _best(add(small, _QUEUED)) / _QUEUED
    device_big = _best(add(big))
    host_big = _best(lambda: numpy.add(host, host))  # (a new result each time, as a program's)
    cached = host[:CACHED_ELEMENTS].copy()
    host_cached = _best(lambda: numpy.add(cached, cached), _REPEATS * 4)
    host_call_s = _best(lambda: [numpy.add(tiny, tiny) for _ in range(_QUEUED)]) / _QUEUED
    return Costs(launch_s=launch_s, device_bytes_per_s=_rate(host.nbytes, device_big, launch_s),
                 host_bytes_per_s=host.nbytes / host_big, upload_s=upload_s,
                 upload_bytes_per_s=_rate(host.nbytes, upload_big, upload_s), host_call_s=host_call_s,
                 host_cached_bytes_per_s=max(_rate(cached.nbytes, host_cached, host_call_s), host.nbytes / host_big))


#: how many device operations placement expects an array moved there to take part in: the model's
#: one assumption about the work that follows (a program's data is used more than once; one use
#: would make a round trip pay only for compute-bound work)
USES = 4


def thresholds(costs: Costs, create_ceiling: int, upload_ceiling: int) -> tuple[int, int]:
    """(creation, upload) thresholds in bytes from measured costs: arrays made from nothing go to
    the device from the size where ``USES`` operations on it are faster there, host data from the
    size where they also pay for its upload. Where the model says the device never pays for a
    memory-bound operation, the backend's own figures (measured by hand on fused and compute-bound
    work, which pays sooner) stay the limit."""
    create = costs.break_even_bytes(USES, upload=False)
    upload = costs.break_even_bytes(USES, upload=True)
    return (int(min(create, create_ceiling)), int(min(max(upload, create), upload_ceiling)))
