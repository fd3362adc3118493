"""A kernel laid out as NPBench lays out its rows (bench_info/<name>.json, the initializer and the
NumPy kernel under npbench/benchmarks/<relative_path>/), written for the tests of the tools that
read NPBench's folder. The kernels are the tests' own, not NPBench's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_row(root: Path, info: dict[str, Any], init: str, kernel: str) -> Path:
    """Write one row (``info``: bench_info's "benchmark" object) under ``root``; returns ``root``."""
    name = info["module_name"]
    (root / "bench_info").mkdir(parents=True, exist_ok=True)
    (root / "bench_info" / f"{name}.json").write_text(json.dumps({"benchmark": info}))
    folder = root / "npbench" / "benchmarks" / info["relative_path"]
    folder.mkdir(parents=True)
    (folder / f"{name}.py").write_text(init)
    (folder / f"{name}_numpy.py").write_text(kernel)
    return root
