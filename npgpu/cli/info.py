"""``npgpu info``: versions, backends (and why one can't run here), devices, thresholds."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from importlib import metadata
from typing import Any

import numpy

import npgpu
from npgpu import _config, _placement, backends


def _cmd_info(tokens: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="npgpu info", description="Versions, backends, devices and thresholds.")
    parser.add_argument("--json", action="store_true", help="print as JSON")
    opts = parser.parse_args(tokens)
    doc = collect_info()
    if opts.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_info_text(doc))
    return 0


def _probe_version(module: str) -> dict[str, Any]:
    """Import ``module`` in a child process: a driver that crashes on import can't take us down."""
    code = f"import sys, {module}; sys.stdout.write(str({module}.__version__))"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"importable": False, "why": "importing it did not finish within 120 s"}
    if proc.returncode == 0:
        return {"importable": True, "version": proc.stdout.strip()}
    if proc.returncode < 0:
        return {"importable": False, "crashed": True, "why": f"importing it crashed (signal {-proc.returncode})"}
    last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return {"importable": False, "why": last}


def collect_info() -> dict[str, Any]:
    """Everything ``npgpu info`` shows, as plain data."""

    doc: dict[str, Any] = {
        "npgpu": getattr(npgpu, "__version__", None) or _dist_version("npgpu"),
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "packages": {},
        "backends": {},
        "active_backend": npgpu.current_backend(),
    }
    explanation = npgpu.explain()  # (auto's choice, why, and what would accelerate more)
    doc["auto_picks"] = explanation.choice
    doc["auto"] = explanation.as_dict()
    crashed = set()
    for package, backend in (("cupy", "cupy"), ("pyopencl", "opencl")):
        probe = _probe_version(package)
        doc["packages"][package] = probe
        if probe.get("crashed"):
            crashed.add(backend)
    available: dict[str, Any] = {}
    for name in backends.BACKEND_NAMES:
        entry: dict[str, Any] = {}
        if name in crashed:
            entry["reason"] = f"importing {'cupy' if name == 'cupy' else 'pyopencl'} crashes the interpreter"
        else:
            entry["reason"] = backends.unavailable_reason(name)
        entry["available"] = entry["reason"] is None
        if entry["available"]:
            available[name] = backends.get_backend(name)
            entry["describe"] = available[name].describe()
        doc["backends"][name] = entry
    doc["thresholds"] = _thresholds(available)
    return doc


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _thresholds(available: dict[str, Any]) -> dict[str, Any]:
    """The placement thresholds (bytes; host below, device above): in force now and per backend."""

    state = _config.current()
    found: dict[str, Any] = {"explicit (enable(threshold=...))": state.threshold}
    if state.backend is not None:
        found[f"in force now ({state.backend.name}) creation bytes"] = _placement.threshold_bytes(state)
        found[f"in force now ({state.backend.name}) upload bytes"] = _placement.upload_threshold_bytes(state)
    for name, backend in available.items():
        if backend.is_host:
            continue  # NumPy itself: nothing to place
        default = replace(state, backend=backend, threshold=None)
        found[f"{name} creation bytes"] = _placement.threshold_bytes(default)
        found[f"{name} upload bytes"] = _placement.upload_threshold_bytes(default)
        if backend.costs is not None:  # (what the thresholds were computed from: backends/costs.py)
            for key, value in backend.costs.as_dict().items():
                found[f"{name} measured {key}"] = round(value, 2)
    return found


def _human(key: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2**20 and ("mem" in key or "bytes" in key):
        return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"
    return str(value)


def _info_text(doc: dict[str, Any]) -> str:
    lines = [
        f"npgpu     {doc['npgpu']}",
        f"python    {doc['python']}",
        f"platform  {doc['platform']}",
        f"numpy     {doc['numpy']}",
    ]
    for package, probe in doc["packages"].items():
        lines.append(f"{package:<9} {probe['version'] if probe['importable'] else 'not importable: ' + probe['why']}")
    auto = doc["auto"]
    lines += ["", f"auto picks {auto['choice']}: {auto['reason']}"]
    if auto["hint"]:
        lines.append(f"  to accelerate here: {auto['hint']}")
    lines += ["", f"backends (active: {doc['active_backend'] or 'none'}; auto picks {doc['auto_picks']})"]
    for name, entry in doc["backends"].items():
        lines.append(f"  {name:<7} {'can run here' if entry['available'] else 'unavailable: ' + entry['reason']}")
        for key, value in (entry.get("describe") or {}).items():
            if isinstance(value, list):
                for i, item in enumerate(value):
                    text = ", ".join(f"{k}={_human(k, v)}" for k, v in item.items()) if isinstance(item, dict) else item
                    lines.append(f"      {key}[{i}]: {text}")
            elif isinstance(value, dict):
                lines.append(f"      {key}: " + ", ".join(f"{k}={_human(k, v)}" for k, v in value.items()))
            else:
                lines.append(f"      {key}: {_human(key, value)}")
    lines += ["", "placement thresholds"]
    for key, value in doc["thresholds"].items():
        lines.append(f"  {key}: {_human(key, value)}")
    return "\n".join(lines) + "\n"
