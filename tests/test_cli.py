"""The npgpu command line: run behaves like python, bench times and checks outputs, info reports.

Real scripts written into tmp_path, run in subprocesses and compared with plain ``python script.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import subprocess_env

from npgpu import cli


def _run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=subprocess_env(), input=stdin, capture_output=True, text=True, timeout=180)


def _script(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _python(script: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, str(script), *args], script.parent, stdin)


def _npgpu(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "npgpu", *args], cwd, stdin)


# ----------------------------------------------------------------------------- run

OK_SCRIPT = """
import os
import sys
import numpy as np
from numpy.linalg import norm

x = np.arange(12.0).reshape(3, 4)
print("name", __name__, os.path.basename(__file__), os.path.isabs(__file__))
print("argv", sys.argv[1:], os.path.basename(sys.argv[0]))
print("path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print("sum", float(x.sum()), "norm", round(float(norm(x)), 12))
"""


def test_run_succeeds_like_python(tmp_path: Path) -> None:
    script = _script(tmp_path, "ok.py", OK_SCRIPT)
    want = _python(script, "1", "--flag")
    got = _npgpu("run", "--backend", "numpy", str(script), "1", "--flag", cwd=tmp_path)
    assert (got.returncode, got.stdout, got.stderr) == (0, want.stdout, "")


def test_run_entry_point_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "npgpu run" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2


RAISING_SCRIPT = """
import numpy as np


def inner(a):
    return a.reshape(5, 5)


def outer():
    return inner(np.arange(10))


print("before", flush=True)
outer()
"""


def test_run_exception_traceback_and_status_as_python(tmp_path: Path) -> None:
    script = _script(tmp_path, "boom.py", RAISING_SCRIPT)
    want = _python(script)
    got = _npgpu("run", "--backend", "numpy", str(script), cwd=tmp_path)
    assert want.returncode == 1
    assert got.returncode == 1
    assert got.stdout == want.stdout == "before\n"
    # The frames are the user's: no npgpu runner frame ahead of the script's.
    assert got.stderr.splitlines()[:7] == want.stderr.splitlines()[:7]
    assert "cli" + os.sep not in got.stderr and "legacy.py" not in got.stderr
    assert got.stderr.splitlines()[-1] == want.stderr.splitlines()[-1]
    assert got.stderr.splitlines()[-1].startswith("ValueError: cannot reshape array of size 10")


@pytest.mark.parametrize(("code", "status", "stderr"), [("3", 3, ""), ("'bad input'", 1, "bad input\n"), ("", 0, "")])
def test_run_sys_exit_as_python(tmp_path: Path, code: str, status: int, stderr: str) -> None:
    script = _script(tmp_path, "leave.py", f"import sys\nimport numpy\nprint('x')\nsys.exit({code})\n")
    got = _npgpu("run", "--backend", "numpy", str(script), cwd=tmp_path)
    assert (got.returncode, got.stdout, got.stderr) == (status, "x\n", stderr)
    assert _python(script).returncode == status


STDIN_SCRIPT = """
import sys
import numpy as np

values = np.array([float(v) for v in sys.stdin.read().split()])
print("n", values.size, "sum", float(values.sum()), "mean", float(values.mean()))
"""


def test_run_reads_stdin(tmp_path: Path) -> None:
    script = _script(tmp_path, "reader.py", STDIN_SCRIPT)
    data = "1 2 3\n4.5 5.5\n"
    want = _python(script, stdin=data)
    got = _npgpu("run", "--backend", "numpy", str(script), stdin=data, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout == "n 5 sum 16.0 mean 3.2\n"


def test_run_missing_script_and_unavailable_backend(tmp_path: Path) -> None:
    got = _npgpu("run", str(tmp_path / "nope.py"), cwd=tmp_path)
    assert got.returncode == 2 and "can't open file" in got.stderr
    from npgpu import backends

    if backends.unavailable_reason("cupy") is not None:
        script = _script(tmp_path, "ok.py", "print(1)\n")
        got = _npgpu("run", "--backend", "cupy", str(script), cwd=tmp_path)
        assert got.returncode == 2 and "can't run here" in got.stderr


def test_run_report_json(tmp_path: Path) -> None:
    script = _script(tmp_path, "ok.py", OK_SCRIPT)
    report = tmp_path / "report.json"
    got = _npgpu("run", "--backend", "numpy", "--report-json", str(report), str(script), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    doc = json.loads(report.read_text())
    assert doc["backend"] == "numpy"
    assert set(doc) == {"backend", "report", "text"}


# ----------------------------------------------------------------------------- bench

SAVING_SCRIPT = """
import sys
import numpy as np

n = int(sys.argv[1])
x = np.linspace(0.0, 1.0, n)
np.save("x.npy", np.sqrt(x))
np.savez("both.npz", a=x * 2, b=np.arange(n))
print("mean", float(np.sqrt(x).mean()))
"""


@pytest.mark.slow
def test_bench_agreeing_outputs(tmp_path: Path) -> None:
    script = _script(tmp_path, "saver.py", SAVING_SCRIPT)
    plot = tmp_path / "cmp.png"
    got = _npgpu(
        "bench",
        str(script),
        "1000",
        "--backend",
        "numpy",
        "--repeat",
        "2",
        "--warmup",
        "0",
        "--plot",
        str(plot),
        cwd=tmp_path,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    assert "outputs agree" in got.stdout
    assert "both.npz" in got.stdout and "x.npy" in got.stdout
    assert "speedup" in got.stdout and "median" in got.stdout
    assert "npgpu bench:" in got.stderr  # progress
    assert plot.stat().st_size > 1000
    assert not (tmp_path / "x.npy").exists()  # each run had its own working directory


@pytest.mark.slow
def test_bench_json(tmp_path: Path) -> None:
    script = _script(tmp_path, "saver.py", SAVING_SCRIPT)
    got = _npgpu(
        "bench", "--json", "--repeat", "1", "--warmup", "0", "--backend", "numpy", str(script), "10", cwd=tmp_path
    )
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc["agree"] is True and doc["args"] == ["10"]
    assert len(doc["numpy"]["times"]) == len(doc["npgpu"]["times"]) == 1
    assert doc["speedup"] > 0 and doc["backend"] == "numpy"


DIFFERING_SCRIPT = """
import numpy as np

print("module", np.__name__)
np.save("which.npy", np.array([len(np.__name__), 1.0]))
"""


@pytest.mark.slow
def test_bench_reports_differences_and_fails(tmp_path: Path) -> None:
    script = _script(tmp_path, "differs.py", DIFFERING_SCRIPT)
    got = _npgpu("bench", str(script), "--backend", "numpy", "--repeat", "1", "--warmup", "0", cwd=tmp_path)
    assert got.returncode == 1
    assert "OUTPUTS DIFFER" in got.stdout
    assert "'module numpy'" in got.stdout and "'module npgpu'" in got.stdout


@pytest.mark.slow
def test_bench_failing_script(tmp_path: Path) -> None:
    script = _script(tmp_path, "boom.py", RAISING_SCRIPT)
    got = _npgpu("bench", str(script), "--backend", "numpy", "--repeat", "1", "--warmup", "0", cwd=tmp_path)
    assert got.returncode == 2
    assert "exited with status 1" in got.stderr and "ValueError" in got.stderr


def test_bench_option_placement() -> None:
    options, script = cli._split_bench_tokens(["s.py", "100", "--backend", "opencl", "--", "--repeat", "x"])
    assert options == ["--backend", "opencl"]
    assert script == ["s.py", "100", "--repeat", "x"]
    assert cli._split_bench_tokens(["--repeat=3", "s.py", "-v"]) == (["--repeat=3"], ["s.py", "-v"])


# ----------------------------------------------------------------------------- comparison


def test_compare_text_tolerances() -> None:
    assert cli.compare_text("pi 3.14159265\n", "pi 3.14159266\n", rtol=1e-6) == []
    assert cli.compare_text("pi 3.14159\n", "pi 3.15\n", rtol=1e-6) != []
    assert cli.compare_text("count 1000000\n", "count 1000001\n", rtol=1e-3) != []  # integers are exact
    assert cli.compare_text("[ 1.  -2.5]\n", "[ 1.000000001 -2.5]\n") == []  # padding is not significant
    assert cli.compare_text("float64 nan inf\n", "float64 nan inf\n") == []
    assert cli.compare_text("float64\n", "float32\n") != []
    assert cli.compare_text("a\nb\n", "a\n") == ["2 lines expected, 1 lines printed"]
    assert cli.compare_text("t 0.51 s\nx 1\n", "t 0.20 s\nx 1\n", ignore=[r"^t "]) == []


def test_compare_arrays() -> None:
    import numpy

    a = numpy.linspace(0.0, 1.0, 10)
    assert cli.compare_arrays("a", a, a + 1e-12, 1e-6, 1e-9) == []
    assert "dtype" in cli.compare_arrays("a", a, a.astype(numpy.float32), 1e-6, 0.0)[0]
    assert "1 of 10 values differ" in cli.compare_arrays("a", a, numpy.where(a == 1.0, 2.0, a), 1e-6, 0.0)[0]


# ----------------------------------------------------------------------------- info


def test_info(tmp_path: Path) -> None:
    got = _npgpu("info", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    for word in ("python", "numpy", "backends", "cupy", "opencl", "placement thresholds"):
        assert word in got.stdout
    doc = json.loads(_npgpu("info", "--json", cwd=tmp_path).stdout)
    assert doc["backends"]["numpy"]["available"] is True
    assert set(doc["backends"]) >= {"numpy", "cupy", "opencl"}
    for entry in doc["backends"].values():
        assert entry["available"] or entry["reason"]
    thresholds = doc["thresholds"]
    for name in ("cupy", "opencl"):
        if doc["backends"][name]["available"]:  # (the costs the thresholds were computed from)
            assert {f"{name} measured {k}" for k in ("launch_us", "device_GBps", "host_GBps", "host_cached_GBps",
                                                     "upload_us", "upload_GBps")} <= set(thresholds)
            assert all(thresholds[k] > 0 for k in thresholds if k.startswith(f"{name} measured"))


def test_run_keyboard_interrupt_as_python(tmp_path: Path) -> None:
    script = _script(tmp_path, "interrupted.py", "import numpy\nraise KeyboardInterrupt\n")
    want = _python(script)
    got = _npgpu("run", "--backend", "numpy", str(script), cwd=tmp_path)
    assert got.returncode == want.returncode  # killed by SIGINT, as python is
    assert got.stderr.splitlines()[-1] == want.stderr.splitlines()[-1] == "KeyboardInterrupt"


def test_run_redirects_modules_of_the_script_dir_only(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("import numpy as np\n\ndef kind():\n    return np.__name__\n")
    script = _script(
        tmp_path,
        "main.py",
        """
        import sys
        import scipy.linalg._basic
        import helper
        import numpy as np
        print(np.__name__, helper.kind(), sys.modules["numpy"].__name__, scipy.linalg._basic.np.__name__)
        """,
    )
    got = _npgpu("run", "--backend", "numpy", str(script), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout == "npgpu npgpu numpy numpy\n"
