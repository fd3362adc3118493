"""asv benchmarks: NumPy against npgpu's OpenCL backend for a ufunc, a reduction and matmul.

Compiles in setup; every timed body waits for the device (sync) before returning.
"""

import numpy


def _backend():
    try:
        from npgpu.backends.opencl import OpenCLBackend
    except ImportError as exc:
        raise NotImplementedError(f"pyopencl missing: {exc}") from None
    if OpenCLBackend.unavailable_reason():
        raise NotImplementedError(OpenCLBackend.unavailable_reason())
    return OpenCLBackend()


class Ufunc:
    params = (["numpy", "opencl"], ["add", "sin"], [10**4, 10**6, 10**7])
    param_names = ["impl", "ufunc", "n"]

    def setup(self, impl, ufunc, n):
        self.uf = getattr(numpy, ufunc)
        x = numpy.random.default_rng(0).random(n)
        self.args = (x, x + 1)[: self.uf.nin]
        self.out = numpy.empty(n)
        if impl == "opencl":
            self.cl = _backend()
            self.args = tuple(self.cl.from_host(a) for a in self.args)
            self.out = self.cl.empty((n,), numpy.float64)
            self.time_ufunc(impl, ufunc, n)  # compile outside the timing

    def time_ufunc(self, impl, ufunc, n):
        if impl == "numpy":
            self.uf(*self.args, out=self.out)
        else:
            self.cl.ufunc_call(self.uf, self.args, out=(self.out,))
            self.cl.sync()


class Sum:
    params = (["numpy", "opencl"], [10**4, 10**6, 10**7])
    param_names = ["impl", "n"]

    def setup(self, impl, n):
        self.x = numpy.random.default_rng(0).random(n)
        if impl == "opencl":
            self.cl = _backend()
            self.x = self.cl.from_host(self.x)
            self.time_sum(impl, n)

    def time_sum(self, impl, n):
        if impl == "numpy":
            self.x.sum()
        else:
            self.cl.to_host(self.cl.reduction("sum", self.x))  # a 0-d device array: read it, as NumPy returns a scalar


class Matmul:
    params = (["numpy", "opencl"], ["float32", "float64"], [100, 1000])  # n x n: 1e4 and 1e6 elements
    param_names = ["impl", "dtype", "n"]

    def setup(self, impl, dtype, n):
        self.a = numpy.random.default_rng(0).random((n, n)).astype(dtype)
        if impl == "opencl":
            self.cl = _backend()
            self.a = self.cl.from_host(self.a)
            self.time_matmul(impl, dtype, n)

    def time_matmul(self, impl, dtype, n):
        if impl == "numpy":
            self.a @ self.a
        else:
            self.cl.matmul(self.a, self.a)
            self.cl.sync()


def _e8(xp, a, b, c):
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


class E8:
    """E8 written as eager NumPy code: NumPy against npgpu-opencl on arrays already on the device
    (recorded, fused into one kernel, synchronized). Issue 4's CPU target: float64 at 10^7."""

    params = (["numpy", "npgpu-opencl"], ["float32", "float64"], [10**6, 10**7])
    param_names = ["impl", "dtype", "n"]
    timeout = 300

    def setup(self, impl, dtype, n):
        hosts = [numpy.random.default_rng(seed).random(n).astype(dtype) for seed in (1, 2, 3)]
        self.state = None
        if impl == "numpy":
            self.xp, self.args, self.sync = numpy, hosts, lambda: None
            return
        _backend()  # skips where OpenCL can't run
        import npgpu

        self.state = npgpu.enable("opencl", threshold=0)
        self.xp, self.sync = npgpu, npgpu.sync
        self.args = [npgpu.asarray(h) for h in hosts]
        self.time_e8(impl, dtype, n)  # compile outside the timing

    def teardown(self, impl, dtype, n):
        if self.state is not None:
            self.state.__exit__(None, None, None)

    def time_e8(self, impl, dtype, n):
        result = _e8(self.xp, *self.args)
        self.sync()
        return result


class ComplexUfunc(Ufunc):
    """complex128 ufuncs: NumPy's loops against the OpenCL kernels of kernels/complexmath.py."""

    params = (["numpy", "opencl"], ["multiply", "divide", "absolute", "exp"], [10**4, 10**6])
    param_names = ["impl", "ufunc", "n"]

    def setup(self, impl, ufunc, n):
        self.uf = getattr(numpy, ufunc)
        rng = numpy.random.default_rng(0)
        z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        self.args = (z, z[::-1].copy())[: self.uf.nin]
        self.out = numpy.empty(n, self.uf(*(a[:1] for a in self.args)).dtype)
        if impl == "opencl":
            self.cl = _backend()
            self.args = tuple(self.cl.from_host(a) for a in self.args)
            self.out = self.cl.empty((n,), self.out.dtype)
            self.time_ufunc(impl, ufunc, n)  # compile outside the timing
