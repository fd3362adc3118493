"""Run the thread/task stress workload many times, and the pinned staging path many times, watched.

    python3 tools/stress_threads.py stress --backend opencl --runs 20
    python3 tools/stress_threads.py stress --backend cupy --runs 20 --threads 16 --steps 60
    python3 tools/stress_threads.py staging --runs 50 --fresh 20      # CuPy only

``stress``: tests/threads_workload.py's threads and asyncio tasks (fused work, reductions, indexing,
in-place updates, syncs) compared with NumPy; one line per run. ``staging``: E8 on three 400 MB
host arrays uploaded through the pinned staging threads and the answer downloaded, ``--runs`` times
in this process and ``--fresh`` times in fresh processes (the hang seen once came at a process's
first upload); each run under faulthandler.dump_traceback_later, so a hang prints every thread's
stack instead of waiting silently. Exit status 1 when any run failed.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]


def stress(opts: argparse.Namespace) -> int:
    from threads_workload import run_tasks, run_threads, timed

    failed = 0
    for run in range(opts.runs):
        faulthandler.dump_traceback_later(opts.hang_seconds, exit=True)
        problems, seconds = timed(run_threads, opts.backend, opts.threads, opts.steps, opts.switch_interval, seed=run)
        task_problems, task_seconds = timed(run_tasks, opts.backend, opts.threads, opts.steps // 2, seed=run)
        faulthandler.cancel_dump_traceback_later()
        problems += task_problems
        failed += bool(problems)
        status = "ok" if not problems else f"FAILED ({len(problems)}): {problems[0]}"
        print(f"stress {run + 1}/{opts.runs} {opts.backend} threads={opts.threads} steps={opts.steps} "
              f"switch={opts.switch_interval}: threads {seconds:.1f} s, tasks {task_seconds:.1f} s: {status}",
              flush=True)
        for problem in problems[1:5]:
            print("    " + problem, flush=True)
    print(f"stress: {opts.runs - failed} of {opts.runs} runs passed on {opts.backend}", flush=True)
    return 1 if failed else 0


def _e8_once(nbytes: int, seed: int) -> str:
    """Upload three host arrays of ``nbytes`` each, E8 on the device, download; check the answer.

    Two checks: each array downloaded back is bit-identical to its host original (the staging path
    itself), and E8 is NumPy's within 1e-12 relative and absolute (exp differs from the host's libm by
    an ulp, and E8's last subtraction can cancel to near zero, so a relative bound alone is not one).
    """
    import numpy

    import npgpu

    n = nbytes // 8
    rng = numpy.random.default_rng(seed)
    hosts = [rng.random(n) for _ in range(3)]
    start = time.perf_counter()
    with npgpu.enable("cupy"):
        a, b, c = (npgpu.asarray(h) for h in hosts)
        npgpu.sync()
        up = time.perf_counter() - start
        e8 = ((a * b + c) * a - b) / (c + 1.5) + npgpu.sqrt(npgpu.abs(a)) * 0.5 - npgpu.exp(-b)
        got = npgpu.asnumpy(e8)
        total = time.perf_counter() - start
        back = [npgpu.asnumpy(v) for v in (a, b, c)]
    x, y, z = hosts
    want = ((x * y + z) * x - y) / (z + 1.5) + numpy.sqrt(numpy.abs(x)) * 0.5 - numpy.exp(-y)
    staged = [int(numpy.count_nonzero(h != v)) for h, v in zip(hosts, back)]
    error = numpy.abs(got - want)
    ok = not any(staged) and numpy.allclose(got, want, rtol=1e-12, atol=1e-12)
    verdict = "ok" if ok else (f"WRONG ANSWER: elements changed by the round trip {staged}, "
                               f"E8 max error {error.max():.3g} at {int(error.argmax())}")
    return f"3 x {nbytes >> 20} MiB up {3 * nbytes / up / 1e9:.1f} GB/s, whole {total:.2f} s: {verdict}"


def staging(opts: argparse.Namespace) -> int:
    failed = 0
    nbytes = opts.mib << 20
    for run in range(opts.runs):
        faulthandler.dump_traceback_later(opts.hang_seconds, exit=True)
        try:
            line = _e8_once(nbytes, run)
        except Exception as exc:  # (reported, then the next run)
            line = f"FAILED: {type(exc).__name__}: {exc}"
        faulthandler.cancel_dump_traceback_later()
        failed += "ok" not in line
        print(f"staging {run + 1}/{opts.runs} (this process): {line}", flush=True)
    for run in range(opts.fresh):
        code = (f"import faulthandler, sys; sys.path[:0] = [{ROOT!r}, {os.path.join(ROOT, 'tools')!r}]; "
                f"faulthandler.dump_traceback_later({opts.hang_seconds}, exit=True); "
                f"import stress_threads; print(stress_threads._e8_once({nbytes}, {run}))")
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=opts.hang_seconds + 60)
            line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            if done.returncode or "ok" not in line:
                line = f"FAILED (exit {done.returncode}): {line} {done.stderr.strip()[-2000:]}"
        except subprocess.TimeoutExpired as exc:
            line = f"FAILED: no answer in {exc.timeout} s"
        failed += "FAILED" in line or "ok" not in line
        print(f"staging {run + 1}/{opts.fresh} (fresh process, {time.perf_counter() - start:.1f} s): {line}",
              flush=True)
    total = opts.runs + opts.fresh
    print(f"staging: {total - failed} of {total} runs passed", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("stress", "staging"))
    parser.add_argument("--backend", default="opencl", help="stress: emulated, opencl or cupy")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--switch-interval", type=float, default=1e-5, help="sys.setswitchinterval during a run")
    parser.add_argument("--fresh", type=int, default=0, help="staging: runs in fresh processes")
    parser.add_argument("--mib", type=int, default=400, help="staging: MiB per host array (three of them)")
    parser.add_argument("--hang-seconds", type=int, default=300, help="dump every thread's stack and exit after")
    opts = parser.parse_args(argv)
    return stress(opts) if opts.mode == "stress" else staging(opts)


if __name__ == "__main__":
    sys.exit(main())
