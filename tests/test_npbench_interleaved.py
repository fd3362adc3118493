"""tools/npbench_interleaved.py: NumPy and npgpu timed call by call on kernels laid out as NPBench's.

The kernels here are this test's own (an NPBench-shaped folder written to a temporary directory),
not NPBench's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import npbench_interleaved as ni  # noqa: E402  (tools/ is not a package)
from npbench_toy import write_row  # noqa: E402

import npgpu  # noqa: E402

KERNEL = """import numpy as np


def kernel(TSTEPS, x, y):
    for t in range(TSTEPS):
        y[1:] += 0.5 * np.sqrt(x[1:] + t)
    return y.sum()
"""

INIT = """import numpy as np


def initialize(N):
    return np.linspace(0.0, 1.0, N), np.zeros(N)
"""


def _folder(root: Path, kernel: str = KERNEL) -> Path:
    return write_row(root, {
        "relative_path": "toy/stencil", "module_name": "stencil", "func_name": "kernel",
        "parameters": {"S": {"N": 5000, "TSTEPS": 4}},
        "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["x", "y"]},
        "input_args": ["TSTEPS", "x", "y"], "array_args": ["x", "y"], "output_args": ["y"]}, INIT, kernel)


def test_a_row_times_both_in_alternating_rounds_and_checks_the_answers(tmp_path):
    root = _folder(tmp_path)
    out = tmp_path / "rows.json"
    code = ni.main(["--root", str(root), "--backend", "emulated", "--preset", "S", "--only", "stencil",
                    "--rounds", "3", "--json", str(out)])
    assert code == 0
    [row] = json.loads(out.read_text())
    assert row["bench"] == "stencil" and row["ok"] is True
    assert len(row["numpy_times"]) == len(row["npgpu_times"]) == len(row["round_speedups"]) == 3
    assert row["numpy_s"] == sorted(row["numpy_times"])[1] and row["npgpu_s"] == sorted(row["npgpu_times"])[1]
    assert row["speedup"] == pytest.approx(row["numpy_s"] / row["npgpu_s"])


def test_the_report_of_the_last_npgpu_call_is_printed(tmp_path, capsys):
    """``--report LINES``: the first lines of ``npgpu.report()`` for the row's last npgpu call
    only (its two inputs' ``asarray``, not the first call's or the other rounds')."""
    root = _folder(tmp_path)
    out = tmp_path / "rows.json"
    assert ni.main(["--root", str(root), "--backend", "emulated", "--only", "stencil", "--rounds", "2",
                    "--report", "12", "--json", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    [row] = json.loads(out.read_text())
    report = row["last_report"].splitlines()
    assert printed[1:13] == report[:12]
    asarray = next(line for line in report if line.startswith("asarray "))
    assert asarray.split()[1:3] == ["0", "2"]  # (device, host: x and y of one call, small: on the host)


def test_a_wrong_answer_fails_the_row(tmp_path, monkeypatch):
    """A kernel whose accelerated run answers otherwise (here: the rewritten module made to add 1)
    is reported wrong, and the run exits 1."""
    root = _folder(tmp_path)
    real = ni.load

    def skewed(path, name, accelerated):
        module = real(path, name, accelerated)
        if accelerated:
            kernel = module.kernel
            module.kernel = lambda T, x, y: kernel(T, x, y) + 1.0
        return module

    monkeypatch.setattr(ni, "load", skewed)
    assert ni.main(["--root", str(root), "--backend", "emulated", "--only", "stencil", "--rounds", "1"]) == 1


def test_the_accelerated_module_imports_npgpu_as_np(tmp_path):
    root = _folder(tmp_path)
    path = root / "npbench" / "benchmarks" / "toy" / "stencil" / "stencil_numpy.py"
    assert ni.load(path, "_test_plain", False).np is numpy
    assert ni.load(path, "_test_accelerated", True).np is npgpu


def test_agreement_is_npbenchs_tolerance():
    a = numpy.linspace(1.0, 2.0, 100)
    assert ni.agrees([a], [a * (1 + 1e-7)])
    assert not ni.agrees([a], [a * (1 + 1e-3)])
    assert not ni.agrees([a], [a[:-1]])
    assert ni.agrees([numpy.array([1.0, numpy.nan])], [numpy.array([1.0, numpy.nan])])


def test_every_npgpu_call_hands_its_inputs_in_from_one_line(tmp_path, monkeypatch):
    """Placement learns where arrays are made by the line that makes them (residency's origin):
    the first call and the rounds must make theirs on one line, or what the first call learned
    (lu's matrix belongs on the host) is learned again in the first round, which then times the
    device's first call twice."""
    root = _folder(tmp_path)
    sites = []
    real = npgpu.asarray

    def asarray(*args, **kwargs):
        caller = sys._getframe(1)
        sites.append((caller.f_code, caller.f_lineno))
        return real(*args, **kwargs)

    monkeypatch.setattr(npgpu, "asarray", asarray)
    assert ni.main(["--root", str(root), "--backend", "emulated", "--only", "stencil", "--rounds", "3"]) == 0
    assert len(sites) == 2 * 4  # (x and y, in the first call and three rounds)
    assert len(set(sites)) == 1
