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
    }
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
    lines.append(f"  speedup  {doc['speedup']:.2f}x (numpy median / npgpu median)")
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
    if report_text:
        lines += ["", "npgpu run report (last timed run):", report_text]
    return "\n".join(lines) + "\n"


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
    verdict = "outputs agree" if doc["agree"] else "OUTPUTS DIFFER"
    ax.set_title(f"{os.path.basename(doc['script'])}: {doc['speedup']:.2f}x, {verdict}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- info
