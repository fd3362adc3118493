"""E8 on the GPU, side by side in one run: eager CuPy, cupy.fuse, npgpu's automatic fusion, and the
device-to-device copy bandwidth that bounds them (issue 4's targets are ratios of these).

Skipped where CuPy finds no CUDA device.
"""

from __future__ import annotations

from typing import Any

from .common import backends, npgpu

N = 10**8


def _e8(xp: Any, a: Any, b: Any, c: Any) -> Any:
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


class TimeE8GPU:
    """GPU time of E8 at 1e8 elements (3 arrays read, 1 written) and of a plain copy."""

    params = [["cupy-eager", "cupy-fuse", "npgpu-cupy", "copy"], ["float32", "float64"]]
    param_names = ["impl", "dtype"]
    timeout = 300

    def setup(self, impl: str, dtype: str) -> None:
        reason = backends.unavailable_reason("cupy")
        if reason is not None:
            raise NotImplementedError(reason)
        import cupy

        self.cupy = cupy
        self.a, self.b, self.c = (cupy.random.random(N, dtype=dtype) for _ in range(3))
        if impl == "copy":
            # Same bytes as E8: 3 arrays' worth read and 1 written.
            self.src = cupy.empty(2 * N, dtype)
            self.dst = cupy.empty_like(self.src)
            self.run = lambda: cupy.copyto(self.dst, self.src)
        elif impl == "cupy-eager":
            self.run = lambda: _e8(cupy, self.a, self.b, self.c)
        elif impl == "cupy-fuse":

            def e8_cupy(a: Any, b: Any, c: Any) -> Any:
                return _e8(cupy, a, b, c)

            fused = cupy.fuse(e8_cupy)
            self.run = lambda: fused(self.a, self.b, self.c)
        else:
            self.state = npgpu.enable("cupy")
            self.da, self.db, self.dc = (npgpu.asarray(x) for x in (self.a, self.b, self.c))
            self.run = self._npgpu_e8
        self.run()  # compile in setup
        cupy.cuda.get_current_stream().synchronize()

    def _npgpu_e8(self) -> Any:
        result = _e8(npgpu, self.da, self.db, self.dc)  # recorded: nothing runs yet
        npgpu.sync()  # the pending result is alive here, so this runs its one fused kernel
        return result

    def teardown(self, impl: str, dtype: str) -> None:
        state = getattr(self, "state", None)
        if state is not None:
            state.__exit__(None, None, None)

    def time_e8(self, impl: str, dtype: str) -> None:
        self.run()
        self.cupy.cuda.get_current_stream().synchronize()


class TimeRecording:
    """CPU cost of recording one elementwise call on device arrays (no launch; target <= 5 us)."""

    params = [["npgpu-cupy", "npgpu-opencl"]]
    param_names = ["backend"]

    def setup(self, backend: str) -> None:
        name = backend.removeprefix("npgpu-")
        reason = backends.unavailable_reason(name)
        if reason is not None:
            raise NotImplementedError(reason)
        self.state = npgpu.enable(name, threshold=0)
        self.a = npgpu.arange(1000.0)
        self.b = npgpu.arange(1000.0)

    def teardown(self, backend: str) -> None:
        self.state.__exit__(None, None, None)

    def time_record_multiply(self, backend: str) -> None:
        self.a * self.b
