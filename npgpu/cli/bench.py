"""``npgpu bench``: the script timed in fresh processes under NumPy and npgpu, outputs compared."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy

import npgpu
from npgpu import backends
from npgpu._config import RANDOM_MODES

from .run import _BACKEND_CHOICES, _enable, _split_at_script  # noqa: F401


@dataclass
class RunResult:
    """One finished process: its wall time, exit status, output and working directory."""

    seconds: float
    returncode: int
    stdout: str
    stderr: str
    workdir: str
    report: dict[str, Any] | None = None


@dataclass
class Timings:
    seconds: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        s = self.seconds
        return {"times": s, "median": statistics.median(s), "min": min(s), "max": max(s)}


_BENCH_VALUE_OPTIONS = {
    "--random",
    "--backend",
    "--repeat",
    "--warmup",
    "--rtol",
    "--atol",
    "--plot",
    "--ignore",
    "--timeout",
    "--stdin",
    "--python",
    "--on-fallback",
    "--threshold",
}
_BENCH_FLAGS = {"--json", "--keep", "--no-fusion", "-h", "--help"}


def _bench_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npgpu bench",
        description="Run a script in fresh processes under plain NumPy (python script.py) and under npgpu "
        "(npgpu run), time both, and check that stdout numbers and written .npy/.npz files agree. "
        "Options may come before or after the script; put '--' before script arguments that look like "
        "bench options. Exit status: 0 outputs agree, 1 they differ, 2 a run failed.",
    )
    parser.add_argument("--backend", default="auto", choices=_BACKEND_CHOICES, help="default: %(default)s")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of each first (default: %(default)s)")
    parser.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance (default: %(default)s)")
    parser.add_argument("--atol", type=float, default=1e-9, help="absolute tolerance (default: %(default)s)")
    parser.add_argument(
        "--ignore", action="append", default=[], metavar="REGEX", help="skip stdout lines matching REGEX (timings)"
    )
    parser.add_argument("--plot", default=None, metavar="FILE.png", help="draw the timings (matplotlib, Agg)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per run")
    parser.add_argument("--stdin", default=None, metavar="FILE", help="feed FILE to every run's stdin")
    parser.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    parser.add_argument("--on-fallback", default=None, choices=("ignore", "warn", "raise", "log"))
    parser.add_argument("--threshold", type=int, default=None, metavar="BYTES", help="passed to npgpu run")
    parser.add_argument("--no-fusion", action="store_true", help="passed to npgpu run")
    parser.add_argument("--random", choices=RANDOM_MODES, default=None,
                        help="passed to npgpu run (default 'auto': seeded scripts draw NumPy's numbers)")
    parser.add_argument("--keep", action="store_true", help="keep the runs' working directories")
    parser.add_argument("script")
    parser.add_argument("args", nargs="*")
    return parser


def _split_bench_tokens(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """Bench options (anywhere before '--') and the script with its arguments, in order."""
    options: list[str] = []
    script: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            script += tokens[i + 1 :]
            break
        name = token.split("=", 1)[0]
        if name in _BENCH_VALUE_OPTIONS:
            step = 1 if "=" in token else 2
            options += tokens[i : i + step]
            i += step
            continue
        if token in _BENCH_FLAGS:
            options.append(token)
        elif token.startswith("-") and not script:
            options.append(token)  # unknown option before the script: let argparse complain
        else:
            script.append(token)
        i += 1
    return options, script


def _cmd_bench(tokens: Sequence[str]) -> int:
    options, script_argv = _split_bench_tokens(tokens)
    parser = _bench_parser()
    if not script_argv:
        parser.parse_args(options)  # --help, or the "script is required" error
    opts = parser.parse_args([*options, "--", *script_argv])
    script = os.path.abspath(opts.script)
    if not os.path.isfile(script):
        parser.error(f"no such script: {opts.script}")
    if opts.repeat < 1 or opts.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")
    if opts.backend != "auto":
        reason = backends.unavailable_reason(opts.backend)
        if reason is not None:
            sys.stderr.write(f"npgpu bench: the {opts.backend} backend can't run here: {reason}\n")
            return 2
    stdin_bytes = b""
    if opts.stdin is not None:
        with open(opts.stdin, "rb") as f:
            stdin_bytes = f.read()

    commands = {
        "numpy": [opts.python, script, *opts.args],
        "npgpu": [opts.python, "-m", "npgpu", "run", "--backend", opts.backend]
        + (["--on-fallback", opts.on_fallback] if opts.on_fallback else [])
        + (["--threshold", str(opts.threshold)] if opts.threshold is not None else [])
        + (["--no-fusion"] if opts.no_fusion else [])
        + (["--random", opts.random] if opts.random else [])
        + ["--report-json", "REPORT", script, *opts.args],
    }
    env = _bench_env()
    timings = {mode: Timings() for mode in commands}
    reference: dict[str, RunResult] = {}
    differences: list[str] = []
    compared_files: list[str] = []
    suggestion: list[str] = []
    last_report: dict[str, Any] | None = None
    workdirs: list[str] = []
    progress = _Progress(opts.warmup + opts.repeat)
    try:
        for index in range(opts.warmup + opts.repeat):
            warm = index < opts.warmup
            # Alternate the two so that drift (thermal, caches, other load) hits both alike.
            for mode, command in commands.items():
                progress.step(mode, index, warm)
                result = _run_once(command, env, stdin_bytes, opts.timeout)
                workdirs.append(result.workdir)
                progress.done(result.seconds)
                if result.returncode != 0:
                    progress.clear()
                    sys.stderr.write(
                        f"npgpu bench: the {mode} run exited with status {result.returncode}\n"
                        f"  command: {' '.join(command)}\n{result.stderr}"
                    )
                    return 2
                if not warm:
                    timings[mode].seconds.append(result.seconds)
                if mode == "numpy":
                    reference.setdefault("numpy", result)
                else:
                    last_report = result.report
                    if not differences:
                        differences, compared_files = compare_runs(reference["numpy"], result, opts)
                        if differences:
                            suggestion = ignore_suggestion(reference["numpy"].stdout, result.stdout, opts.rtol,
                                                           opts.atol, opts.ignore)
    finally:
        progress.clear()
        if not opts.keep:
            for path in workdirs:
                shutil.rmtree(path, ignore_errors=True)

    startup = _startup_seconds(commands, script, env)
    numpy_t, npgpu_t = timings["numpy"].summary(), timings["npgpu"].summary()
    result_doc = {
        "script": opts.script,
        "args": opts.args,
        "backend": (last_report or {}).get("backend") or opts.backend,
        "requested_backend": opts.backend,
        "warmup": opts.warmup,
        "repeat": opts.repeat,
        "numpy": numpy_t,
        "npgpu": npgpu_t,
        "speedup": numpy_t["median"] / npgpu_t["median"] if npgpu_t["median"] > 0 else math.inf,
        "agree": not differences,
        "differences": differences,
        "files_compared": compared_files,
        "rtol": opts.rtol,
        "atol": opts.atol,
        "report": (last_report or {}).get("report"),
        "startup": startup,
        "ignore_suggestion": suggestion if differences and not any(d.startswith("file ") for d in differences)
        else [],
    }
    result_doc["diagnosis"] = diagnosis(result_doc) if result_doc["speedup"] < 1 else []
    if opts.plot:
        _plot(result_doc, opts.plot)
    if opts.json:
        json.dump(result_doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_bench_table(result_doc, (last_report or {}).get("text")))
    return 0 if not differences else 1


def _startup_seconds(commands: dict[str, list[str]], script: str, env: dict[str, str]) -> dict[str, float]:
    """Fastest of three runs of a script that only imports numpy, per mode: the fixed cost in every timing."""
    fd, empty = tempfile.mkstemp(suffix=".py", prefix="npgpu-startup-")
    with os.fdopen(fd, "w") as f:
        f.write("import numpy\n")
    try:
        found = {}
        for mode, command in commands.items():
            probe = [empty if part == script else part for part in command[: command.index(script) + 1]]
            runs = [_run_once(probe, env, b"", 60) for _ in range(3)]
            for run in runs:
                shutil.rmtree(run.workdir, ignore_errors=True)
            found[mode] = min(run.seconds for run in runs)
        return found
    finally:
        os.unlink(empty)


def _bench_env() -> dict[str, str]:
    env = dict(os.environ)
    # Plots must never open a window in a timed run.
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("PYTHONHASHSEED", "0")
    # The npgpu run must import this npgpu even from a temporary working directory
    # when it is used from a checkout rather than installed.

    root = os.path.dirname(os.path.dirname(os.path.abspath(npgpu.__file__ or "")))
    if root not in {os.path.abspath(p) for p in site.getsitepackages()}:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # NPGPU_BACKEND would turn acceleration on in the plain-NumPy reference run too.
    env.pop("NPGPU_BACKEND", None)
    return env


def _run_once(command: list[str], env: dict[str, str], stdin: bytes, timeout: float | None) -> RunResult:
    workdir = tempfile.mkdtemp(prefix="npgpu-bench-")
    report_path = os.path.join(tempfile.gettempdir(), f"npgpu-report-{os.getpid()}-{time.monotonic_ns()}.json")
    command = [report_path if part == "REPORT" else part for part in command]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, input=stdin, capture_output=True, cwd=workdir, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        seconds = time.perf_counter() - start
        stderr = (exc.stderr or b"").decode(errors="replace") + f"\n[timed out after {timeout} s]\n"
        return RunResult(seconds, 124, (exc.stdout or b"").decode(errors="replace"), stderr, workdir)
    seconds = time.perf_counter() - start
    report = None
    if os.path.exists(report_path):
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        os.unlink(report_path)
    return RunResult(
        seconds,
        proc.returncode,
        proc.stdout.decode(errors="replace"),
        proc.stderr.decode(errors="replace"),
        workdir,
        report,
    )


class _Progress:
    """One line on stderr per run (rewritten in place on a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()
        self.dirty = False

    def step(self, mode: str, index: int, warm: bool) -> None:
        kind = "warm-up" if warm else "run"
        text = f"npgpu bench: {mode:<5} {kind} {index + 1}/{self.total} ..."
        sys.stderr.write(("\r\033[K" + text) if self.tty else text)
        sys.stderr.flush()
        self.dirty = True

    def done(self, seconds: float) -> None:
        sys.stderr.write(f" {seconds:.3f} s" + ("" if self.tty else "\n"))
        sys.stderr.flush()

    def clear(self) -> None:
        if self.tty and self.dirty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self.dirty = False


# Numbers not glued to an identifier (so "float64" and "x1" stay words).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w.])", re.IGNORECASE)
_INT = re.compile(r"[-+]?\d+")
_TEXT_SUFFIXES = {".txt", ".csv", ".tsv", ".json", ".dat", ".out"}


def compare_text(
    expected: str, actual: str, rtol: float = 1e-6, atol: float = 1e-9, ignore: Sequence[str] = ()
) -> list[str]:
    """Differences between two outputs: words exactly, numbers within ``atol + rtol*|expected|``.

    Integers (no point, no exponent) on both sides must be equal; runs of spaces are
    not significant (NumPy pads array printouts according to the values).
    """
    patterns = [re.compile(p) for p in ignore]
    keep = [
        [line for line in text.splitlines() if not any(p.search(line) for p in patterns)] for text in (expected, actual)
    ]
    if len(keep[0]) != len(keep[1]):
        return [f"{len(keep[0])} lines expected, {len(keep[1])} lines printed"]
    diffs: list[str] = []
    for lineno, (want, got) in enumerate(zip(*keep, strict=True), start=1):
        if not _line_agrees(want, got, rtol, atol):
            diffs.append(f"line {lineno}: expected {want.strip()!r}, got {got.strip()!r}")
    return diffs


def _line_agrees(want: str, got: str, rtol: float, atol: float) -> bool:
    if want == got:
        return True
    want_numbers, got_numbers = _NUMBER.findall(want), _NUMBER.findall(got)
    want_words, got_words = _NUMBER.split(want), _NUMBER.split(got)
    if len(want_numbers) != len(got_numbers):
        return False
    if any(" ".join(a.split()) != " ".join(b.split()) for a, b in zip(want_words, got_words, strict=True)):
        return False
    return all(_numbers_agree(a, b, rtol, atol) for a, b in zip(want_numbers, got_numbers, strict=True))


def _numbers_agree(want: str, got: str, rtol: float, atol: float) -> bool:
    if _INT.fullmatch(want) and _INT.fullmatch(got):
        return int(want) == int(got)
    a, b = float(want), float(got)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(a)


def compare_arrays(name: str, want: Any, got: Any, rtol: float, atol: float) -> list[str]:
    """Differences between two host arrays: dtype and shape exactly, values within tolerance."""
    if want.dtype != got.dtype:
        return [f"{name}: dtype {want.dtype} expected, got {got.dtype}"]
    if want.shape != got.shape:
        return [f"{name}: shape {want.shape} expected, got {got.shape}"]
    if want.dtype.kind in "fc":
        close = numpy.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = want == got
    if numpy.all(close):
        return []
    bad = numpy.argwhere(~numpy.asarray(close))
    first = tuple(int(i) for i in bad[0])
    return [
        f"{name}: {len(bad)} of {want.size} values differ, first at {first}: "
        f"expected {want[first]!r}, got {got[first]!r}"
    ]


def compare_runs(want: RunResult, got: RunResult, opts: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Differences between the NumPy run and an npgpu run: stdout, then files they wrote."""
    diffs = [f"stdout {d}" for d in compare_text(want.stdout, got.stdout, opts.rtol, opts.atol, opts.ignore)]
    want_files, got_files = _written_files(want.workdir), _written_files(got.workdir)
    for name in sorted(want_files ^ got_files):
        side = "only the numpy run" if name in want_files else "only the npgpu run"
        diffs.append(f"file {name}: written by {side}")
    compared: list[str] = []
    for name in sorted(want_files & got_files):
        suffix = os.path.splitext(name)[1].lower()
        a, b = os.path.join(want.workdir, name), os.path.join(got.workdir, name)
        if suffix in (".npy", ".npz"):
            diffs += _compare_array_files(name, a, b, opts.rtol, opts.atol)
        elif suffix in _TEXT_SUFFIXES:
            with open(a, encoding="utf-8", errors="replace") as fa, open(b, encoding="utf-8", errors="replace") as fb:
                diffs += [f"file {name} {d}" for d in compare_text(fa.read(), fb.read(), opts.rtol, opts.atol)]
        else:
            continue
        compared.append(name)
    return diffs, compared


def _written_files(root: str) -> set[str]:
    found = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def _compare_array_files(name: str, a: str, b: str, rtol: float, atol: float) -> list[str]:
    # Never unpickle what a script wrote: object arrays are reported, not loaded.
    try:
        want, got = numpy.load(a, allow_pickle=False), numpy.load(b, allow_pickle=False)
    except ValueError as exc:
        return [f"file {name}: can't compare ({exc})"]
    if isinstance(want, numpy.ndarray) and isinstance(got, numpy.ndarray):
        return compare_arrays(f"file {name}", want, got, rtol, atol)
    if isinstance(want, numpy.ndarray) or isinstance(got, numpy.ndarray):
        return [f"file {name}: one run wrote an .npy, the other an .npz"]
    with want, got:
        keys_a, keys_b = set(want.files), set(got.files)
        if keys_a != keys_b:
            return [f"file {name}: arrays {sorted(keys_a)} expected, got {sorted(keys_b)}"]
        diffs: list[str] = []
        for key in sorted(keys_a):
            diffs += compare_arrays(f"file {name}[{key}]", want[key], got[key], rtol, atol)
        return diffs


#: Words that make a printed line a timing (which differs from run to run).
_TIMING_WORD = re.compile(r"(?<![\w.])(s|ms|us|µs|ns|sec|secs|seconds?|time[ds]?|timings?|elapsed|took|runtime|"
                          r"wall|duration|per ?sec(ond)?|it/s|[kmg]?flops|throughput)(?![\w])", re.IGNORECASE)


def ignore_suggestion(expected: str, actual: str, rtol: float = 1e-6, atol: float = 1e-9,
                      ignore: Sequence[str] = ()) -> list[str]:
    """``--ignore`` patterns for the differing stdout lines when every one of them is a timing
    (its words agree, only its numbers differ, and it says s, ms, time, elapsed, ...); [] when
    any other line differs."""
    patterns = [re.compile(p) for p in ignore]
    keep = [[line for line in text.splitlines() if not any(p.search(line) for p in patterns)]
            for text in (expected, actual)]
    if len(keep[0]) != len(keep[1]):
        return []
    found: list[str] = []
    for want, got in zip(*keep, strict=True):
        if _line_agrees(want, got, rtol, atol):
            continue
        words = _NUMBER.split(want)
        if (len(_NUMBER.findall(want)) != len(_NUMBER.findall(got)) or
                [" ".join(w.split()) for w in words] != [" ".join(w.split()) for w in _NUMBER.split(got)] or
                not _TIMING_WORD.search(" ".join(words))):
            return []
        prefix = words[0].strip()
        pattern = "^" + re.escape(prefix) if prefix else re.escape(next(w.strip() for w in words if w.strip()))
        if pattern not in found:
            found.append(pattern)
    return found


def _seconds(value: float) -> str:
    return f"{value:.3f} s" if value >= 0.01 else f"{value * 1e3:.2f} ms"


def diagnosis(doc: dict[str, Any]) -> list[str]:
    """Where the time went in an npgpu run slower than NumPy's, and hints at what would change it
    (read from the run's report: calls per place, transfers, waits, fallbacks by function)."""
    numpy_t, npgpu_t = doc["numpy"]["median"], doc["npgpu"]["median"]
    lines = [f"why npgpu was slower ({npgpu_t:.3f} s against NumPy's {numpy_t:.3f} s, median):"]
    hints: list[str] = []
    start = doc.get("startup") or {}
    extra_start = start.get("npgpu", 0.0) - start.get("numpy", 0.0)
    if start:
        lines.append(f"  start-up   npgpu {start['npgpu']:.3f} s, NumPy {start['numpy']:.3f} s (a script that only "
                     f"imports numpy): {extra_start:+.3f} s of the {npgpu_t - numpy_t:.3f} s difference")
    if extra_start > 0.5 * (npgpu_t - numpy_t):
        hints.append("start-up is most of the difference: a longer run (a larger size) amortizes it")
    backend = doc.get("backend")
    report = doc.get("report") or {}
    totals = report.get("totals") or {}
    if backend == "numpy":
        hints.append("the run was on the numpy backend, which is NumPy itself, so it can't be faster; "
                     + (npgpu.explain().hint or "run it on a device backend (--backend)"))
    if not totals:
        lines += ["  (no report from the npgpu run)"] + [f"  hint: {h}" for h in hints]
        return lines
    calls = totals["device"] + totals["host"] + totals["fallback"]
    share = 100 * totals["device"] / calls if calls else 0.0
    lines.append(f"  calls      {totals['device']} on the device ({share:.0f}%), {totals['host']} on the host, "
                 f"{totals['fallback']} fallbacks")
    moving, waiting = totals.get("transfer_seconds", 0.0), totals.get("device_wait_seconds", 0.0)
    lines.append(f"  transfers  {totals['bytes_to_device'] / 1e6:.1f} MB to the device, "
                 f"{totals['bytes_to_host'] / 1e6:.1f} MB to the host: {_seconds(moving)} moving them")
    lines.append(f"  device     {_seconds(waiting)} waiting for device work at transfers (the kernels' run time)")
    kernels = report.get("kernels") or {}
    if kernels.get("kernels_launched"):
        lines.append(f"  fusion     {kernels['kernels_launched']:g} fused kernels ran {kernels.get('ops_fused', 0):g} "
                     f"operations; launching them took {_seconds(kernels.get('fused_seconds', 0.0))} "
                     "(building new kernels included)")
    functions = report.get("functions") or {}
    fallbacks = sorted(((c["fallback"], name, c.get("reasons") or {}) for name, c in functions.items()
                        if c["fallback"]), reverse=True)
    for n, name, reasons in fallbacks[:5]:
        reason = max(reasons, key=reasons.get) if reasons else "?"
        lines.append(f"  fallback   {name} x{n}: {reason}")
    hosts = sorted(((c["host"], name) for name, c in functions.items() if c["host"]), reverse=True)
    if hosts and backend != "numpy":
        lines.append("  host       " + ", ".join(f"{name} x{n}" for n, name in hosts[:5]))
    if fallbacks:
        hints.append("each fallback runs in NumPy and moves its operands off the device and back: the functions "
                     "above are the ones to replace or avoid (README: What falls back, and why)")
    if backend != "numpy" and calls and share < 50:
        hints.append("most calls stayed on the host: arrays below the placement thresholds (npgpu info) stay in "
                     "NumPy; --threshold BYTES moves smaller ones too (it pays for large arrays only)")
    if moving > 0.1 * npgpu_t:
        hints.append(f"moving data took {_seconds(moving)}: keep arrays on the device between calls (converting or "
                     "printing whole arrays, and host operands of device calls, move them)")
    if waiting > 0.25 * npgpu_t:
        hints.append(f"the device's own work took {_seconds(waiting)}: on a CPU device (PoCL) that is the computation "
                     "itself, which pays only for large fused elementwise work and reductions; a GPU runs it faster")
    if kernels.get("fused_seconds", 0.0) > 0.25 * npgpu_t:
        hints.append("launching fused kernels took a large share: the first run of a kernel builds it (PoCL and CUDA "
                     "cache built kernels between runs: see the warm-up runs)")
    if not hints:
        hints.append("none of the above stands out: run with --repeat 10 to see whether it is noise")
    return lines + [f"  hint: {h}" for h in hints]


def _bench_table(doc: dict[str, Any], report_text: str | None) -> str:
    args = " ".join(doc["args"])
    lines = [
        f"npgpu bench {doc['script']} {args}".rstrip(),
        f"  backend {doc['backend']}, {doc['warmup']} warm-up + {doc['repeat']} timed runs each, "
        "wall time of a fresh process",
        "",
        f"  {'':<8} {'median':>10} {'min':>10} {'max':>10}",
    ]
    for mode in ("numpy", "npgpu"):
        t = doc[mode]
        lines.append(f"  {mode:<8} {t['median']:>9.3f}s {t['min']:>9.3f}s {t['max']:>9.3f}s")
    verdict = "npgpu faster" if doc["speedup"] >= 1 else "npgpu slower"
    lines.append(f"  speedup  {doc['speedup']:.2f}x (numpy median / npgpu median: {verdict})")
    start = doc["startup"]
    lines.append(
        f"  startup  numpy {start['numpy']:.3f}s, npgpu {start['npgpu']:.3f}s "
        "(a script that only imports numpy; included in the times above)"
    )
    lines.append("")
    files = ", ".join(doc["files_compared"]) or "none written"
    if doc["agree"]:
        lines.append(f"  outputs agree (stdout within rtol={doc['rtol']:g}, atol={doc['atol']:g}; files: {files})")
    else:
        lines.append("  OUTPUTS DIFFER between numpy and npgpu:")
        lines += [f"    {d}" for d in doc["differences"][:20]]
        if len(doc["differences"]) > 20:
            lines.append(f"    ... {len(doc['differences']) - 20} more")
        if doc.get("ignore_suggestion"):
            options = " ".join(f"--ignore '{p}'" for p in doc["ignore_suggestion"])
            lines.append(f"  only lines that look like timings differ: to leave them out, run again with {options}")
    if report_text:
        lines += ["", "npgpu run report (last timed run):", report_text]
    if doc.get("diagnosis"):
        lines += [""] + doc["diagnosis"]
    return "\n".join(lines) + "\n"


def plot_title(doc: dict[str, Any]) -> str:
    """The plot's title: the script with its arguments, the ratio and whether it means faster."""
    command = " ".join([os.path.basename(doc["script"]), *doc["args"]])
    speedup = doc["speedup"]
    if speedup >= 1:
        verdict = f"npgpu {speedup:.2f}x faster than NumPy"
    else:
        verdict = f"npgpu {1 / speedup:.2f}x slower than NumPy ({speedup:.2f}x its speed)"
    agree = "outputs agree" if doc["agree"] else "OUTPUTS DIFFER"
    return f"{command} ({doc['backend']}): {verdict}, {agree}"


def _plot(doc: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    modes = ["numpy", f"npgpu ({doc['backend']})"]
    for y, key in enumerate(("numpy", "npgpu")):
        t = doc[key]
        ax.barh(y, t["median"], color=("#8c8c8c", "#2a7ab0")[y], height=0.6)
        ax.errorbar(t["median"], y, xerr=[[t["median"] - t["min"]], [t["max"] - t["median"]]], color="black", capsize=4)
        ax.plot(t["times"], [y] * len(t["times"]), "k.", alpha=0.5)
    ax.set_yticks([0, 1], modes)
    ax.set_xlabel("wall time of a fresh process [s] (bar: median, whiskers: min..max)")
    ax.set_title(plot_title(doc), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- info
