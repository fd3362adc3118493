"""Dask arrays of npgpu chunks (npgpu/dask.py) and array libraries' calls (npgpu/_callsite.py).

A module-scoped 2-worker LocalCluster (processes, PoCL through NPGPU_BACKEND in the workers'
environment) runs chunked elementwise work, reductions, matmul and a map_overlap stencil; every
answer is compared with the same Dask graph over NumPy chunks (reductions exactly: the same
chunking adds in the same order; transcendentals within 1 ulp), the workers' chunks must be
DeviceArrays and each worker's report must show device work. The threaded scheduler runs in a
subprocess (its threads see the process default, NPGPU_BACKEND).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy
import pytest

dask = pytest.importorskip("dask", reason="Dask is not installed (pip install 'npgpu[dask]')")
da = pytest.importorskip("dask.array", reason="dask.array is not importable")

import npgpu  # noqa: E402
from npgpu import _callsite  # noqa: E402
from npgpu.backends import unavailable_reason  # noqa: E402

pytestmark = pytest.mark.opencl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _opencl_or_skip() -> None:
    reason = unavailable_reason("opencl")
    if reason is not None:
        pytest.skip(reason)


def _host_graph(shape: tuple[int, ...] = (512, 512), chunks: int = 256) -> da.Array:
    return da.random.RandomState(0).random_sample(shape, chunks=chunks)


def _kinds(x: da.Array) -> set[str]:
    """The type names of ``x``'s computed chunks, found where they are computed."""
    marks = x.map_blocks(lambda b: numpy.full((1,) * b.ndim, type(b).__name__, dtype=object), dtype=object,
                         chunks=(1,) * x.ndim, meta=numpy.empty((0,) * x.ndim, dtype=object))
    return set(numpy.asarray(marks.compute()).ravel())


def _ulps(x: numpy.ndarray, y: numpy.ndarray) -> None:
    numpy.testing.assert_array_max_ulp(x, y, maxulp=1)


# -- registration -----------------------------------------------------------------------------

def test_import_npgpu_imports_no_dask_and_dask_learns_of_device_arrays_when_imported() -> None:
    code = ("import sys, npgpu; assert 'dask' not in sys.modules, 'import npgpu imported dask'\n"
            "import dask.array as da\n"
            "from dask.array.chunk_types import is_valid_chunk_type\n"
            "from dask.array.backends import array_creation_dispatch\n"
            "assert 'npgpu.dask' in sys.modules and is_valid_chunk_type(npgpu.DeviceArray)\n"
            "print(type(array_creation_dispatch.dispatch('npgpu')).__name__)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NPGPU_BACKEND": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NpgpuBackendEntrypoint"


def test_entry_points_of_an_installed_npgpu(tmp_path) -> None:
    """The pyproject's entry points, installed as a dist-info: ``import dask`` reads ``dask.sizeof``
    (which imports npgpu, no part of Dask), and the array backend registers with ``dask.array``."""
    _opencl_or_skip()
    info = tmp_path / "npgpu_entry_points-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: npgpu-entry-points\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[dask.sizeof]\nnpgpu = npgpu.dask_hooks:register_sizeof\n\n"
                                           "[dask.array.backends]\nnpgpu = npgpu.dask:NpgpuBackendEntrypoint\n")
    code = ("import sys, dask\n"
            "assert 'npgpu' in sys.modules and 'npgpu.dask' not in sys.modules\n"
            "from dask.sizeof import sizeof\n"
            "import npgpu\n"
            "assert sizeof.dispatch(npgpu.DeviceArray).__module__ == 'npgpu.dask_hooks'\n"
            "import dask.array as da\n"
            "assert 'npgpu.dask' in sys.modules\n"
            "with npgpu.enable('opencl'), dask.config.set({'array.backend': 'npgpu'}):\n"
            "    print(type(da.zeros(10, chunks=5)._meta).__name__)\n")
    pythonpath = os.pathsep.join([str(tmp_path), ROOT, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NPGPU_BACKEND": "", "PYTHONPATH": pythonpath})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "DeviceArray"


def test_dask_arrays_and_device_arrays_combine_into_dask_graphs() -> None:
    _opencl_or_skip()
    host = numpy.random.default_rng(1).random(40_000)
    with npgpu.enable("opencl", threshold=0):
        x = npgpu.asarray(host)
        d = da.from_array(x, chunks=10_000)
        for result in (d + x, x + d, numpy.multiply(x, d), d * 2.5 - x):
            assert isinstance(result, da.Array)
        numpy.testing.assert_array_equal(npgpu.asnumpy((x + d).compute(scheduler="sync")), host + host)
        numpy.testing.assert_array_equal(npgpu.asnumpy((d * 2.5 - x).compute(scheduler="sync")), host * 2.5 - host)


def test_dask_calls_on_device_chunks_stay_on_the_device() -> None:
    """Dask is an array library: its NumPy calls on device chunks run on the device, counted at
    Dask's lines (no user line on a task's stack), with NumPy's answers for the same chunking."""
    _opencl_or_skip()
    host = numpy.random.default_rng(2).random((400, 300))
    expected = da.from_array(host, chunks=(100, 150))
    npgpu.report(reset=True)
    with npgpu.enable("opencl", threshold=0):
        d = da.from_array(npgpu.asarray(host), chunks=(100, 150))
        total = (numpy.sin(d) + 1).sum().compute(scheduler="sync")
        columns = d.mean(axis=0).compute(scheduler="sync")
    assert total == (numpy.sin(expected) + 1).sum().compute(scheduler="sync")
    # (the device adds in NumPy's order: npgpu/kernels/order.py)
    numpy.testing.assert_array_equal(npgpu.asnumpy(columns), expected.mean(axis=0).compute(scheduler="sync"))
    functions = npgpu.report().as_dict()["functions"]
    assert functions["sin"]["device"] > 0 and functions["sin"]["host"] == 0
    assert functions["sum"]["device"] >= 12 and all(f["fallback"] == 0 for f in functions.values())
    assert functions.get("<conversion to host>", {}).get("bytes_to_host", 0) < host.nbytes  # no chunk read back


def test_array_libraries_are_configurable() -> None:
    _opencl_or_skip()
    assert "dask" in npgpu.array_libraries() and "xarray" in npgpu.array_libraries()
    host = numpy.random.default_rng(3).random(20_000)
    previous = npgpu.set_array_libraries([name for name in npgpu.array_libraries() if name not in ("dask", "toolz")])
    try:
        npgpu.report(reset=True)
        with npgpu.enable("opencl", threshold=0):
            d = da.from_array(npgpu.asarray(host), chunks=5_000)
            result = numpy.sin(d).compute(scheduler="sync")
        assert type(result) is numpy.ndarray  # a library's call: NumPy's answer, on the host
        sin = npgpu.report().as_dict()["functions"]["sin"]
        assert sin["host"] >= 4 and sin["device"] == 0  # (the chunks and the meta Dask computes)
    finally:
        npgpu.set_array_libraries(previous)
    assert npgpu.array_libraries() == tuple(sorted(previous))
    with pytest.raises(TypeError):
        npgpu.set_array_libraries("dask")
    with pytest.raises(ValueError):
        npgpu.set_array_libraries(["dask/array"])


@pytest.mark.parametrize(("text", "added", "removed"), [
    ("", (), ()), ("+mylib", ("mylib",), ()), ("-xarray,+mylib", ("mylib",), ("xarray",)),
])
def test_array_libraries_from_the_environment(text: str, added: tuple[str, ...], removed: tuple[str, ...]) -> None:
    names = _callsite._from_environment(text)
    assert names == (set(_callsite.DEFAULT_ARRAY_LIBRARIES) | set(added)) - set(removed)


def test_array_libraries_from_the_environment_replace_and_refuse() -> None:
    assert _callsite._from_environment("dask, xarray") == {"dask", "xarray"}
    with pytest.raises(ValueError, match="NPGPU_ARRAY_LIBRARIES"):
        _callsite._from_environment("dask;xarray")


def test_site_packages_files_are_told_apart_by_package() -> None:
    site = os.path.join(os.sep, "venv", "lib", "python3.11", "site-packages")
    assert _callsite.kind_of_file(os.path.join(site, "dask", "array", "core.py")) == _callsite.ARRAY_LIBRARY
    assert _callsite.kind_of_file(os.path.join(site, "scipy", "linalg", "x.py")) == _callsite.LIBRARY
    assert _callsite.kind_of_file(os.path.join(site, "toolz", "functoolz.py")) == _callsite.ARRAY_LIBRARY
    assert _callsite.kind_of_file(os.path.join(site, "daskish.py")) == _callsite.LIBRARY


# -- the "npgpu" array backend ----------------------------------------------------------------

def test_array_backend_makes_device_chunks_and_to_backend_moves_them() -> None:
    _opencl_or_skip()
    with npgpu.enable("opencl"), dask.config.set({"array.backend": "npgpu"}):
        ones = da.ones((300, 200), chunks=100)
        full = da.full((50,), 7, chunks=25, dtype=numpy.int64)
        ramp = da.arange(0, 40, 3, chunks=5)
        for made in (ones, full, ramp):
            assert type(made._meta) is npgpu.DeviceArray
            assert _kinds_sync(made) == {"DeviceArray"}
        numpy.testing.assert_array_equal(npgpu.asnumpy(ones.compute(scheduler="sync")), numpy.ones((300, 200)))
        numpy.testing.assert_array_equal(npgpu.asnumpy(full.compute(scheduler="sync")), numpy.full(50, 7))
        numpy.testing.assert_array_equal(npgpu.asnumpy(ramp.compute(scheduler="sync")), numpy.arange(0, 40, 3))
        state = da.random.RandomState(5)
        assert type(state._RandomState) is type and state._RandomState is npgpu.random.RandomState
    with npgpu.enable("opencl"):
        host = _host_graph((64, 64), 32)
        moved = host.to_backend("npgpu")
        assert type(moved._meta) is npgpu.DeviceArray and _kinds_sync(moved) == {"DeviceArray"}
        # (to_backend("numpy") keeps device chunks: Dask's numpy backend sees isinstance(meta, numpy.ndarray)
        # hold, as it does for device arrays; map_blocks(npgpu.asnumpy) moves them)
        back = moved.map_blocks(npgpu.asnumpy, meta=numpy.empty((0, 0)))
        assert _kinds_sync(back) == {"ndarray"}
        numpy.testing.assert_array_equal(back.compute(scheduler="sync"), host.compute(scheduler="sync"))


def _kinds_sync(x: da.Array) -> set[str]:
    with dask.config.set(scheduler="sync"):
        return _kinds(x)


def test_sizeof_and_tokens_never_read_device_memory() -> None:
    _opencl_or_skip()
    from dask.sizeof import sizeof
    from dask.tokenize import tokenize

    with npgpu.enable("opencl", threshold=0):
        x = npgpu.asarray(numpy.arange(10_000.0))
        npgpu.report(reset=True)
        assert sizeof(x) == x.nbytes == 80_000
        assert tokenize(x) != tokenize(x)  # never hashed from the device's bytes: a fresh name each time
        assert npgpu.report().as_dict()["totals"]["bytes_to_host"] == 0


# -- xarray -------------------------------------------------------------------------------------

def test_xarray_arithmetic_keeps_device_arrays() -> None:
    xr = pytest.importorskip("xarray", reason="xarray is not installed")
    _opencl_or_skip()
    host = numpy.random.default_rng(4).random((30, 40))
    with npgpu.enable("opencl", threshold=0):
        a = xr.DataArray(npgpu.asarray(host), dims=("t", "s"))
        for result, expected, ulps in ((a * 2 + 1, host * 2 + 1, 0), (numpy.sin(a), numpy.sin(host), 1),
                                       (a.mean("t"), host.mean(axis=0), 4)):
            assert type(result.data) is npgpu.DeviceArray
            numpy.testing.assert_array_max_ulp(npgpu.asnumpy(result.data), expected, ulps)


# -- the threaded scheduler (a subprocess: its threads see the process default) ------------------

def test_threaded_scheduler_computes_on_the_device_with_numpys_answers() -> None:
    _opencl_or_skip()
    script = textwrap.dedent("""
        import numpy, npgpu, dask, dask.array as da
        host = da.random.RandomState(0).random_sample((512, 512), chunks=256)
        x = host.to_backend("npgpu")
        with dask.config.set(scheduler="threads", num_workers=2):
            kinds = set(x.map_blocks(lambda b: numpy.full((1, 1), type(b).__name__, dtype=object), dtype=object,
                                     chunks=(1, 1)).compute().ravel())
            assert kinds == {"DeviceArray"}, kinds
            assert x.sum().compute() == host.sum().compute()
            numpy.testing.assert_array_max_ulp(npgpu.asnumpy(numpy.exp(x).compute()), numpy.exp(host).compute(), 1)
        exp = npgpu.report().as_dict()["functions"]["exp"]
        assert exp["device"] >= 4 and exp["host"] == 0, exp
        print("ok")
    """)
    env = {**os.environ, "NPGPU_BACKEND": "opencl", "NPGPU_THRESHOLD": "0"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# -- a 2-worker LocalCluster ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install 'npgpu[dask]')")
    _opencl_or_skip()
    # (in os.environ before the workers start, as the README says: LocalCluster(env=...) applies its
    # variables after a spawned worker imported dask, and an installed npgpu is imported with dask,
    # through Dask's sizeof entry point, so it would read an environment without them)
    env = {"NPGPU_BACKEND": "opencl", "NPGPU_THRESHOLD": "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as c:
            yield c
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _worker_totals() -> dict[str, int]:
    totals = npgpu.report().as_dict()["totals"]
    return {"device": totals["device"], "backend": npgpu.current_backend()}


def test_local_cluster_workers_compute_device_chunks(client) -> None:
    host = _host_graph()
    with npgpu.enable("opencl"):
        x = host.to_backend("npgpu")
    assert _kinds(x) == {"DeviceArray"}
    assert _kinds(host) == {"ndarray"}

    _ulps(npgpu.asnumpy((numpy.sin(x) * 2 + 1).compute()), (numpy.sin(host) * 2 + 1).compute())
    _ulps(npgpu.asnumpy(numpy.exp(-x).compute()), numpy.exp(-host).compute())
    assert x.sum().compute() == host.sum().compute()
    numpy.testing.assert_array_equal(npgpu.asnumpy(x.mean(axis=0).compute()), host.mean(axis=0).compute())
    numpy.testing.assert_array_equal(npgpu.asnumpy(x.sum(axis=1).compute()), host.sum(axis=1).compute())
    assert x.max().compute() == host.max().compute()
    numpy.testing.assert_allclose(npgpu.asnumpy((x @ x.T).compute()), (host @ host.T).compute(), rtol=1e-13)

    def laplacian(b):
        out = b.copy()
        out[1:-1, 1:-1] = b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] - 4 * b[1:-1, 1:-1]
        return out

    stencil = x.map_overlap(laplacian, depth=1, boundary="reflect")
    assert _kinds(stencil) == {"DeviceArray"}
    numpy.testing.assert_array_equal(npgpu.asnumpy(stencil.compute()),
                                     host.map_overlap(laplacian, depth=1, boundary="reflect").compute())

    reports = client.run(_worker_totals)
    assert len(reports) == 2
    for worker, seen in reports.items():
        assert seen["backend"] == "opencl", worker
        assert seen["device"] > 0, f"{worker} did no device work"


def test_worker_plugin_sets_the_process_default(client) -> None:
    import npgpu.dask as npgpu_dask

    client.register_plugin(npgpu_dask.worker_plugin(NPGPU_BACKEND="numpy"))
    try:
        assert set(client.run(npgpu.current_backend).values()) == {"numpy"}
    finally:
        client.register_plugin(npgpu_dask.worker_plugin(NPGPU_BACKEND="opencl"))
    assert set(client.run(npgpu.current_backend).values()) == {"opencl"}
    with pytest.raises(ValueError):
        npgpu_dask.worker_plugin(OMP_NUM_THREADS="1")


@pytest.mark.slow
def test_dask_example_runs_on_a_local_cluster_with_numpys_answer() -> None:
    _opencl_or_skip()
    pytest.importorskip("distributed", reason="the example's cluster needs distributed (pip install 'npgpu[dask]')")
    script = os.path.join(ROOT, "examples", "dask_stencil.py")
    env = {**os.environ, "NPGPU_BACKEND": "", "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, script, "128", "2", "3"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "equal       True" in done.stdout and "workers     2" in done.stdout, done.stdout
