"""What residency charged and judged on an NPBench row, call by call, and NumPy's rates on this host.

On the H100 (twenty-fourth session) resnet's conv2 pixel loop stayed on the device at 106 us a
pixel against NumPy's 77: residency's estimate credited the device. This prints, on the machine
it runs on, NumPy's add rate by size (the cost model's 8 MiB rate and the cached one,
npgpu/backends/costs.py), NumPy's time for resnet's per-pixel product and sum, and for each of
``--calls`` calls of the row (NumPy's call first, then npgpu's): the judged windows (wall time,
estimated excess, NumPy's estimated time, arrays moved) and the charges added to them by kind
(view and element reads, writes, conversions, uploads, kernels: count, excess, NumPy's
estimate), then which rule placed the row's busiest lines. ``--large-rate-only`` drops the
measured cached rate (the model before 66040f7); ``--numpy-share`` and ``--over-numpy`` set
residency's NUMPY_SHARE and OVER_NUMPY (``--over-numpy inf``: the rule before it).

``python tools/probe_residency.py --backend cupy --preset L [--row resnet] [--calls 4]``

NPBench's kernels are read from ``--root`` at run time (third-party code for measuring, never
copied here), as tools/npbench_interleaved.py reads them.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import time
import timeit
import warnings
from pathlib import Path
from typing import Any

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import npbench_interleaved as bench  # noqa: E402

import npgpu  # noqa: E402
from npgpu import _hooks, _residency  # noqa: E402


def _least(stmt: Any, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number


def numpy_rates() -> None:
    print("NumPy's add by size (a new result each time): us, GB/s of the result")
    for n in (10_000, 1 << 16, 73_728, 1 << 18, 1 << 20, 1 << 22):
        a, b = numpy.random.rand(n), numpy.random.rand(n)
        s = _least(lambda a=a, b=b: a + b, max(3, 2_000_000 // n))
        print(f"  {n * 8 / 1e3:9.0f} kB  {s * 1e6:9.1f} us  {n * 8 / s / 1e9:6.1f} GB/s")
    x, w = numpy.random.rand(8, 58, 58, 32), numpy.random.rand(3, 3, 32, 32)
    product = x[:, 10:13, 10:13, :, None] * w[None]
    for name, stmt in (("product", lambda: x[:, 10:13, 10:13, :, None] * w[None]),
                       ("sum", lambda: product.sum(axis=(1, 2, 3))),
                       ("both", lambda: numpy.sum(x[:, 10:13, 10:13, :, None] * w[None], axis=(1, 2, 3)))):
        print(f"  resnet's pixel {name} (590 kB product): {_least(stmt, 200) * 1e6:.1f} us")


class Charges:
    """Residency's charges by kind while installed: count, excess and NumPy's estimate."""

    def __init__(self) -> None:
        self.kinds: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
        self._add, self._kernel = _residency._add, _residency.charge_kernel

    def install(self) -> None:
        def add(ledger: Any, excess: float, numpy_s: float = 0.0) -> None:
            caller = sys._getframe(1).f_code.co_name
            if caller == "_charge":
                caller = sys._getframe(2).f_code.co_name
            self._note(caller, excess, numpy_s)
            self._add(ledger, excess, numpy_s)

        def kernel(backend: Any, ops: int, nbytes: int, seconds: float = 0.0, computed: Any = None,
                   inputs: Any = ()) -> None:
            window = _residency._Window
            excess, numpy_s = window.excess, window.numpy_s
            self._kernel(backend, ops, nbytes, seconds, computed, inputs)
            if window.excess != excess or window.numpy_s != numpy_s:  # (what residency's own charge added)
                self._note("kernel", window.excess - excess, window.numpy_s - numpy_s)
                self._note("kernel: launch took / device_op_s", seconds, backend.costs.device_op_s(nbytes))

        _residency._add = add
        _residency.charge_kernel = _hooks.core.charge_kernel = kernel

    def remove(self) -> None:
        _residency._add = self._add
        _residency.charge_kernel = _hooks.core.charge_kernel = self._kernel

    def _note(self, kind: str, excess: float, numpy_s: float) -> None:
        entry = self.kinds[kind]
        entry[0] += 1
        entry[1] += excess
        entry[2] += numpy_s

    def print(self) -> None:
        for kind, (n, excess, numpy_s) in sorted(self.kinds.items()):
            print(f"    {kind:36s} n={n:6d}  {excess * 1e3:9.2f} ms  NumPy {numpy_s * 1e3:9.2f} ms  "
                  f"each {excess / max(n, 1) * 1e6:8.2f} / {numpy_s / max(n, 1) * 1e6:8.2f} us")
        self.kinds.clear()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "npbench")
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--preset", default="L")
    parser.add_argument("--row", default="resnet")
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--large-rate-only", action="store_true")
    parser.add_argument("--numpy-share", type=float)
    parser.add_argument("--over-numpy", type=float)
    options = parser.parse_args(argv)
    numpy_rates()
    if options.numpy_share is not None:
        _residency.NUMPY_SHARE = options.numpy_share
    if options.over_numpy is not None:
        _residency.OVER_NUMPY = options.over_numpy
    info = json.loads((options.root / "bench_info" / f"{options.row}.json").read_text())["benchmark"]
    folder = options.root / "npbench" / "benchmarks" / info["relative_path"]
    kernel = folder / f"{info['module_name']}_numpy.py"
    data = bench.inputs(info, folder, options.preset)
    plain = getattr(bench.load(kernel, "_probe_numpy", False), info["func_name"])
    accelerated = getattr(bench.load(kernel, "_probe_npgpu", True), info["func_name"])
    charges = Charges()
    with warnings.catch_warnings(), npgpu.enable(options.backend):
        warnings.simplefilter("ignore")
        npgpu.asarray(numpy.ones(4)) + 1  # noqa: B018  (the backend is made and calibrated)
        backend = npgpu._config.current().backend
        if options.large_rate_only and backend.costs is not None:
            backend.costs = dataclasses.replace(backend.costs, host_cached_bytes_per_s=None)
        print(f"costs: {backend.costs}; NUMPY_SHARE {_residency.NUMPY_SHARE:.2f}, "
              f"OVER_NUMPY {_residency.OVER_NUMPY:.2f}")
        charges.install()
        try:
            for call in range(options.calls):
                _residency.history.clear()
                npgpu.report(reset=True)
                numpy_s, _ = bench.timed(plain, info, data, numpy.copy)
                cpu = time.process_time()
                npgpu_s, _ = bench.timed(accelerated, info, data, lambda v: npgpu.asarray(numpy.copy(v)))
                cpu = time.process_time() - cpu
                windows = list(_residency.history)
                print(f"call {call}: NumPy {numpy_s * 1e3:.1f} ms, npgpu {npgpu_s * 1e3:.1f} ms "
                      f"(CPU {cpu * 1e3:.1f}); {len(windows)} windows judged, "
                      f"{sum(w[3] for w in windows)} arrays moved")
                for took, excess, events, moved, numpy_est in windows[:4] + windows[4:][-2:]:
                    print(f"    window {took * 1e3:8.2f} ms: excess {excess / took:6.1%}, NumPy's estimate "
                          f"{numpy_est / took:6.1%}, {events} charges, {moved} moved")
                charges.print()
                lines = [line for line in str(npgpu.report()).splitlines() if kernel.name in line and "  " in line]
                print("\n".join(f"    {line.strip()}" for line in lines[-12:]))
        finally:
            charges.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
