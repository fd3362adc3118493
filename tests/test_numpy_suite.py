"""NumPy's own test files against npgpu (tools/numpy_suite.py): the runner's parts, and a CI sample.

The sample runs a fixed ~SAMPLE share of the six files' tests (chosen by a hash of the test id) as
NumPy, with npgpu off and on every device backend available, and fails on any failure that
tools/numpy_suite_expected.txt doesn't list. ``NPGPU_NUMPY_SUITE_WRITE=path`` writes the current
failures in the expected-file format; ``-m "not numpy_suite"`` leaves the sample out.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))

import numpy_suite as ns  # noqa: E402  (tools/ is not a package)
from numpy_suite_plugin import sampled  # noqa: E402

#: Share of the tests the CI sample runs (30-40 s on 2 cores for numpy, off, emulated and opencl).
SAMPLE = 0.05


# --- the rewrite --------------------------------------------------------------------------------------


SOURCE = '''\
import sys
import numpy as np
import numpy._core.umath as ncu
from numpy._core import (
    array,
    concatenate,
    sctypes,  # not public in NumPy 2
)
from numpy._core.shape_base import _block_setup
from numpy.random import rand
from numpy import ma, testing, float64
from numpy.testing import assert_equal


def f():
    import numpy
    return numpy, np, sys
'''


def test_rewrite_points_the_array_namespace_at_npgpu_and_keeps_line_numbers() -> None:
    new, rewrites = ns.rewrite_source(SOURCE)
    assert len(new.splitlines()) == len(SOURCE.splitlines())
    lines = new.splitlines()
    assert lines[1] == "import npgpu as np"
    assert lines[2] == "import numpy._core.umath as ncu"  # ufuncs and C-API test modules stay NumPy's
    assert lines[3] == "from npgpu import array, concatenate; from numpy._core import sctypes"
    assert lines[4:7] == ["", "", ""]
    assert lines[7] == ""  # the closing parenthesis' line, now blank: what follows keeps its number
    assert lines[8] == "from numpy._core.shape_base import _block_setup"  # private helpers stay
    assert lines[9] == "import npgpu as _npgpu; rand = _npgpu.random.rand"  # `import npgpu.random` fails
    assert lines[10] == "from numpy import ma, testing; from npgpu import float64"
    assert lines[11] == "from numpy.testing import assert_equal"
    assert lines[15] == "    import npgpu as numpy"
    assert [r.line for r in rewrites] == [2, 4, 10, 11, 16]
    namespace: dict = {}
    exec(compile(new, "<rewritten>", "exec"), namespace)
    import numpy

    import npgpu

    mod, np_, _ = namespace["f"]()
    assert mod is npgpu and np_ is npgpu and namespace["ma"] is numpy.ma and namespace["testing"] is numpy.testing
    assert namespace["concatenate"] is npgpu.concatenate and namespace["rand"] is npgpu.random.rand


def test_rewrite_of_the_installed_files_builds_both_copies(tmp_path: Path) -> None:
    rewrites = ns.build(tmp_path, ("test_einsum.py", "test_shape_base.py"))
    assert [r.after for r in rewrites["test_einsum.py"]] == ["import npgpu as np"]
    for name in ("test_einsum.py", "test_shape_base.py"):
        original = (ns.numpy_tests_dir() / name).read_text()
        assert (tmp_path / "numpy" / name).read_text() == original
        assert len((tmp_path / "npgpu" / name).read_text().splitlines()) == len(original.splitlines())


# --- sampling, expectations, classification -----------------------------------------------------------


def test_sample_is_a_stable_share_of_the_ids() -> None:
    ids = [f"test_x.py::TestY::test_{i}[{i % 7}]" for i in range(20000)]
    chosen = [i for i in ids if sampled(i, 0.05)]
    assert chosen == [i for i in ids if sampled(i, 0.05)]
    assert 800 < len(chosen) < 1200
    assert set(chosen) <= {i for i in ids if sampled(i, 0.2)}  # a bigger sample holds the smaller one
    assert all(sampled(i, 1.0) for i in ids[:10])


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "expected.txt"
    path.write_text(text)
    return path


def test_expected_file_entries_and_errors(tmp_path: Path) -> None:
    entries = ns.read_expected(_write(tmp_path, (
        "# comment\n"
        "test_a.py::test_refcount[*] | all | tests sys.getrefcount  # trailing comment\n"
        "test_a.py::TestC::test_api | opencl,emulated | tests NumPy's C API\n"
        "test_b.py::test_c | device | reason\n"
    )))
    assert [e.line for e in entries] == [2, 3, 4]
    assert entries[0].backends == {"off", "emulated", "opencl", "cupy"}
    assert entries[0].reason == "tests sys.getrefcount"
    assert entries[0].applies("test_a.py::test_refcount[int8]", "off")
    assert not entries[0].applies("test_a.py::test_refcount_more[int8]", "off")  # brackets are literal
    assert not entries[1].applies("test_a.py::TestC::test_api", "cupy")
    assert entries[2].backends == {"emulated", "opencl", "cupy"}
    with pytest.raises(ValueError, match="line|:2:"):
        ns.read_expected(_write(tmp_path, "# c\ntest_a.py::x | opencl\n"))
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        ns.read_expected(_write(tmp_path, "test_a.py::x | gpu | why\n"))


@pytest.mark.parametrize(("exc_type", "message", "expected"), [
    ("AssertionError", "\nArrays are not equal\n\nMismatched elements: 3 / 5", "wrong-answer"),
    ("AssertionError", "assert 1 == 2", "wrong-answer"),
    ("AssertionError", "TypeError not raised", "missing-error"),
    ("Failed", "DID NOT RAISE <class 'ValueError'>", "missing-error"),
    ("AssertionError", "Regex pattern did not match.\n Regex: 'x'", "error-message"),
    ("AssertionError", '"index 3 is out of bounds" does not match "out of range"', "error-message"),
    ("Failed", "DID NOT WARN. No warnings of type (RuntimeWarning,) were emitted.", "warning"),
    ("RuntimeWarning", "invalid value encountered in divide", "warning"),
    ("ValueError", "The truth value of an array with more than one element is ambiguous.", "exception"),
    ("SuiteTimeout", "test phase ran past 60 s", "timeout"),
])
def test_failure_categories(exc_type: str, message: str, expected: str) -> None:
    assert ns.category({"outcome": "failed", "exc_type": exc_type, "message": message}) == expected


def _rec(nodeid: str, outcome: str, exc_type: str = "", message: str = "") -> dict:
    return {"id": nodeid, "outcome": outcome, "exc_type": exc_type, "message": message}


def test_compare_holds_off_to_numpy_and_devices_to_off(tmp_path: Path) -> None:
    ids = ["t.py::ok", "t.py::off_bug", "t.py::dev_bug", "t.py::listed", "t.py::stale", "t.py::numpy_fails",
           "t.py::xfail"]
    numpy_ = {i: _rec(i, "passed") for i in ids}
    numpy_["t.py::numpy_fails"] = _rec("t.py::numpy_fails", "failed", "ValueError")
    numpy_["t.py::xfail"] = _rec("t.py::xfail", "xfailed")
    off = dict(numpy_)
    off["t.py::off_bug"] = _rec("t.py::off_bug", "failed", "TypeError", "bad")
    dev = dict(off)
    dev["t.py::dev_bug"] = _rec("t.py::dev_bug", "failed", "AssertionError", "Arrays are not equal")
    dev["t.py::listed"] = _rec("t.py::listed", "failed", "NotImplementedError", "C API")
    dev["t.py::off_bug"] = _rec("t.py::off_bug", "failed", "TypeError", "bad")  # held to off: not counted again
    dev["t.py::numpy_fails"] = _rec("t.py::numpy_fails", "passed")
    entries = ns.read_expected(_write(tmp_path, "t.py::listed | device | tests the C API\n"
                                                "t.py::stale | opencl | was broken\n"))
    summary = ns.compare({"numpy": numpy_, "off": off, "opencl": dev}, entries)
    assert [(f.nodeid, f.backend, f.category) for f in summary.unexpected] == [
        ("t.py::off_bug", "off", "exception"), ("t.py::dev_bug", "opencl", "wrong-answer")]
    assert [(f.nodeid, f.expected is not None) for f in summary.failures if f.expected] == [("t.py::listed", True)]
    assert [(e.pattern, b) for e, b in summary.stale] == [("t.py::stale", "opencl")]
    c = summary.counts[("t.py", "opencl")]
    got = (c["tests"], c["baseline"], c["kept"], c["expected"], c["unexpected"], c["wrong-answer"])
    assert got == (7, 5, 3, 1, 1, 1)
    out = io.StringIO()
    ns.print_summary(summary, details=True, missing={}, out=out)
    text = out.getvalue()
    assert "opencl: 3/5 (60.0%)" in text and "WRONG ANSWERS (no exception raised): 1" in text
    assert "STALE expected entry (line 2) on opencl: t.py::stale" in text
    written = tmp_path / "failures.txt"
    ns.write_failures(summary, written)
    again = ns.read_expected(written)
    assert [(e.pattern, sorted(e.backends)) for e in again] == [
        ("t.py::off_bug", ["off"]), ("t.py::dev_bug", ["opencl"])]


def test_expected_file_of_the_project_parses() -> None:
    entries = ns.read_expected(ns.EXPECTED)
    assert all(e.reason for e in entries)


@pytest.mark.parametrize(("message", "same"), [
    ("Items are not equal:\n ACTUAL: np.int64(4)\n DESIRED: 4", True),
    ("Items are not equal:\n ACTUAL: np.int8(10)\n DESIRED: 11", False),
    ("Items are not equal:\n ACTUAL: 97\n DESIRED: 100", False),
    ("Items are not equal:\n ACTUAL: array([5])\n DESIRED: 5", True),
    ("Items are not equal:\n ACTUAL: np.False_\n DESIRED: array([False])", True),
    ("Items are not equal:\n ACTUAL: array([nan, nan])\n DESIRED: nan", True),
    ("Items are not equal:\n ACTUAL: np.uint8(0)\n DESIRED: array(0, dtype=uint8)", True),
    ("Arrays are not equal\nMismatched elements: 1 / 3", False),
])
def test_triage_tells_a_type_mismatch_from_a_value_mismatch(message: str, same: bool) -> None:
    import numpy_suite_triage

    assert numpy_suite_triage._same_value_printed(message) is same


# --- the runner: crashes and timeouts --------------------------------------------------------------


FAKE_TESTS = """\
import os, signal, time
import npgpu as np

def test_a():
    assert np.arange(3).sum() == 3

def test_crash():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_slow():
    time.sleep(30)

def test_b():
    assert np.ones(2).tolist() == [1.0, 2.0]
"""


@pytest.mark.slow
def test_runner_goes_on_past_a_crash_and_a_timeout(tmp_path: Path) -> None:
    (tmp_path / "npgpu").mkdir()
    (tmp_path / "npgpu" / "pytest.ini").write_text(ns.PYTEST_INI)
    (tmp_path / "npgpu" / "test_fake.py").write_text(FAKE_TESTS)
    job = ns.Job("off", "test_fake.py", ("test_fake.py",), tmp_path / "off.jsonl", tmp_path / "off.log")
    ns.run_job(job, tmp_path, sample=1.0, timeout=1.0, env=ns._env(None))
    records = ns.read_records(job.results)[0]
    got = {i.split("::")[1]: (r["outcome"], r.get("exc_type")) for i, r in records.items()}
    assert got == {"test_a": ("passed", None), "test_crash": ("crashed", "Crashed"),
                   "test_slow": ("failed", "SuiteTimeout"), "test_b": ("failed", "AssertionError")}
    assert job.restarts == 2 and not job.problems
    assert ns.category(records["test_fake.py::test_b"]) == "wrong-answer"


# --- the CI sample ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.numpy_suite
def test_numpy_suite_sample(tmp_path: Path) -> None:
    modes, missing = ns.available_modes(None)
    jobs = ns.run_all(modes, ns.FILES, tmp_path, SAMPLE, workers=os.cpu_count() or 1, timeout=60.0, quiet=True)
    problems = [f"{j.mode} {j.file}: {p}" for j in jobs for p in j.problems]
    summary = ns.compare(ns.load_results(tmp_path, modes), ns.read_expected(ns.EXPECTED))
    out = io.StringIO()
    ns.print_summary(summary, details=True, missing=missing, out=out)
    target = os.environ.get("NPGPU_NUMPY_SUITE_WRITE")
    if target:
        ns.write_failures(summary, Path(target))
    assert not problems, "\n".join(problems)
    assert summary.counts, "no test ran"
    if summary.unexpected or summary.stale:  # (pytest.fail: the summary is the message, not a repr of it)
        pytest.fail(out.getvalue(), pytrace=False)
