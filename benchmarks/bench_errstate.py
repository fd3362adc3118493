"""What honouring NumPy's errstate costs a fused kernel.

E8 and a one-operation kernel (``a + b``), recorded under: NumPy's default state (divide, over,
invalid warn: the kernel checks them, the flags are read at the next synchronization), all='ignore'
(no checks: the kernel of before), all='raise' (each call that can raise runs at once and its flags
are read after its launch, as NumPy raises at the line) and the default state with the flags read
after every launch (``warn-each-launch``: the design not taken, for comparison).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy

from npgpu import _fperr

from .common import BACKENDS, BackendBenchmark, random_array


def e8(np: Any, a: Any, b: Any, c: Any) -> Any:
    return ((a * b + c) * a - b) / (c + 1.5) + np.sqrt(np.abs(a)) * 0.5 - np.exp(-b)


def add(np: Any, a: Any, b: Any, c: Any) -> Any:
    return a + b


KERNELS = {"E8": e8, "add": add}
STATES = ["default", "ignore", "raise", "warn-each-launch"]


@contextlib.contextmanager
def _state(name: str) -> Any:
    if name == "default":
        yield
    elif name == "warn-each-launch":
        with _fperr.read_after_each_launch():
            yield
    else:
        with numpy.errstate(all=name):
            yield


class TimeErrstate(BackendBenchmark):
    params = [BACKENDS, [1_000_000, 10_000_000], list(KERNELS), STATES]
    param_names = ["backend", "n", "kernel", "state"]

    def setup(self, backend: str, n: int, kernel: str, state: str) -> None:
        self.setup_backend(backend, **({} if backend == "numpy" else {"threshold": 0}))  # (device arrays at 1e6 too)
        self.a, self.b, self.c = (self.to_backend(random_array(n, seed=s)) for s in (1, 2, 3))
        self.kernel = KERNELS[kernel]
        self.time_kernel(backend, n, kernel, state)  # compile in setup

    def time_kernel(self, backend: str, n: int, kernel: str, state: str) -> None:
        with _state(state):
            self.finish(self.kernel(self.xp, self.a, self.b, self.c))

    def time_kernel_then_download(self, backend: str, n: int, kernel: str, state: str) -> None:
        # the download is where the default state reads the flags
        with _state(state):
            numpy.asarray(self.kernel(self.xp, self.a, self.b, self.c))
