"""NumPy against npgpu on NPBench's kernels, call by call in one process (drift cancels out).

``python tools/npbench_interleaved.py --backend cupy --preset L --only lu,seidel_2d [--rounds 5]``
loads the kernels from ``../shared/npbench`` (``--root``) at run time, as its ``run.py`` does: they
are third-party code for measuring and are never copied here. ``run.py`` times every NumPy call
of a row and then every npgpu call. On the H200's host the same NumPy kernel took 767 ms and then
856-929 ms in one process (sixteenth session), so a row whose npgpu calls are NumPy's own work (a
loop residency moved to the host) read 0.83x. Here, after one npgpu call (where compilation and
residency's learning happen), each round times NumPy and npgpu back to back, in alternating
order, on fresh copies of the inputs; the ratio of the medians and the median of the per-round
ratios are printed. Each npgpu answer is checked against NumPy's (NPBench's tolerance).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import npgpu  # noqa: E402
from npgpu.legacy import legacy_builtins  # noqa: E402


def load(path: Path, name: str, accelerated: bool) -> types.ModuleType:
    """The kernel module at ``path``; with ``accelerated``, its imports of NumPy give npgpu, as
    ``npgpu run`` gives an unmodified script (the source is not changed)."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    if accelerated:
        module.__dict__["__builtins__"] = legacy_builtins()
    sys.modules[name] = module
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102  (NPBench's kernel files)
    return module


def inputs(info: dict[str, Any], folder: Path, preset: str) -> dict[str, Any]:
    """The kernel's arguments at ``preset``, made by NPBench's own initializer."""
    data = dict(info["parameters"][preset])
    init = info.get("init")
    if init:
        module = load(folder / f"{info['module_name']}.py", f"_npb_init_{info['module_name']}", False)
        made = getattr(module, init["func_name"])(*[data[a] for a in init["input_args"]])
        names = init["output_args"]
        data.update(zip(names, (made,) if len(names) == 1 else made, strict=True))
    return data


def outputs(info: dict[str, Any], returned: Any, args: dict[str, Any]) -> list[numpy.ndarray]:
    """What the kernel returned and the arrays it wrote, as host arrays."""
    found = [] if returned is None else list(returned) if isinstance(returned, tuple) else [returned]
    found += [args[a] for a in info["output_args"]]
    return [numpy.asarray(x) for x in found]


def agrees(expected: list[numpy.ndarray], got: list[numpy.ndarray]) -> bool:
    """NPBench's check: equal shapes, and close, or a relative error below 1e-5."""
    for e, g in zip(expected, got, strict=True):
        if e.shape != g.shape:
            return False
        if not numpy.allclose(e, g, rtol=1e-5, atol=1e-8, equal_nan=True):
            e64 = e.astype(numpy.complex128 if numpy.iscomplexobj(e) else numpy.float64)
            norm = numpy.linalg.norm(e64)
            error = numpy.linalg.norm(e64 - g.astype(e64.dtype))
            if not error / (norm or 1.0) < 1e-5:
                return False
    return True


def timed(func: Any, info: dict[str, Any], data: dict[str, Any], copy: Any) -> tuple[float, list[numpy.ndarray]]:
    """One call on fresh copies of the array arguments: (seconds, outputs)."""
    args = {a: copy(data[a]) if a in info["array_args"] else data[a] for a in info["input_args"]}
    npgpu.sync()
    start = time.perf_counter()
    returned = func(*[args[a] for a in info["input_args"]])
    npgpu.sync()
    seconds = time.perf_counter() - start
    return seconds, outputs(info, returned, args)


def row(name: str, root: Path, backend: str, preset: str, rounds: int) -> dict[str, Any]:
    """One kernel: NumPy's and npgpu's calls interleaved, with the report of npgpu's last call."""
    info = json.loads((root / "bench_info" / f"{name}.json").read_text())["benchmark"]
    folder = root / "npbench" / "benchmarks" / info["relative_path"]
    kernel = folder / f"{info['module_name']}_numpy.py"
    data = inputs(info, folder, preset)
    plain = getattr(load(kernel, f"_npb_numpy_{name}", False), info["func_name"])
    accelerated = getattr(load(kernel, f"_npb_npgpu_{name}", True), info["func_name"])

    def handed_in(v: numpy.ndarray) -> Any:
        # One function for every npgpu call: placement learns where arrays are made by the line
        # that makes them, so the first call's learning must reach the rounds (a second lambda
        # here made the first round learn again: lu's first round took twice NumPy's time).
        return npgpu.asarray(numpy.copy(v))

    with warnings.catch_warnings(), npgpu.enable(backend):
        warnings.simplefilter("ignore")
        _, expected = timed(plain, info, data, numpy.copy)
        first, got = timed(accelerated, info, data, handed_in)
        ok = agrees(expected, got)
        times: dict[str, list[float]] = {"numpy": [], "npgpu": []}
        last_report = ""
        for r in range(rounds):
            order = ("numpy", "npgpu") if r % 2 == 0 else ("npgpu", "numpy")
            for which in order:
                if which == "numpy":
                    seconds, _ = timed(plain, info, data, numpy.copy)
                else:
                    npgpu.report(reset=True)  # (the counts only: what residency learned stays)
                    seconds, got = timed(accelerated, info, data, handed_in)
                    last_report = str(npgpu.report())
                    ok = ok and agrees(expected, got)
                times[which].append(seconds)
    numpy_s, npgpu_s = statistics.median(times["numpy"]), statistics.median(times["npgpu"])
    ratios = [n / g for n, g in zip(times["numpy"], times["npgpu"], strict=True)]
    return {"bench": name, "ok": ok, "numpy_s": numpy_s, "npgpu_s": npgpu_s, "npgpu_first_s": first,
            "speedup": numpy_s / npgpu_s, "round_speedup_median": statistics.median(ratios),
            "round_speedups": ratios, "numpy_times": times["numpy"], "npgpu_times": times["npgpu"],
            "last_report": last_report}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "npbench")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--preset", default="S")
    parser.add_argument("--only", required=True, help="comma-separated kernel names (bench_info/*.json)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--report", type=int, default=0, metavar="LINES",
                        help="print this many lines of npgpu.report() for each row's last npgpu call")
    options = parser.parse_args(argv)
    rows = []
    for name in filter(None, options.only.split(",")):
        result = row(name, options.root, options.backend, options.preset, options.rounds)
        rows.append(result)
        spread = ", ".join(f"{x:.2f}" for x in result["round_speedups"])
        print(f"{name:20s} ok={result['ok']!s:5s} numpy {result['numpy_s'] * 1e3:9.1f} ms  npgpu "
              f"{result['npgpu_s'] * 1e3:9.1f} ms  x{result['speedup']:6.2f}  rounds: {spread}", flush=True)
        if options.report:
            print("\n".join(result["last_report"].splitlines()[:options.report]), flush=True)
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
