"""Speedup table of every examples/ script: `npgpu bench --json` per script, written as Markdown.

Usage: python -m benchmarks.examples_table --backend cupy [--size mid|large] [--repeat 3] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

from .bench_examples import EXAMPLES, MID_ARGS

#: Sizes where a GPU has enough work to show what it can do (minutes on a CPU).
LARGE_ARGS: dict[str, list[str]] = {
    "black_scholes.py": ["20000000"],
    "monte_carlo_pi.py": ["20000000"],
    "heat_equation.py": ["4096", "200"],
    "mandelbrot.py": ["3000", "100"],
    "nbody.py": ["4096", "5"],
    "kmeans.py": ["2000000", "16"],
    "game_of_life.py": ["4096", "100"],
    "mlp_forward.py": ["65536"],
    "logistic_regression.py": ["2000000", "100"],
    "wave_fft.py": ["16777216"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.examples_table", description=__doc__)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--size", choices=("mid", "large"), default="mid")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--out", default=None, help="default: benchmarks/results/examples-BACKEND-SIZE.md")
    parser.add_argument("--only", nargs="*", default=None, help="script names to run (default: all)")
    parser.add_argument("--random", choices=("auto", "numpy", "device"), default=None, help="passed to npgpu bench")
    opts = parser.parse_args(argv)
    sizes = MID_ARGS if opts.size == "mid" else LARGE_ARGS
    out = opts.out or os.path.join(os.path.dirname(__file__), "results", f"examples-{opts.backend}-{opts.size}.md")
    rows, failed = [], False
    for script, args in sorted(sizes.items()):
        if opts.only is not None and script not in opts.only:
            continue
        command = [sys.executable, "-m", "npgpu", "bench", "--json", "--backend", opts.backend]
        command += ["--random", opts.random] if opts.random else []
        command += ["--repeat", str(opts.repeat), "--warmup", str(opts.warmup), os.path.join(EXAMPLES, script), *args]
        sys.stderr.write(f"{script} {' '.join(args)}\n")
        proc = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        if proc.returncode == 2 or not proc.stdout.strip():
            rows.append(f"| {script} | {' '.join(args)} | run failed | | | |")
            failed = True
            continue
        doc = json.loads(proc.stdout)
        failed |= not doc["agree"]
        rows.append(
            f"| {script} | {' '.join(args)} | {doc['numpy']['median']:.3f} | {doc['npgpu']['median']:.3f} "
            f"| {doc['speedup']:.2f}x | {'yes' if doc['agree'] else 'NO'} |"
        )
        sys.stderr.write(rows[-1] + "\n")  # a row as soon as it is measured: long runs may be cut short
    header = [
        f"# npgpu examples, backend {opts.backend}, {opts.size} sizes",
        "",
        f"Median wall time of a fresh process (s), {opts.warmup} warm-up + {opts.repeat} runs; "
        f"{platform.node()}, Python {platform.python_version()}. Made by `python -m benchmarks.examples_table`.",
        "",
        "| script | args | numpy | npgpu | speedup | outputs agree |",
        "|---|---|---:|---:|---:|---|",
    ]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(header + rows) + "\n")
    sys.stdout.write("\n".join(header + rows) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
