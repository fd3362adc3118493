"""Host-device transfers: to the device, back to the host, and a round trip.

For "numpy" the same calls are host copies: the baseline a transfer has to beat to be worth it.
"""

from __future__ import annotations

import numpy

from .common import BACKENDS, BackendBenchmark, npgpu, random_array

NBYTES = [8 * 1_000, 8 * 1_000_000, 64 << 20, 8 * 32_000_000]  # 64 MiB: the pinned-transfer target size


class TimeTransfer(BackendBenchmark):
    params = [BACKENDS, NBYTES]
    param_names = ["backend", "nbytes"]

    def setup(self, backend: str, nbytes: int) -> None:
        # threshold=0: every array goes to the device, so small transfers are measured too.
        self.setup_backend(backend, **({} if backend == "numpy" else {"threshold": 0}))
        self.host = random_array(nbytes // 8)
        self.device = self.to_device(self.host)
        self.to_host(self.device)

    def to_device(self, host: numpy.ndarray) -> object:
        if self.xp is numpy:
            return host.copy()
        return self.finish(npgpu.asarray(host))

    def to_host(self, device: object) -> numpy.ndarray:
        if self.xp is numpy:
            return numpy.array(device, copy=True)
        return npgpu.asnumpy(device)

    def time_to_device(self, backend: str, nbytes: int) -> None:
        self.to_device(self.host)

    def time_to_host(self, backend: str, nbytes: int) -> None:
        self.to_host(self.device)

    def time_round_trip(self, backend: str, nbytes: int) -> None:
        self.to_host(self.to_device(self.host))

    def track_to_device_gbps(self, backend: str, nbytes: int) -> float:
        import time

        start = time.perf_counter()
        for _ in range(5):
            self.to_device(self.host)
        return 5 * nbytes / (time.perf_counter() - start) / 1e9

    track_to_device_gbps.unit = "GB/s"  # type: ignore[attr-defined]
