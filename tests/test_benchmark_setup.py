"""The asv suites' shared setup (benchmarks/common.py): a benchmark of the device path's own cost
keeps its arrays on the device (``pinned``), where residency would move them to the host and the
figures would be NumPy's; the rules come back at teardown. Answers are NumPy's either way."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_residency import GPU, lu  # noqa: E402  (a GPU's costs; LU's row and element work, which residency moves)

from benchmarks.common import BackendBenchmark  # noqa: E402
from npgpu import _array, _config, _residency  # noqa: E402
from npgpu.backends import get_backend  # noqa: E402


@pytest.mark.parametrize("pinned", [False, True])
def test_a_pinned_benchmark_keeps_its_arrays_on_the_device(monkeypatch, pinned):
    monkeypatch.setattr(get_backend("emulated"), "costs", GPU)
    rules = (_residency.SHARE, _residency.FLOOR)
    host = numpy.random.default_rng(0).random((60, 60)) + 60 * numpy.eye(60)
    expected = host.copy()
    lu(expected, 60)
    bench = BackendBenchmark()
    bench.setup_backend("npgpu-emulated", pinned=pinned, threshold=0)
    try:
        A = bench.xp.asarray(host.copy())
        lu(A, 60)
        assert type(A) is (_array.DeviceArray if pinned else _array.ResidentArray)
        numpy.testing.assert_array_equal(numpy.asarray(A), expected)
    finally:
        bench.teardown()
        _residency._Window.reset()
    assert (_residency.SHARE, _residency.FLOOR) == rules
    assert _config.current_backend() is None
