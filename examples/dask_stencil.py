"""A chunked heat-equation stencil with Dask: Dask schedules, npgpu computes each chunk on its
worker's device (one device per worker), and the answer is checked against NumPy chunks.

Usage:
  python dask_stencil.py [grid_size] [chunks_per_side] [steps] [--scheduler local|cuda|threads]

  local    a distributed.LocalCluster of 2 worker processes on the OpenCL device (NPGPU_BACKEND
           in the workers' environment; NPGPU_OPENCL_DEVICE picks a device per worker);
  cuda     dask_cuda.LocalCUDACluster: one worker per GPU (it sets CUDA_VISIBLE_DEVICES per
           worker, so each worker's CUDA device 0 is its own GPU), NPGPU_BACKEND=cupy;
  threads  Dask's threaded scheduler in this process (its threads use NPGPU_BACKEND, the
           process default: run it as NPGPU_BACKEND=opencl python dask_stencil.py ...).
"""

from __future__ import annotations

import os
import sys
import time

import dask.array as da
import numpy

import npgpu

ALPHA = 0.2  # dt * diffusivity / dx**2 (stable below 0.25)


def step(block):
    """One explicit step on a block with a 1-cell halo (the halo rows and columns come back unchanged)."""
    out = block.copy()
    interior = block[1:-1, 1:-1]
    laplacian = block[2:, 1:-1] + block[:-2, 1:-1] + block[1:-1, 2:] + block[1:-1, :-2] - 4.0 * interior
    out[1:-1, 1:-1] = interior + ALPHA * laplacian
    return out


def solve(u: da.Array, steps: int) -> da.Array:
    for _ in range(steps):
        u = u.map_overlap(step, depth=1, boundary=0.0)
    return u


def start(scheduler: str):
    """The Dask client for ``scheduler`` (None for the threaded scheduler)."""
    if scheduler == "threads":
        return None
    env = {"NPGPU_BACKEND": "opencl" if scheduler == "local" else "cupy", "NPGPU_THRESHOLD": "0"}
    # The workers import this script before LocalCluster(env=...) reaches them: set the
    # variables before they start (a spawned process inherits them).
    os.environ.update(env)
    if scheduler == "cuda":
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster()
    else:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    from distributed import Client

    return Client(cluster)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    scheduler = "local"
    if "--scheduler" in sys.argv:
        scheduler = sys.argv[sys.argv.index("--scheduler") + 1]
        args.remove(scheduler)
    n = int(args[0]) if args else 1024
    per_side = int(args[1]) if len(args) > 1 else 2
    steps = int(args[2]) if len(args) > 2 else 10
    client = start(scheduler)
    backend = "opencl" if scheduler in ("local", "threads") else "cupy"
    grid = numpy.zeros((n, n))
    grid[n // 4: 3 * n // 4, n // 4: 3 * n // 4] = 100.0
    host = da.from_array(grid, chunks=n // per_side)
    with npgpu.enable(backend):  # (the meta of device chunks is made here)
        device = host.to_backend("npgpu")
    t0 = time.perf_counter()
    got = npgpu.asnumpy(solve(device, steps).compute())
    t1 = time.perf_counter()
    want = solve(host, steps).compute()
    t2 = time.perf_counter()
    if client is not None:
        done = client.run(lambda: npgpu.report().as_dict()["totals"]["device"])
        print(f"workers     {len(done)}, device calls per worker {sorted(done.values())}")
        client.close()
    print(f"grid        {n}x{n} in {per_side}x{per_side} chunks, {steps} steps, scheduler {scheduler}")
    print(f"heat left   {got.sum() / grid.sum():.6f}")
    print(f"equal       {bool(numpy.array_equal(got, want))} (npgpu chunks vs NumPy chunks)")
    print(f"seconds     npgpu chunks {t1 - t0:.3f}, NumPy chunks {t2 - t1:.3f}")


if __name__ == "__main__":
    main()
