"""Can the GPU read pageable NumPy memory directly (HMM/ATS), and how fast?

If it can, an upload needs no host copy into pinned buffers (which the host's memory bandwidth
limits). ``python tools/probe_pageable.py`` prints the device attributes and, where direct
access is supported, the rate of a kernel copying a 64 MiB NumPy array into device memory.
"""

from __future__ import annotations

import time

import cupy
import numpy

PAGEABLE_MEMORY_ACCESS = 88  # cudaDevAttrPageableMemoryAccess
USES_HOST_PAGE_TABLES = 100  # cudaDevAttrPageableMemoryAccessUsesHostPageTables

if __name__ == "__main__":
    runtime = cupy.cuda.runtime
    access = runtime.deviceGetAttribute(PAGEABLE_MEMORY_ACCESS, 0)
    tables = runtime.deviceGetAttribute(USES_HOST_PAGE_TABLES, 0)
    print(f"pageable memory access: {access}, through host page tables: {tables}")
    if access:
        copy = cupy.RawKernel(r"""
extern "C" __global__ void pull(const double* __restrict__ src, double* __restrict__ dst, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}""", "pull")
        host = numpy.random.default_rng(0).random(8 << 20)
        dst = cupy.empty(host.shape, host.dtype)
        for attempt in range(4):
            start = time.perf_counter()
            copy((1024,), (256,), (numpy.uint64(host.ctypes.data), dst, numpy.int64(host.size)))
            cupy.cuda.get_current_stream().synchronize()
            seconds = time.perf_counter() - start
            print(f"  kernel reading the NumPy array, try {attempt}: {host.nbytes / seconds / 1e9:.1f} GB/s")
        print("  values equal:", bool(numpy.array_equal(dst.get(), host)))
