"""tools/npbench_compare.py: geomeans over the rows both npgpu and the CuPy port got right."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import npbench_compare as nc  # noqa: E402  (tools/ is not a package)

ROWS = [
    {"bench": "a", "numpy_s": 1.0, "npgpu_s": 0.5, "ok": True, "cupy_s": 0.25, "cupy_ok": True},
    {"bench": "b", "numpy_s": 1.0, "npgpu_s": 0.1, "ok": True, "cupy_s": 0.01, "cupy_ok": False},
    {"bench": "c", "numpy_s": 2.0, "npgpu_s": 1.0, "ok": False, "cupy_s": 0.5, "cupy_ok": True},
    {"bench": "d", "numpy_s": 1.0, "npgpu_s": 0.125, "ok": True},  # (no port timed: timeout)
]


def test_each_geomean_is_over_the_rows_it_names():
    s = nc.summary(ROWS)
    assert s["npgpu"][0] == 3 and math.isclose(s["npgpu"][1], (2 * 10 * 8) ** (1 / 3))
    assert s["port"][0] == 2 and math.isclose(s["port"][1], (4 * 4) ** 0.5)
    n, npgpu, port = s["both"]
    assert n == 1 and math.isclose(npgpu, 2.0) and math.isclose(port, 4.0)
    assert s["port_wrong"] == ["b"] and s["npgpu_wrong"] == ["c"]


def test_the_table_marks_wrong_answers_and_names_the_shared_rows(tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(ROWS))
    assert nc.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| b | 10.00 | 100.00 (wrong) |" in out
    assert "| d | 8.00 | - |" in out
    assert "both, over the 1 rows both got right: npgpu 2.00x, port 4.00x (npgpu/port 0.500)" in out
    assert nc.main([]) == 2
