"""asv benchmarks: NumPy against npgpu's OpenCL backend for a ufunc, a reduction and matmul.

Compiles in setup; every timed body waits for the device (sync) before returning.
"""

import numpy


def _backend():
    try:
        from npgpu.backends.opencl_backend import OpenCLBackend
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
