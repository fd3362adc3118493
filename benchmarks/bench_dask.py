"""Dask arrays of NumPy chunks against Dask arrays of npgpu chunks (npgpu/dask.py).

A heat-equation stencil (``map_overlap``, 5 steps) and an E8-like elementwise chain with a sum,
over a grid cut into 4 or 8 chunks, on Dask's synchronous scheduler in this process (one device:
the chunks' kernels queue on it one after another; the scheduler's own cost is the same for
both). The result stays where it was computed (a device array for npgpu chunks), synchronized.
"""

from __future__ import annotations

from typing import Any

from .common import BACKENDS, BackendBenchmark, random_array

try:
    import dask.array as da
except ImportError:  # (asv shows the benchmarks as skipped)
    da = None

ALPHA = 0.2


def _step(block: Any) -> Any:
    out = block.copy()
    interior = block[1:-1, 1:-1]
    laplacian = block[2:, 1:-1] + block[:-2, 1:-1] + block[1:-1, 2:] + block[1:-1, :-2] - 4.0 * interior
    out[1:-1, 1:-1] = interior + ALPHA * laplacian
    return out


def _e8(x: Any) -> Any:
    return (x * x * 0.5 + x * 2.0 - 1.0) / (x + 3.0)


class TimeDaskChunks(BackendBenchmark):
    """``side`` x ``side`` float64 grid in ``chunks`` chunks (2x2 or 2x4)."""

    params = [BACKENDS, [2048, 4096], [4, 8]]
    param_names = ["backend", "side", "chunks"]
    timeout = 300

    def setup(self, backend: str, side: int, chunks: int) -> None:
        if da is None:
            raise NotImplementedError("Dask is not installed (pip install 'npgpu[dask]')")
        self.setup_backend(backend, threshold=0)
        host = da.from_array(random_array((side, side)), chunks=(side // 2, side // (chunks // 2)))
        self.x = host.to_backend("npgpu").persist(scheduler="sync") if backend != "numpy" else host.persist()
        self.time_stencil(backend, side, chunks)  # (kernels built, Dask's caches warm)
        self.time_e8_sum(backend, side, chunks)

    def time_stencil(self, backend: str, side: int, chunks: int) -> None:
        u = self.x
        for _ in range(5):
            u = u.map_overlap(_step, depth=1, boundary=0.0)
        self.finish(u.compute(scheduler="sync"))

    def time_e8_sum(self, backend: str, side: int, chunks: int) -> None:
        float(_e8(self.x).sum().compute(scheduler="sync"))

