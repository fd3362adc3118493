"""Whole-program shapes, written the way NumPy programs are written (issue #14).

Each workload receives its data as host arrays handed in through ``xp.asarray`` (as data a script
loaded) and leaves every placement decision to npgpu: these measure placement and the cost of
device operations in loops, not one kernel. The kinds follow the NPBench kernels that did not
speed up: an iterated stencil on a mid-sized array (2-D and 3-D), a time-stepping loop of small operations, a
solve with a Python loop over rows, a loop of scalar reads and writes, a window loop whose
small host weights feed every pixel, a batch norm whose result a window loop reads at every
pixel, an escape loop whose masks narrow its arrays and whose
results are written through index arrays, and the same loop written from a grid and coordinate
tables.

``TimeOperationCost`` measures the per-operation cost itself: the CPU time per recorded-and-
launched elementwise operation on a device array (the target: 5 us or less; CuPy's own launch
is about 10 us).
"""

from __future__ import annotations

import time
from typing import Any

import numpy

from .common import BACKENDS, BackendBenchmark, npgpu, random_array


def stencil_2d(xp: Any, a: Any, b: Any, steps: int) -> Any:
    """Jacobi iterations of a five-point stencil, written into a second array and swapped back."""
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1])
    return a


def stencil_3d(a: Any, b: Any, steps: int) -> Any:
    """Iterations of a seven-point heat stencil on a cube, each statement one expression of 3-D views."""
    for _ in range(steps):
        b[1:-1, 1:-1, 1:-1] = a[1:-1, 1:-1, 1:-1] + 0.125 * (
            a[2:, 1:-1, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1]
            + a[1:-1, 2:, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1]
            + a[1:-1, 1:-1, 2:] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, 1:-1, :-2])
        a[1:-1, 1:-1, 1:-1] = b[1:-1, 1:-1, 1:-1] + 0.125 * (
            b[2:, 1:-1, 1:-1] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[:-2, 1:-1, 1:-1]
            + b[1:-1, 2:, 1:-1] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[1:-1, :-2, 1:-1]
            + b[1:-1, 1:-1, 2:] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[1:-1, 1:-1, :-2])
    return a


def time_steps(xp: Any, u: Any, v: Any, steps: int) -> float:
    """An explicit integrator of small arrays: a handful of operations per step, a check every 25."""
    dt, k = 1e-3, 0.25
    energy = 0.0
    for step in range(steps):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        v[1:-1] += dt * k * lap - dt * 0.01 * v[1:-1]
        u += dt * v
        if step % 25 == 0:
            energy = float(xp.sum(u * u) + xp.sum(v * v))
    return energy


def forward_substitution(xp: Any, lower: Any, rhs: Any) -> Any:
    """Solve L x = b one row at a time: a Python loop of a dot product and a scalar division."""
    n = rhs.shape[0]
    x = xp.zeros_like(rhs)
    for i in range(n):
        x[i] = (rhs[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x


def row_factorization(a: Any) -> Any:
    """Doolittle's LU in place, one element at a time: a row-times-column product per element."""
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            a[i, j] -= a[i, :j] @ a[:j, j]
            a[i, j] /= a[j, j]
        for j in range(i, n):
            a[i, j] -= a[i, :i] @ a[:i, j]
    return a


def scalar_loop(xp: Any, a: Any, out: Any, count: int) -> float:
    """Element reads and writes from Python: a recurrence over the first ``count`` elements."""
    total = 0.0
    for i in range(1, count):
        out[i] = 0.5 * out[i - 1] + a[i]
        total += float(a[i])
    return total


def window_products(xp: Any, image: Any, weights: Any) -> Any:
    """A convolution one output pixel at a time: each window times the (host) weights, summed
    (resnet's loop, in one dimension of pixels)."""
    k = weights.shape[0]
    out = xp.empty((image.shape[0] - k + 1, weights.shape[-1]), image.dtype)
    for i in range(out.shape[0]):
        out[i] = xp.sum(image[i:i + k, :, None] * weights[:, :, :], axis=(0, 1))  # (a new view each time)
    return out


def normalized_windows(xp: Any, image: Any, weights: Any) -> Any:
    """resnet's block: an array made from nothing (zeros, padded) and filled, a batch norm of it
    (its own mean and standard deviation over the batch), and a convolution one output pixel at a
    time over the result: a computed array read at every pixel, which residency moves to the
    host, learning the arrays it was computed from (npgpu/_residency.py)."""
    n, h, w, c = image.shape
    k = weights.shape[0]
    padded = xp.zeros((n, h + k - 1, w + k - 1, c))
    padded[:, 1:-1, 1:-1, :] = image
    mean = xp.mean(padded, axis=0, keepdims=True)
    x = xp.maximum((padded - mean) / xp.sqrt(xp.std(padded, axis=0, keepdims=True) + 1e-5), 0)
    out = xp.empty((n, h, w, weights.shape[-1]), dtype=numpy.float32)
    for i in range(h):
        for j in range(w):
            out[:, i, j, :] = xp.sum(x[:, i:i + k, j:j + k, :, None] * weights[None], axis=(1, 2, 3))
    return out


def escape_counts(xp: Any, re: Any, im: Any, steps: int) -> Any:
    """Iterate z = z*z + c on a grid, keeping only the points that have not escaped: each step
    selects with a boolean mask (the survivors) and writes the escaped points' step count through
    their row and column indices (a write keyed by two index arrays)."""
    rows, cols = xp.indices(re.shape)
    rows, cols = rows.ravel(), cols.ravel()
    c = (re + 1j * im).ravel()
    z = xp.zeros_like(c)
    counts = xp.zeros(re.shape, dtype=numpy.int64)
    for step in range(steps):
        z = z * z + c
        out = abs(z) > 2.0
        counts[rows[out], cols[out]] = step + 1
        keep = ~out
        z, c, rows, cols = z[keep], c[keep], rows[keep], cols[keep]
    return counts


class TimeEscapeLoop(BackendBenchmark):
    """40 steps of an escape loop on a 500 x 500 grid: boolean-mask copies that shrink four arrays
    and a write keyed by two index arrays per step (the bounds of index arrays are checked on the
    device; residency charges each mask's count read back)."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.re, self.im = numpy.meshgrid(numpy.linspace(-2.0, 0.5, 500), numpy.linspace(-1.25, 1.25, 500))

    def time_escape(self, backend: str) -> None:
        self.finish(escape_counts(self.xp, self.xp.asarray(self.re), self.xp.asarray(self.im), 40))


def grid_escape(xp: Any, n: int, steps: int) -> Any:
    """The escape loop written from a grid, as NumPy programs write it: ``mgrid`` makes the point
    indices, small coordinate tables (``linspace``) are indexed by them, and the survivors narrow
    every array (a small host table indexed by a device grid: its line is learned for the device
    from the second call, npgpu/_residency.py)."""
    rows, cols = xp.mgrid[0:n, 0:n]
    c = xp.linspace(-2.0, 0.5, n)[rows] + 1j * xp.linspace(-1.25, 1.25, n)[cols]
    counts = xp.zeros(c.shape, dtype=numpy.int64)
    rows.shape = cols.shape = c.shape = n * n
    z = xp.zeros(c.shape, numpy.complex128)
    for step in range(steps):
        xp.multiply(z, z, z)
        xp.add(z, c, z)
        out = abs(z) > 2.0
        counts[rows[out], cols[out]] = step + 1
        xp.logical_not(out, out)
        z, rows, cols, c = z[out], rows[out], cols[out], c[out]
    return counts


class TimeGridEscapeLoop(BackendBenchmark):
    """40 steps of the escape loop from a 700 x 700 grid (``grid_escape``): its grid, its tables
    and its results where placement puts them; the first call (where the tables' line is learned)
    is a warm-up."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.finish(grid_escape(self.xp, 700, 40))

    def time_escape(self, backend: str) -> None:
        self.finish(grid_escape(self.xp, 700, 40))


class TimeHostWeightsLoop(BackendBenchmark):
    """A window loop of 500 pixels over a 4 MB image on the device whose weights (a 48 kB host
    array) feed every pixel's product: the weights' device copy is kept and reused
    (``_transfer.upload_operand``), the image moves to the host if its per-pixel work runs
    faster there (residency)."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.image = random_array((502, 1000), seed=11)
        self.weights = random_array((3, 1000, 4), seed=12).astype(numpy.float32)

    def time_pixels(self, backend: str) -> None:
        self.finish(window_products(self.xp, self.xp.asarray(self.image), self.weights))


class TimeNormalizedWindows(BackendBenchmark):
    """A batch-normed 8 x 26 x 26 x 64 image (2.8 MB) convolved one of 576 pixels at a time with
    3 x 3 host weights (``normalized_windows``); the first call, where residency learns where the
    image and what it is computed from belong, is a warm-up: the figure is a program's later calls."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.image = random_array((8, 24, 24, 64), seed=13)
        self.weights = random_array((3, 3, 64, 16), seed=14).astype(numpy.float32)
        self.finish(normalized_windows(self.xp, self.xp.asarray(self.image), self.weights))

    def time_windows(self, backend: str) -> None:
        self.finish(normalized_windows(self.xp, self.xp.asarray(self.image), self.weights))


class TimeStencil2D(BackendBenchmark):
    """An iterated five-point stencil on a 5 MB array (800 x 800 float64), 20 sweeps of two."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.host = random_array((800, 800), seed=3)

    def time_stencil(self, backend: str) -> None:
        a = self.xp.asarray(self.host.copy())
        b = self.xp.asarray(self.host.copy())
        self.finish(stencil_2d(self.xp, a, b, 20))


class TimeStencil3D(BackendBenchmark):
    """An iterated seven-point stencil on a 5.5 MB cube (88 x 88 x 88 float64), 10 sweeps of two:
    strided 3-D views, each statement one fused kernel where the cube is on the device."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.host = random_array((88, 88, 88), seed=15)

    def time_stencil(self, backend: str) -> None:
        a = self.xp.asarray(self.host.copy())
        b = self.xp.asarray(self.host.copy())
        self.finish(stencil_3d(a, b, 10))


class TimeTimeStepping(BackendBenchmark):
    """400 steps of a small explicit integrator (4 000 elements) with a scalar check every 25."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.u = random_array(4000, seed=4)
        self.v = numpy.zeros(4000)

    def time_steps(self, backend: str) -> None:
        time_steps(self.xp, self.xp.asarray(self.u.copy()), self.xp.asarray(self.v.copy()), 400)


class TimeTriangularSolve(BackendBenchmark):
    """Forward substitution of a 600 x 600 lower-triangular system, one Python iteration per row."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        n = 600
        rng = numpy.random.default_rng(5)
        self.lower = numpy.tril(rng.uniform(-1.0, 1.0, (n, n))) + n * numpy.eye(n)
        self.rhs = rng.uniform(-1.0, 1.0, n)

    def time_solve(self, backend: str) -> None:
        x = forward_substitution(self.xp, self.xp.asarray(self.lower), self.xp.asarray(self.rhs))
        self.finish(x)


class TimeRowFactorization(BackendBenchmark):
    """LU of a 250 x 250 matrix (500 kB) written as element and row operations in a Python loop:
    the work residency (npgpu/_residency.py) moves to the host on its first call and keeps there
    on the next (asv repeats a call within one enable())."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        n = 250
        self.host = random_array((n, n), seed=9) + n * numpy.eye(n)

    def time_factorize(self, backend: str) -> None:
        self.finish(row_factorization(self.xp.asarray(self.host.copy())))


class TimeScalarLoop(BackendBenchmark):
    """2 000 element reads and writes on arrays of 1 000 000 elements (never a full-array copy)."""

    params = [BACKENDS]
    timeout = 300

    def setup(self, backend: str) -> None:
        self.setup_backend(backend)
        self.a = self.xp.asarray(random_array(1_000_000, seed=6))
        self.out = self.xp.asarray(numpy.zeros(1_000_000))

    def time_scalars(self, backend: str) -> None:
        scalar_loop(self.xp, self.a, self.out, 2000)


class TimeOperationCost(BackendBenchmark):
    """CPU microseconds per recorded-and-launched elementwise operation on a device array.

    ``chained``: 100 steps of ``x = x * 0.999 + y`` as a loop runs them, launched where npgpu
    launches them (fused kernels of up to recorder.MAX_NODES operations), one ``sync`` at the end;
    ``fused``: the same with a launch forced every step and waited for (``sync``: the device's
    wait counts where the driver spins for it); ``eager`` (fusion off): every operation is its own
    launch. The arrays (10 000 elements) are on the device whatever their size (threshold 0) and
    stay there (pinned: residency moves nothing): this is the device path's own overhead.
    """

    params = [[b for b in BACKENDS if b != "numpy"], ["chained", "fused", "eager"]]
    param_names = ["backend", "mode"]
    unit = "us per operation"
    steps = 100

    def setup(self, backend: str, mode: str) -> None:
        self.setup_backend(backend, pinned=True, threshold=0, fusion=mode != "eager")
        self.x = self.xp.asarray(random_array(10_000, seed=7))
        self.y = self.xp.asarray(random_array(10_000, seed=8))
        self.track_cpu_per_operation(backend, mode)  # compiles the kernels outside the measurement

    def track_cpu_per_operation(self, backend: str, mode: str) -> float:
        x, y = self.x, self.y
        start = time.process_time()
        for _ in range(self.steps):
            x = x * 0.999 + y
            if mode != "chained":
                npgpu.sync()
        npgpu.sync()
        return (time.process_time() - start) / (2 * self.steps) * 1e6


#: one statement of each kind a loop body is made of, timed per execution by TimeStatementCost
STATEMENTS = {
    "view": "y[1:, :-1]",
    "inplace": "x -= y",
    "stencil": "x[1:, :] -= 0.5 * (y[1:, :] - y[:-1, :])",
    "strided_stencil": "x[:-1, :-1] -= 0.7 * (y[:-1, 1:] - y[:-1, :-1] + y[1:, :-1] - y[:-1, :-1])",
    "cube_stencil": "w[1:-1, 1:-1, 1:-1] = 0.125 * (z[2:, 1:-1, 1:-1] + z[:-2, 1:-1, 1:-1] + z[1:-1, 2:, 1:-1]"
                    " + z[1:-1, :-2, 1:-1] + z[1:-1, 1:-1, 2:] + z[1:-1, 1:-1, :-2]) + 0.25 * z[1:-1, 1:-1, 1:-1]",
    "copied_stencil": "c = y.copy(); x[1:-1, 1:-1] = 0.25 * (c[1:-1, 2:] + c[1:-1, :-2] + c[2:, 1:-1] + c[:-2, 1:-1])",
    "broadcast": "x[...] = y * b + 1.0",
    "scalar_write": "x[3, 4] = 1.5",
    "scalar_read": "float(y[3, 4])",
    "sum": "float(y.sum())",
    "column_write": "x[1:, 0] = y[0, 1:]",
    "column_recursion": "x[:, 5] = 0.3 * y[:, 5] + 0.5 * x[:, 4] - 0.2 * x[:, 3]",
    "column_sweep": "j = _ % 196 + 2; x[:, j] = a1 * y[:, j] + a2 * y[:, j - 1] + b1 * x[:, j - 1] + b2 * x[:, j - 2]",
    "matvec": "y[:, 3] @ y[:, 4:]",
    "mask_select": "y[y > 0.5]",
    "mask_reused": "x[m], y[m]",
    "pixel_sum": "x[3, :8] = (y[:3, :, None] * w3).sum(axis=(0, 1))",
}


class TimeStatementCost(BackendBenchmark):
    """CPU microseconds per loop-body statement on device arrays of 200 x 200 (threshold 0): a view
    taken again (kept by the array: C's road where the extension is built), an in-place update, an
    in-place stencil of views (one fused kernel), one of strided views (fdtd_2d's ``hz`` update: the
    strided kernel), a seven-point stencil of 3-D views of a 40 x 40 x 40 cube (heat_3d's: the
    strided kernel in three dimensions), a stencil of a copy made each time written into a view (cavity_flow's pressure
    iteration: its leaves are new arrays every time), an expression broadcasting a row into a
    whole-array write (mlp's ``x @ w + b``: the strided kernel too), a scalar write and read, a
    whole-array sum read back, a row copied into a column (correlation's), a column computed from the
    two before it in the same array (deriche's filters: one kernel into the column), the same into the
    next column each time with NumPy float64 constants (deriche's sweep itself), a matrix-vector product
    of column views (correlation's), a mask's selection (mandelbrot2's), two arrays selected by
    one mask made before the loop (mandelbrot2's ``Xi[I], Yi[I]``) and a map-reduce over a tuple
    of axes with small host weights, written into a row (resnet's pixel). What a loop of such
    statements pays beyond its kernels (fdtd_2d's are the stencil kind). The arrays stay on the
    device (pinned): residency would rightly move most of them to the host after a few hundred
    such statements on 320 kB, and the figures would be NumPy's (an H100 run of 2026-12-05, not
    pinned: a scalar write at 1 us).
    On a CPU OpenCL device (PoCL) the kernels run on this process's threads: their work is CPU
    time here too, so only a GPU's figures are the statements' overhead alone."""

    params = [[b for b in BACKENDS if b != "numpy"], list(STATEMENTS)]
    param_names = ["backend", "statement"]
    unit = "us per statement"
    repeats = 200

    def setup(self, backend: str, statement: str) -> None:
        self.setup_backend(backend, pinned=True, threshold=0)
        self.scope = {"x": self.xp.asarray(random_array(40_000, seed=9).reshape(200, 200)),
                      "y": self.xp.asarray(random_array(40_000, seed=10).reshape(200, 200))}
        self.scope["z"] = self.xp.asarray(random_array(64_000, seed=16).reshape(40, 40, 40))
        self.scope["w"] = self.xp.asarray(random_array(64_000, seed=17).reshape(40, 40, 40))
        self.scope["m"] = self.scope["y"] > 0.5
        self.scope["b"] = self.xp.asarray(random_array(200, seed=11))
        self.scope["w3"] = random_array(4_800, seed=12).reshape(3, 200, 8)  # (a host array, as resnet's weights)
        self.scope.update(zip(("a1", "a2", "b1", "b2"), map(numpy.float64, (0.3, 0.2, 0.5, -0.2))))
        self.code = compile(f"for _ in range({self.repeats}):\n    {STATEMENTS[statement]}\n", "statement", "exec")
        self.track_cpu_per_statement(backend, statement)  # compiles the kernels outside the measurement

    def track_cpu_per_statement(self, backend: str, statement: str) -> float:
        start = time.process_time()
        exec(self.code, self.scope)
        npgpu.sync()
        return (time.process_time() - start) / self.repeats * 1e6
