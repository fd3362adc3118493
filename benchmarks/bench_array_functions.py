"""asv: NumPy's array functions that issue #15 put on the device (take, pad, isclose, einsum, vecdot,
convolve, nanvar, cross), NumPy against npgpu on each backend, on millions of elements.

Measured on PoCL (2 cores, 2026-12-01, one run, 3 calls each): take of 1e6 from 4e6 float64
15 ms NumPy / 20-30 ms OpenCL; pad(edge, 8) of 2000^2: 9-13 / 13; isclose at 4e6: 28-36 / 36;
einsum('ij,ij->i') 2000^2: 3.1 / 2.6; vecdot: 3.1 / 3.7; nanvar 4e6: 36 / 48; cross 1e6x3: 60 / 71;
convolve(4e6, 16 taps): 51 / 155 (one kernel of 16 shifted views; the window map-reduce took 200-260).
"""

from __future__ import annotations

from typing import Any

import numpy

from .common import BACKENDS, BackendBenchmark

N = 4_000_000
SIDE = 2000

CALLS: dict[str, Any] = {
    "take": lambda xp, d: xp.take(d["a"], d["indices"]),
    "pad-edge": lambda xp, d: xp.pad(d["m"], 8, mode="edge"),
    "isclose": lambda xp, d: xp.isclose(d["a"], d["b"]),
    "einsum": lambda xp, d: xp.einsum("ij,ij->i", d["m"], d["m"]),
    "vecdot": lambda xp, d: xp.vecdot(d["m"], d["v"]),
    "convolve": lambda xp, d: xp.convolve(d["a"], d["taps"]),
    "nanvar": lambda xp, d: xp.nanvar(d["with_nan"]),
    "cross": lambda xp, d: xp.cross(d["p"], d["q"]),
}


class TimeArrayFunctions(BackendBenchmark):
    """One call of each function on device-resident data (NumPy: host data)."""

    params = [BACKENDS, list(CALLS)]
    param_names = ["backend", "call"]

    def setup(self, backend: str, call: str) -> None:
        self.setup_backend(backend, threshold=0)
        rng = numpy.random.default_rng(0)
        a = rng.standard_normal(N)
        with_nan = a.copy()
        with_nan[::7] = numpy.nan
        host = {"a": a, "b": a + 1e-9, "indices": rng.integers(0, N, N // 4), "m": rng.standard_normal((SIDE, SIDE)),
                "v": rng.standard_normal(SIDE), "taps": rng.standard_normal(16), "with_nan": with_nan,
                "p": rng.standard_normal((N // 4, 3)), "q": rng.standard_normal((N // 4, 3))}
        self.data = {k: self.to_backend(v) for k, v in host.items()}
        self.call = CALLS[call]
        self.time_call(backend, call)  # (kernels built outside the timing)

    def time_call(self, backend: str, call: str) -> None:
        self.finish(self.call(self.xp, self.data))
