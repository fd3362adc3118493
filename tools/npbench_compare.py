"""npgpu against NPBench's hand-ported CuPy kernels over the same rows, from ``run.py --json``.

``python tools/npbench_compare.py TABLE.json [...]``: for each JSON table written by
``../shared/npbench/run.py --cupy --json``, one line per kernel and three geomeans of the speedup
over NumPy: npgpu's over the rows npgpu got right, the port's over the rows the port got right
(the two run.py prints, which are over different rows wherever one of them is wrong), and both
over the rows both got right, which is the comparison the targets of issue #14 ask for.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def speedup(row: dict[str, Any], key: str) -> float | None:
    """NumPy's time over ``key``'s (``npgpu_s`` or ``cupy_s``); None where it was not timed."""
    numpy_s, other = row.get("numpy_s"), row.get(key)
    return numpy_s / other if numpy_s and other else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The geomeans, with the rows each is taken over."""
    npgpu_ok = [r for r in rows if r.get("ok") and speedup(r, "npgpu_s")]
    port_ok = [r for r in rows if r.get("cupy_ok") and speedup(r, "cupy_s")]
    both = [r for r in npgpu_ok if r.get("cupy_ok") and speedup(r, "cupy_s")]
    return {
        "rows": len(rows),
        "npgpu": (len(npgpu_ok), geomean([speedup(r, "npgpu_s") for r in npgpu_ok])),
        "port": (len(port_ok), geomean([speedup(r, "cupy_s") for r in port_ok])),
        "both": (len(both), geomean([speedup(r, "npgpu_s") for r in both]),
                 geomean([speedup(r, "cupy_s") for r in both])),
        "port_wrong": [r["bench"] for r in rows if "cupy_s" in r and not r.get("cupy_ok")],
        "npgpu_wrong": [r["bench"] for r in rows if not r.get("ok")],
    }


def _cell(value: float | None, ok: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + ("" if ok else " (wrong)")


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| kernel | npgpu | port |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['bench']} | {_cell(speedup(r, 'npgpu_s'), r.get('ok'))} "
                     f"| {_cell(speedup(r, 'cupy_s'), r.get('cupy_ok'))} |")
    s = summary(rows)
    n, both_npgpu, both_port = s["both"]
    lines += [
        "",
        f"npgpu, over the {s['npgpu'][0]} rows it got right: {s['npgpu'][1]:.2f}x",
        f"port, over the {s['port'][0]} rows it got right: {s['port'][1]:.2f}x",
        f"both, over the {n} rows both got right: npgpu {both_npgpu:.2f}x, port {both_port:.2f}x "
        f"(npgpu/port {both_npgpu / both_port:.3f})",
    ]
    if s["port_wrong"]:
        lines.append(f"port wrong: {', '.join(s['port_wrong'])}")
    if s["npgpu_wrong"]:
        lines.append(f"npgpu wrong or not run: {', '.join(s['npgpu_wrong'])}")
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python tools/npbench_compare.py TABLE.json [...]", file=sys.stderr)
        return 2
    for path in paths:
        with open(path) as f:
            rows = json.load(f)
        print(f"## {path}\n\n{render(rows)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
