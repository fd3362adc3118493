"""tools/fuzz_programs.py: random programs run by NumPy and by npgpu agree, and its comparison
tells the differences it exists to find."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy
import pytest
from conftest import BACKEND_PARAMS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import fuzz_programs as fz  # noqa: E402  (tools/ is not a package)


@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "opencl", "cupy")])
@pytest.mark.parametrize("fusion", [True, False])
def test_random_programs_give_numpys_answers(backend, fusion):
    differ = [why for seed in range(60) if (why := fz.run_seed(seed, backend, 12, fusion)) is not None]
    assert not differ, differ[0]


def test_the_comparison_tells_bits_ulps_dtypes_and_exceptions():
    f64 = numpy.array([1.0, 0.0])
    assert fz.difference(f64, f64.copy(), False) is None
    assert fz.difference(f64, numpy.array([1.0, -0.0]), False) is not None  # (the sign of zero)
    near = numpy.array([numpy.nextafter(1.0, 2.0), 0.0])
    assert fz.difference(f64, near, False) is not None and fz.difference(f64, near, True) is None
    assert fz.difference(f64, numpy.array([1.1, 0.0]), True) is not None
    assert fz.difference(f64, f64.astype(numpy.float32), False) is not None
    assert fz.difference(numpy.array([numpy.nan]), numpy.array([numpy.nan]), False) is None
    assert fz.difference(numpy.array([numpy.nan]), -numpy.array([numpy.nan]), False) is None  # (x86's -nan)
    assert fz.difference(numpy.array([numpy.nan]), numpy.array([0.0]), True) is not None
    assert fz.difference(f64, numpy.array([5.0, 7.0]), fz.UNDEFINED) is None  # (NumPy's own undefined casts)
    assert fz.difference(f64.astype(numpy.float32), f64, fz.UNDEFINED) is not None  # (the dtype still counts)
    assert fz.difference(ValueError, ValueError, False) is None
    assert fz.difference(ValueError, TypeError, False) is not None
    assert fz.difference(ValueError, f64, False) is not None and fz.difference(f64, ValueError, False) is not None
    assert fz.difference(numpy.int8(3), numpy.int8(3), False) is None
    assert fz.difference(3, 3.0, False) is not None


def test_a_program_is_the_same_for_a_seed():
    assert fz.Program(5, 10).statements == fz.Program(5, 10).statements
    assert fz.Program(5, 10).statements != fz.Program(6, 10).statements


def test_a_time_limit_stops_before_the_next_program_and_says_how_many_ran(capsys):
    # (a device call's limit: a run cut by the shell's timeout printed no count at all)
    assert fz.main(["--seeds", "0:50", "--seconds", "1e-9"]) == 0
    assert capsys.readouterr().out.strip().endswith("0 programs (seeds 0:0, stopped at --seconds), 0 differ from NumPy")
    assert fz.main(["--seeds", "0:3", "--seconds", "600"]) == 0
    assert capsys.readouterr().out.strip().endswith("3 programs, 0 differ from NumPy")
