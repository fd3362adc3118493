"""NumPy's uniform doubles on the device (random_kernels) against NumPy's draw followed by an upload.

"numpy" is NumPy's own ``Generator.random(n)``. For a device backend, path "kernel" computes the
same numbers on the device from the bit generator's state (and moves the host generator past
them); path "upload" draws them with NumPy and uploads them: what a seeded draw costs without
the kernels. Both wait for the device. Runs without asv: ``python tools/run_suite.py
benchmarks.bench_random TimeUniformDoubles --repeat 3``.
"""

from __future__ import annotations

from typing import Any

import numpy

from .common import BACKENDS, BackendBenchmark, backends


class TimeUniformDoubles(BackendBenchmark):
    params = [BACKENDS, ["PCG64", "MT19937"], ["kernel", "upload"], [10**6, 10**7, 10**8]]
    param_names = ["backend", "generator", "path", "n"]
    timeout = 600

    device: Any = None

    def setup(self, backend: str, generator: str, path: str, n: int) -> None:
        if backend == "numpy" and path == "upload":
            raise NotImplementedError("NumPy draws on the host: one path")
        self.setup_backend(backend)
        self.rng = numpy.random.Generator(getattr(numpy.random, generator)(0))
        if backend != "numpy":
            self.device = backends.get_backend(backend.removeprefix("npgpu-"))
            self.time_draw(backend, generator, path, min(n, 10**6))  # compile outside the timing

    def time_draw(self, backend: str, generator: str, path: str, n: int) -> None:
        if self.device is None:
            self.rng.random(n)
            return
        bit_generator = self.rng.bit_generator
        if path == "kernel":
            native, bit_generator.state = self.device.random_doubles(bit_generator.state, (n,))
        else:
            native = self.device.from_host(self.rng.random(n))
        self.device.sync()
        del native


#: Unseeded draws: (Generator method, arguments before ``size``, keyword arguments).
DRAWS = {
    "random": ("random", (), {}),
    "random-float32": ("random", (), {"dtype": numpy.float32}),
    "standard_normal": ("standard_normal", (), {}),
    "integers": ("integers", (0, 1000), {}),
}


class TimeDeviceStreams(BackendBenchmark):
    """An unseeded draw: path "stream" from the device's own generator (CuPy's; Philox kernels on
    OpenCL), path "upload" NumPy's draw uploaded, what the draw costs without a device stream.
    "numpy" is NumPy's own draw."""

    params = [BACKENDS, list(DRAWS), ["stream", "upload"], [10**6, 10**7]]
    param_names = ["backend", "draw", "path", "n"]
    timeout = 600

    device: Any = None

    def setup(self, backend: str, draw: str, path: str, n: int) -> None:
        if backend == "numpy" and path == "upload":
            raise NotImplementedError("NumPy draws on the host: one path")
        self.setup_backend(backend)
        self.rng = numpy.random.default_rng()
        if backend != "numpy":
            self.device = backends.get_backend(backend.removeprefix("npgpu-"))
            self.stream = self.device.random_generator(None)
            self.time_draw(backend, draw, path, min(n, 10**5))  # compile outside the timing

    def time_draw(self, backend: str, draw: str, path: str, n: int) -> None:
        name, args, kwargs = DRAWS[draw]
        if self.device is None:
            getattr(self.rng, name)(*args, size=n, **kwargs)
            return
        if path == "stream":
            native = getattr(self.stream, name)(*args, size=n, **kwargs)
        else:
            native = self.device.from_host(getattr(self.rng, name)(*args, size=n, **kwargs))
        self.device.sync()
        del native
