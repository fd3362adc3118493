#!/usr/bin/env python3
"""Run the installed NumPy's own test files against npgpu: as NumPy, with npgpu off, and on each device.

Each file is copied twice into a build folder: unmodified (mode ``numpy``, the reference) and with its
array-namespace imports rewritten to npgpu (``import numpy as np`` becomes ``import npgpu as np``;
``numpy.testing``, ``numpy._core`` internals and the C-API test modules stay NumPy's). The rewritten
copy runs with acceleration off (mode ``off``: npgpu must then be NumPy) and under
``npgpu.enable(backend, threshold=0)`` on every device backend available (``emulated``, ``opencl``,
``cupy``), so that arrays the tests make live on the device. Every mode runs in its own pytest
processes (tools/numpy_suite_plugin.py records each test); the driver then compares the modes:

* a test that passes as NumPy and fails with npgpu off is an ``off`` failure;
* a test that passes with npgpu off and fails on a device is a device failure;
* either is *unexpected* unless tools/numpy_suite_expected.txt lists it (test id pattern, backends,
  reason). Unexpected failures and stale entries (listed, yet every matching test passed) make the
  exit status 1. Failures that are assertion errors on values (a wrong answer, not an exception)
  and missing errors (NumPy raises, npgpu returns) are listed first.

    python3 tools/numpy_suite.py                     # all six files, numpy + off + every device backend
    python3 tools/numpy_suite.py --sample 0.05 -j 2  # the deterministic 5% the CI test runs
    python3 tools/numpy_suite.py --modes off,opencl --files test_einsum.py --details
    python3 tools/numpy_suite.py --files lib/tests/test_function_base.py  # any of NumPy's test files
    python3 tools/numpy_suite.py --report-only       # compare the results of the last run again
    python3 tools/numpy_suite.py --groups            # failures grouped by signature, for triage
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(REPO))  # this checkout's npgpu, as in the test processes (not an installed one)

from numpy_suite_plugin import DEVICE_MODES, MODES  # noqa: E402  (tools/ is not a package)

FILES = ("test_umath.py", "test_ufunc.py", "test_numeric.py", "test_indexing.py", "test_shape_base.py",
         "test_einsum.py")
EXPECTED = TOOLS / "numpy_suite_expected.txt"
DEFAULT_BUILD = REPO / "build" / "numpy_suite"
#: NPY_AVAILABLE_MEM for the runs: numpy.testing skips the tests that declare they need more. Two do:
#: test_ufunc's 6 GB one, and test_shape_base's test_huge_list_error, which declares 4 GB and takes
#: 32 GB (a tuple and a list of 2**31 items): the kernel's OOM killer ended it on a 24 GB machine.
DEFAULT_MEMORY = "3 GB"
PASSED = ("passed", "xfailed", "xpassed")  # pytest-green: an xfail that still fails is NumPy's own mark
FAILED = ("failed", "error", "crashed", "hung")

# numpy.testing's warnings config is the source checkout's pytest.ini (not installed): warnings are errors,
# minus a few about NumPy's own deprecated corners. np.test() adds the same ignores on its command line.
PYTEST_INI = """\
[pytest]
filterwarnings =
    error
    ignore:Not importing directory
    ignore:numpy.dtype size changed
    ignore:numpy.ufunc size changed
    ignore:the matrix subclass is not
    ignore:Importing from numpy.matlib is
    # raised inside hypothesis' own failure reporting when mypy_extensions is installed (not NumPy's,
    # not npgpu's): without it a failing hypothesis test ends the whole run with an INTERNALERROR
    ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning
# The markers numpy.conftest registers, for a NumPy that doesn't ship it.
markers =
    slow
    slow_pypy
    leaks_references
    valgrind_error
    thread_unsafe
    parallel_threads(n)
    iterations(n)
"""


# ---------------------------------------------------------------------------------------------------------
# The rewrite: NumPy's array namespace becomes npgpu's, line numbers kept.

#: NumPy submodules npgpu mirrors (``npgpu.random`` ...); other submodules stay NumPy's.
MIRRORED_SUBMODULES = ("random", "linalg", "fft")


@dataclass
class Rewrite:
    line: int
    before: str
    after: str


def _npgpu_name(module: str, name: str) -> str | None:
    """The npgpu module that should supply ``from <module> import <name>``, or None to keep NumPy's.

    A name goes to npgpu when it is NumPy's public array namespace: anything ``from numpy import`` gives
    that is not a module (``ma``, ``testing`` stay NumPy's), anything of a mirrored submodule, and the
    names ``numpy._core`` re-exports that are the same object as ``numpy.<name>`` (``array``,
    ``concatenate``, ``newaxis`` ...). Private helpers (``numpy._core.shape_base._block_setup``,
    ``numpy._core._rational_tests``) stay NumPy's: they are what the tests test, not what they use.
    """
    import importlib
    import types

    import numpy

    try:
        source = importlib.import_module(module)
    except ImportError:
        return None
    value = getattr(source, name, None)
    if value is None and not hasattr(source, name):
        return None
    if isinstance(value, types.ModuleType):
        sub = module.split(".")[1:] + [name]
        return "npgpu" if len(sub) == 1 and sub[0] in MIRRORED_SUBMODULES else None
    parts = module.split(".")[1:]
    if not parts:
        return "npgpu" if not name.startswith("_") else None
    if len(parts) == 1 and parts[0] in MIRRORED_SUBMODULES:
        return f"npgpu.{parts[0]}"
    if parts[0] == "_core" and not name.startswith("_") and getattr(numpy, name, object()) is value:
        return "npgpu"
    return None


def _alias(a: ast.alias) -> str:
    return a.name if a.asname is None else f"{a.name} as {a.asname}"


def _rewrite_node(node: ast.stmt) -> str | None:
    """The replacement statement(s) for one import, on one line, or None to keep it."""
    if isinstance(node, ast.Import):
        parts, changed = [], False
        for a in node.names:
            if a.name == "numpy":
                parts.append(f"import npgpu as {a.asname or 'numpy'}")
                changed = True
            elif a.name.startswith("numpy.") and a.name.split(".")[1] in MIRRORED_SUBMODULES and a.asname \
                    and a.name.count(".") == 1:
                parts.append(f"from npgpu import {a.name.split('.')[1]} as {a.asname}")
                changed = True
            else:
                parts.append(f"import {_alias(a)}")
        return "; ".join(parts) if changed else None
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
            and (node.module == "numpy" or node.module.startswith("numpy.")):
        groups: dict[str, list[str]] = defaultdict(list)
        for a in node.names:
            if a.name == "*":
                return None
            groups[_npgpu_name(node.module, a.name) or node.module].append(_alias(a))
        if list(groups) == [node.module]:
            return None
        return "; ".join(_from_import(mod, names) for mod, names in groups.items())
    return None


def _from_import(module: str, names: list[str]) -> str:
    """``from module import names``; npgpu's submodules are attributes (``import npgpu.random`` fails)."""
    if not module.startswith("npgpu."):
        return f"from {module} import {', '.join(names)}"
    sub = module.split(".", 1)[1]
    pairs = [(n.split(" as ")[-1], n.split(" as ")[0]) for n in names]
    return f"import npgpu as _npgpu; {', '.join(b for b, _ in pairs)} = " \
        + ", ".join(f"_npgpu.{sub}.{a}" for _, a in pairs)


def rewrite_source(text: str) -> tuple[str, list[Rewrite]]:
    """``text`` with its NumPy array-namespace imports pointing at npgpu, every other line where it was.

    A statement spread over several lines becomes one line followed by blank lines, so tracebacks and
    test locations keep NumPy's line numbers.
    """
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            new = _rewrite_node(node)
            if new is not None:
                assert node.end_lineno is not None and node.end_col_offset is not None
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, new))
    rewrites = []
    for start, col, end, end_col, new in sorted(edits, reverse=True):
        first, last = lines[start - 1], lines[end - 1]
        before = "".join(lines[start - 1:end])
        tail = last[end_col:]
        lines[start - 1:end] = [first[:col] + new + tail + "\n" * (end - start)]
        rewrites.append(Rewrite(start, before.strip(), new))
    return "".join(lines), sorted(rewrites, key=lambda r: r.line)


def numpy_tests_dir() -> Path:
    import numpy

    return Path(numpy.__file__).resolve().parent / "_core" / "tests"


def test_source(name: str) -> Path:
    """A test file as ``--files`` names it: a file name alone is numpy/_core/tests' (the six of issue
    #11 are), a path is under the NumPy package (``lib/tests/test_function_base.py``)."""
    if "/" not in name:
        return numpy_tests_dir() / name
    import numpy

    return Path(numpy.__file__).resolve().parent / name


def built_name(name: str) -> str:
    """The name a test file has in the build folder, and so in the test ids: its own for _core/tests'
    files, else its folder's prefixed (``test_lib_shape_base.py``: lib/tests and _core/tests each
    have a test_shape_base.py)."""
    if "/" not in name:
        return name
    folder, base = name.split("/", 1)[0], name.rsplit("/", 1)[1]
    return f"test_{folder.strip('_')}_{base.removeprefix('test_')}"


def build(build_dir: Path, files: tuple[str, ...] = FILES) -> dict[str, list[Rewrite]]:
    """Write the reference copies (``numpy/``) and the rewritten ones (``npgpu/``) under ``build_dir``;
    ``files`` as ``--files`` names them (test_source), written under their built_name."""
    all_rewrites = {}
    for kind in ("numpy", "npgpu"):
        target = build_dir / kind
        target.mkdir(parents=True, exist_ok=True)
        (target / "pytest.ini").write_text(PYTEST_INI)
    for given in files:
        source, name = test_source(given), built_name(given)
        text = source.read_text(encoding="utf-8")
        shutil.copyfile(source, build_dir / "numpy" / name)
        new, rewrites = rewrite_source(text)
        (build_dir / "npgpu" / name).write_text(new, encoding="utf-8")
        all_rewrites[name] = rewrites
    manifest = {name: [vars(r) for r in rs] for name, rs in all_rewrites.items()}
    (build_dir / "rewrites.json").write_text(json.dumps(manifest, indent=1))
    return all_rewrites


# ---------------------------------------------------------------------------------------------------------
# Running: one pytest process per (mode, file), restarted past a test that crashed, hung or timed out.

@dataclass
class Job:
    mode: str
    file: str  # one test file, or "all"
    files: tuple[str, ...]
    results: Path
    log: Path
    restarts: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def _env(available_memory: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), str(TOOLS), env.get("PYTHONPATH")) if p)
    env.pop("NPGPU_BACKEND", None)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("MPLBACKEND", "Agg")
    if available_memory:
        env["NPY_AVAILABLE_MEM"] = available_memory
    return env


def read_records(path: Path) -> tuple[dict[str, dict[str, Any]], list[str], list[dict[str, Any]]]:
    """A results file's test records (the last per id), the ids started but not finished, and the
    lines pytest sessions wrote as they ended (one per process that ended normally)."""
    records: dict[str, dict[str, Any]] = {}
    started: list[str] = []
    sessions: list[dict[str, Any]] = []
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # a line cut off by a crash
                    continue
                if "session" in rec:
                    sessions.append(rec)
                elif rec.get("start"):
                    started.append(rec["id"])
                else:
                    records[rec["id"]] = rec
    return records, [i for i in dict.fromkeys(started) if i not in records], sessions


#: NumPy's own pytest setup (markers, the hypothesis profile np.test() uses, its autouse fixtures), where the
#: installed NumPy ships it.
NUMPY_CONFTEST = ("-p", "numpy.conftest") if importlib.util.find_spec("numpy.conftest") else ()


def run_job(job: Job, build_dir: Path, sample: float, timeout: float, env: dict[str, str], fast: bool = False,
            host_asserts: bool = False, max_restarts: int = 20) -> Job:
    kind = "numpy" if job.mode == "numpy" else "npgpu"
    cwd = build_dir / kind
    done = job.results.with_suffix(".done")
    job.results.unlink(missing_ok=True)
    done.unlink(missing_ok=True)
    hang_s = 3 * timeout + 60 if timeout else 1800
    t0 = time.perf_counter()
    while True:
        cmd = [sys.executable, "-m", "pytest", "-c", str(cwd / "pytest.ini"), "--rootdir", str(cwd),
               *NUMPY_CONFTEST, "-p", "numpy_suite_plugin", "-p", "no:cacheprovider",
               "-q", "--tb=no", "--no-header", "-rN",
               "--npgpu-mode", job.mode, "--npgpu-results", str(job.results), "--npgpu-sample", str(sample),
               "--npgpu-done", str(done), "--npgpu-timeout", str(timeout), *job.files]
        if fast:  # np.test()'s default label
            cmd[-len(job.files):-len(job.files)] = ["-m", "not slow"]
        if host_asserts and job.mode in DEVICE_MODES:
            cmd.insert(-len(job.files), "--npgpu-host-asserts")
        with open(job.log, "a", encoding="utf-8") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            last_size, last_change, killed = -1, time.monotonic(), False
            while True:
                try:
                    rc = proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    size = job.results.stat().st_size if job.results.exists() else 0
                    if size != last_size:
                        last_size, last_change = size, time.monotonic()
                    elif time.monotonic() - last_change > hang_s:
                        os.killpg(proc.pid, signal.SIGKILL)  # the process group this job started
                        rc, killed = proc.wait(), True
                        log.write(f"\n[numpy_suite] no progress for {hang_s:.0f} s: killed\n")
                        break
        records, unfinished, sessions = read_records(job.results)
        ended = len(sessions) > job.restarts  # this attempt's session reached its end
        if not unfinished:
            if ended and sessions[-1].get("stopped") == "timeout" and job.restarts < max_restarts:
                job.restarts += 1  # the plugin stopped the session after a timeout: run the rest
                done.write_text("".join(i + "\n" for i in records))
                continue
            if not ended or rc not in (0, 1, 2, 5):
                job.problems.append(f"pytest ended with status {rc} outside any test (see {job.log})")
            break
        hung = killed  # (a SIGKILL this driver didn't send is most likely the kernel's OOM killer)
        with open(job.results, "a", encoding="utf-8") as f:
            for nodeid in unfinished:
                outcome = "hung" if hung else "crashed"
                f.write(json.dumps({"id": nodeid, "outcome": outcome, "exc_type": outcome.capitalize(),
                                    "message": f"the test process ended with status {rc}"}) + "\n")
        job.restarts += 1
        if job.restarts > max_restarts:
            job.problems.append(f"gave up after {max_restarts} restarts")
            break
        # (a crashed attempt wrote no session line: one is added so that attempts and lines stay in step)
        with open(job.results, "a", encoding="utf-8") as f:
            f.write(json.dumps({"session": rc, "stopped": "crash"}) + "\n")
        records = read_records(job.results)[0]
        done.write_text("".join(i + "\n" for i in records))
    job.seconds = time.perf_counter() - t0
    return job


def available_modes(requested: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """The modes to run and, for device backends left out, why."""
    from npgpu.backends import unavailable_reason

    missing = {}
    modes = []
    for mode in requested or list(MODES):
        if mode in DEVICE_MODES:
            reason = unavailable_reason(mode)
            if reason:
                missing[mode] = reason
                continue
        modes.append(mode)
    return modes, missing


def run_all(modes: list[str], files: tuple[str, ...], build_dir: Path, sample: float, workers: int,
            timeout: float, available_memory: str | None = DEFAULT_MEMORY, fast: bool = False,
            per_file: bool = True, host_asserts: bool = False, quiet: bool = False) -> list[Job]:
    """Run ``files`` in every mode, ``workers`` pytest processes at a time: one per mode and file, or
    one per mode (``per_file=False``: fewer start-ups, for a small sample)."""
    build_dir = build_dir.resolve()
    build(build_dir, files)
    results_dir = build_dir / "results"
    results_dir.mkdir(exist_ok=True)
    env = _env(available_memory)
    # Longest first, so the workers end together (measured on PoCL: opencl's test_ufunc is the long pole).
    file_cost = {"test_ufunc.py": 3.0, "test_umath.py": 2.0, "test_numeric.py": 1.0}
    mode_cost = {"opencl": 4.0, "cupy": 2.0, "emulated": 2.0}
    files = tuple(map(built_name, files))
    groups = [(name, (name,)) for name in files] if per_file else [("all", files)]
    for mode in modes:  # results of the other layout would mix into load_results
        for stale in results_dir.glob(f"{mode}-all.jsonl" if per_file else f"{mode}-*.jsonl"):
            stale.unlink()
    jobs = [Job(mode, label, group, results_dir / f"{mode}-{label}.jsonl", results_dir / f"{mode}-{label}.log")
            for label, group in groups for mode in modes]
    jobs.sort(key=lambda j: -mode_cost.get(j.mode, 1.0) * sum(file_cost.get(f, 0.3) for f in j.files))
    for job in jobs:
        job.log.unlink(missing_ok=True)
    lock = threading.Lock()

    def one(job: Job) -> Job:
        run_job(job, build_dir, sample, timeout, env, fast, host_asserts)
        if not quiet:
            with lock:
                extra = f", {job.restarts} restarts" if job.restarts else ""
                print(f"  {job.mode:>8} {job.file:<20} {job.seconds:7.1f} s{extra}", flush=True)
        return job

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs))


# ---------------------------------------------------------------------------------------------------------
# Comparing.

@dataclass
class Entry:
    pattern: str
    backends: frozenset[str]
    reason: str
    line: int
    matched: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # backend -> failing ids
    passing: dict[str, int] = field(default_factory=Counter)  # backend -> matched ids that passed

    def __post_init__(self) -> None:
        # Only `*` is a wildcard: test ids are full of brackets, which fnmatch would read as sets.
        self._regex = re.compile(".*".join(re.escape(part) for part in self.pattern.split("*")) + r"\Z")

    def applies(self, nodeid: str, backend: str) -> bool:
        return backend in self.backends and self._regex.match(nodeid) is not None


def read_expected(path: Path) -> list[Entry]:
    """Entries of an expected-failures file: ``test id pattern | backends | reason`` per line.

    The pattern is a node id where ``*`` matches anything (``test_umath.py::TestX::test_y[*]``); backends
    are names (``off``, ``emulated``, ``opencl``, ``cupy``) separated by commas, or ``device`` for every
    device backend, or ``all`` for those and ``off``. ``#`` starts a comment. Entries naming tests that
    this NumPy version lacks match nothing and are harmless.
    """
    entries = []
    if not path.exists():
        return entries
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"{path}:{number}: expected 'pattern | backends | reason', got {raw!r}")
        names: set[str] = set()
        for b in parts[1].split(","):
            b = b.strip()
            if b == "all":
                names |= {"off", *DEVICE_MODES}
            elif b == "device":
                names |= set(DEVICE_MODES)
            elif b in ("off", *DEVICE_MODES):
                names.add(b)
            else:
                raise ValueError(f"{path}:{number}: unknown backend {b!r}")
        entries.append(Entry(parts[0], frozenset(names), parts[2], number))
    return entries


def category(rec: dict[str, Any]) -> str:
    """What kind of failure a record is.

    ``wrong-answer``: an AssertionError comparing results (numpy.testing's assert_* or a bare assert):
    the code ran and gave something else than NumPy. ``missing-error``: NumPy raises, npgpu did not.
    ``error-message``: the right exception with another message. ``warning``: a warning NumPy doesn't
    give (turned into an error) or one it gives that npgpu didn't. ``crashed``/``hung``/``timeout``:
    the process died, stopped progressing or a test ran past the limit. ``exception``: anything else
    raised (npgpu raises where NumPy computes).
    """
    outcome = rec.get("outcome")
    if outcome in ("crashed", "hung", "collect-error"):
        return outcome
    exc, msg = rec.get("exc_type", ""), rec.get("message", "")
    if exc == "SuiteTimeout":
        return "timeout"
    if exc in ("AssertionError", "Failed"):
        if "DID NOT RAISE" in msg or re.search(r"\bnot raised\b", msg):
            return "missing-error"
        if "Regex pattern did not match" in msg or re.match(r'^".*" does not match ".*"$', msg, re.S):
            return "error-message"  # pytest.raises(match=) / assert_raises_regex: the right type, another text
        if "DID NOT WARN" in msg or "warning" in msg.lower():
            return "warning"
        return "wrong-answer" if exc == "AssertionError" else "exception"
    if exc.endswith("Warning"):
        return "warning"
    return "exception"


@dataclass
class Failure:
    nodeid: str
    backend: str
    record: dict[str, Any]
    expected: Entry | None = None

    @property
    def category(self) -> str:
        return category(self.record)

    @property
    def file(self) -> str:
        return self.nodeid.split("::", 1)[0]


@dataclass
class Summary:
    modes: list[str]
    results: dict[str, dict[str, dict[str, Any]]]  # mode -> nodeid -> record
    failures: list[Failure]  # off failures (vs numpy) and device failures (vs off)
    stale: list[tuple[Entry, str]]
    counts: dict[tuple[str, str], Counter]  # (file, mode) -> counts

    @property
    def unexpected(self) -> list[Failure]:
        return [f for f in self.failures if f.expected is None]


def load_results(build_dir: Path, modes: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    results: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in modes}
    for path in sorted((build_dir / "results").glob("*.jsonl")):
        mode = path.name.split("-", 1)[0]
        if mode in results:
            results[mode].update(read_records(path)[0])
    return results


def compare(results: dict[str, dict[str, dict[str, Any]]], entries: list[Entry]) -> Summary:
    modes = list(results)
    failures: list[Failure] = []
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    ref = results.get("numpy", {})
    off = results.get("off", {})
    ids = list(dict.fromkeys(i for m in modes for i in results[m]))
    for nodeid in ids:
        file = nodeid.split("::", 1)[0]
        for mode in modes:
            rec = results[mode].get(nodeid)
            if rec is None:
                continue
            c = counts[(file, mode)]
            if rec["outcome"] == "collect-error":  # the whole file: held to nothing, always reported
                entry = next((e for e in entries if e.applies(nodeid, mode)), None)
                failures.append(Failure(nodeid, mode, rec, entry))
                c["collect-error"] += 1
                c["expected" if entry else "unexpected"] += 1
                continue
            c["tests"] += 1
            c[rec["outcome"] if rec["outcome"] in ("passed", "skipped") else
              "passed" if rec["outcome"] in PASSED else "failed"] += 1
            baseline = ref if mode == "off" else off if mode in DEVICE_MODES else None
            if baseline is None:
                continue
            base = baseline.get(nodeid)
            if base is None or base["outcome"] not in PASSED:
                continue
            c["baseline"] += 1  # passed in the mode this one is held to
            entry = next((e for e in entries if e.applies(nodeid, mode)), None)
            if rec["outcome"] in PASSED:
                c["kept"] += 1
                if entry is not None:
                    entry.passing[mode] += 1
                continue
            if rec["outcome"] == "skipped":
                c["skipped-here"] += 1
                continue
            f = Failure(nodeid, mode, rec, entry)
            failures.append(f)
            c["expected" if entry else "unexpected"] += 1
            c[f.category] += 1
            if entry is not None:
                entry.matched[mode].append(nodeid)
    stale = [(e, b) for e in entries for b in sorted(e.backends)
             if e.passing.get(b) and not e.matched.get(b)]
    return Summary(modes, results, failures, stale, counts)


def print_summary(summary: Summary, details: bool, missing: dict[str, str], out: Any = sys.stdout) -> None:
    def p(*args: Any) -> None:
        print(*args, file=out)

    checked = [m for m in summary.modes if m != "numpy"]
    p("\nNumPy's own tests on npgpu: each mode is held to the one before it (off to numpy, devices to off)")
    header = f"{'file':<20} {'mode':>8} {'tests':>6} {'passed':>6} {'skip':>5} {'held to':>7} {'kept':>6} " \
             f"{'fail':>5} {'expect':>6} {'unexp':>5} {'wrong':>5} {'noraise':>7}"
    p(header)
    p("-" * len(header))
    files = sorted({f for f, _ in summary.counts}, key=lambda n: FILES.index(n) if n in FILES else 99)
    totals: dict[str, Counter] = defaultdict(Counter)
    for file in [*files, "TOTAL"]:
        for mode in summary.modes:
            c = totals[mode] if file == "TOTAL" else summary.counts.get((file, mode), Counter())
            if file != "TOTAL":
                totals[mode].update(c)
            fails = c["expected"] + c["unexpected"]
            held = f"{c['baseline']:>7}" if mode != "numpy" else f"{'':>7}"
            p(f"{file:<20} {mode:>8} {c['tests']:>6} {c['passed']:>6} {c['skipped']:>5} {held} "
              f"{c['kept'] if mode != 'numpy' else '':>6} {fails if mode != 'numpy' else '':>5} "
              f"{c['expected'] if mode != 'numpy' else '':>6} {c['unexpected'] if mode != 'numpy' else '':>5} "
              f"{c['wrong-answer'] if mode != 'numpy' else '':>5} {c['missing-error'] if mode != 'numpy' else '':>7}")
    for mode in checked:
        c = totals[mode]
        share = 100.0 * c["kept"] / c["baseline"] if c["baseline"] else 100.0
        p(f"{mode}: {c['kept']}/{c['baseline']} ({share:.1f}%) of the tests that pass "
          f"{'as NumPy' if mode == 'off' else 'with npgpu off'} pass; "
          f"{c['unexpected']} unexpected failures, {c['expected']} expected; "
          + ", ".join(f"{k} {c[k]}" for k in ("wrong-answer", "missing-error", "error-message", "warning",
                                                "exception", "timeout", "crashed", "hung", "collect-error")
                     if c[k]))
    for mode, reason in missing.items():
        p(f"{mode}: not run ({reason})")
    for entry, backend in summary.stale:
        p(f"STALE expected entry (line {entry.line}) on {backend}: {entry.pattern} -- every matching test passed")
    worst = [f for f in summary.unexpected if f.category in ("wrong-answer", "missing-error")]
    if worst:
        p(f"\nWRONG ANSWERS (no exception raised): {len(worst)}")
        for f in worst if details else worst[:40]:
            p(f"  [{f.backend}] {f.category}: {f.nodeid}\n      {_one_line(f.record.get('message', ''))[:200]}")
        if not details and len(worst) > 40:
            p(f"  ... {len(worst) - 40} more (--details)")
    if details:
        rest = [f for f in summary.unexpected if f.category not in ("wrong-answer", "missing-error")]
        p(f"\nOther unexpected failures: {len(rest)}")
        for f in rest:
            p(f"  [{f.backend}] {f.category} {f.record.get('exc_type')}: {f.nodeid}\n"
              f"      {_one_line(f.record.get('message', ''))[:200]}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def write_failures(summary: Summary, path: Path) -> None:
    """The current unexpected failures in the expected-file format, one entry per test, to review."""
    by_id: dict[str, list[Failure]] = defaultdict(list)
    for f in summary.unexpected:
        by_id[f.nodeid].append(f)
    lines = ["# Unexpected failures of the last run (tools/numpy_suite.py --write-failures): review before use.",
             "# Each is an npgpu bug until shown otherwise; see tools/numpy_suite_triage.md."]
    for nodeid, fs in by_id.items():
        backends = ",".join(sorted({f.backend for f in fs}))
        f = fs[0]
        why = f"{f.category}: {f.record.get('exc_type', '')}: {_one_line(f.record.get('message', ''))[:100]}"
        lines.append(f"{nodeid} | {backends} | {why.replace('|', '/')}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------
# Triage: failures grouped by what they raise and where.

def signature(rec: dict[str, Any]) -> str:
    """A failure's group key: its category, exception type, message with numbers masked, npgpu frame."""
    msg = _one_line(rec.get("message", ""))
    if category(rec) == "wrong-answer":
        first = re.split(r"(?<=\S)\s+(?=Mismatch|x:|ACTUAL|Max absolute)", msg)[0]
        msg = first
    msg = re.sub(r"0x[0-9a-f]+", "0x?", msg)
    msg = re.sub(r"(?<![A-Za-z_])[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "N", msg)
    msg = re.sub(r"'[^']*'", "'?'", msg)[:140]
    where = rec.get("npgpu_at") or rec.get("raised_at", "")
    where = re.sub(r":\d+:", ":", where)
    return f"{category(rec)} | {rec.get('exc_type', '')} | {msg} | {where}"


def print_groups(summary: Summary, out: Any = sys.stdout, examples: int = 3) -> None:
    groups: dict[str, list[Failure]] = defaultdict(list)
    for f in summary.unexpected:
        groups[signature(f.record)].append(f)
    order = sorted(groups.items(), key=lambda kv: (kv[0].split(" | ")[0] not in ("wrong-answer", "missing-error"),
                                                   -len(kv[1])))
    for sig, fs in order:
        per = Counter(f.backend for f in fs)
        print(f"\n{len(fs):5d}  {dict(per)}\n       {sig}", file=out)
        seen = []
        for f in fs:
            if f.nodeid not in seen:
                seen.append(f.nodeid)
            if len(seen) >= examples:
                break
        for nodeid in seen:
            line = next(x.record.get("test_line", "") for x in fs if x.nodeid == nodeid)
            print(f"         {nodeid}\n             {line}", file=out)


# ---------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--modes", help=f"comma-separated, from {', '.join(MODES)} (default: all available)")
    ap.add_argument("--files", help="comma-separated test files: names in numpy/_core/tests, or paths under "
                    "the numpy package (lib/tests/test_function_base.py); default: the six of issue #11")
    ap.add_argument("--sample", type=float, default=1.0, help="fraction of the tests, chosen by id hash")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="parallel pytest processes")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test phase before it is stopped")
    ap.add_argument("--build-dir", type=Path, default=DEFAULT_BUILD)
    ap.add_argument("--expected", type=Path, action="append",
                    help=f"expected-failures file(s) (default: {EXPECTED.relative_to(REPO)})")
    ap.add_argument("--available-memory", default=DEFAULT_MEMORY,
                    help=f"NPY_AVAILABLE_MEM for the runs (default {DEFAULT_MEMORY!r}: see DEFAULT_MEMORY)")
    ap.add_argument("--per-mode", action="store_true",
                    help="one pytest process per mode for all files (what the CI sample does)")
    ap.add_argument("--host-asserts", action="store_true",
                    help="diagnostic: numpy.testing's comparing asserts get host copies of device arrays, to see "
                         "the values behind 'truth value is ambiguous' (use its own --build-dir)")
    ap.add_argument("--fast", action="store_true", help="leave out the tests marked slow, as np.test() does")
    ap.add_argument("--report-only", action="store_true", help="compare the results already in --build-dir")
    ap.add_argument("--details", action="store_true", help="list every unexpected failure")
    ap.add_argument("--groups", action="store_true", help="print unexpected failures grouped by signature")
    ap.add_argument("--write-failures", type=Path, help="write the unexpected failures as expected-file entries")
    ap.add_argument("--json", type=Path, help="write the per-test comparison as JSON")
    args = ap.parse_args(argv)

    requested = args.modes.split(",") if args.modes else None
    for m in requested or []:
        if m not in MODES:
            ap.error(f"unknown mode {m!r}")
    modes, missing = available_modes(requested)
    if any(m in DEVICE_MODES for m in modes) and "off" not in modes:
        modes.insert(0, "off")  # device modes are held to off
    if "off" in modes and "numpy" not in modes:
        modes.insert(0, "numpy")
    files = tuple(args.files.split(",")) if args.files else FILES
    if not args.report_only:
        print(f"NumPy {_numpy_version()} tests from {numpy_tests_dir()}\nmodes {', '.join(modes)}; "
              f"sample {args.sample:g}; {args.jobs} processes", flush=True)
        t0 = time.perf_counter()
        jobs = run_all(modes, files, args.build_dir, args.sample, args.jobs, args.timeout, args.available_memory,
                       args.fast, per_file=not args.per_mode, host_asserts=args.host_asserts)
        print(f"ran in {time.perf_counter() - t0:.0f} s")
        for job in jobs:
            for problem in job.problems:
                print(f"PROBLEM {job.mode} {job.file}: {problem}")
    results = load_results(args.build_dir, modes)
    built = {built_name(f) for f in files}
    results = {m: {i: r for i, r in rs.items() if i.split("::", 1)[0] in built} for m, rs in results.items()}
    entries = [e for path in (args.expected or [EXPECTED]) for e in read_expected(path)]
    summary = compare(results, entries)
    print_summary(summary, args.details, missing)
    if args.groups:
        print_groups(summary)
    if args.write_failures:
        write_failures(summary, args.write_failures)
        print(f"wrote {len(summary.unexpected)} failures to {args.write_failures}")
    if args.json:
        args.json.write_text(json.dumps({
            "numpy": _numpy_version(), "modes": modes, "results": results,
            "failures": [{"id": f.nodeid, "backend": f.backend, "category": f.category,
                          "expected": f.expected.reason if f.expected else None, **f.record}
                         for f in summary.failures]}, indent=0))
    return 1 if summary.unexpected or summary.stale else 0


def _numpy_version() -> str:
    import numpy

    return numpy.__version__


if __name__ == "__main__":
    sys.exit(main())
