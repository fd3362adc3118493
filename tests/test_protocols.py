"""The ecosystem's array protocols on device arrays, compared with NumPy's behaviour.

- the array API's device model: ``x.device``, ``to_device``, ``__array_namespace_info__()``
  (``devices()`` names the device in force), ``device=`` on creation functions (the result on
  that device whatever its size; ``"cpu"`` gives NumPy's array; anything else NumPy's error);
- DLPack on every device backend (the native capsule where the backend has one, else a host
  copy's, kDLCPU), ``__cuda_array_interface__`` on CuPy's arrays only;
- a host consumer (matplotlib) iterating a device array: one download, not one call per item.
"""

from __future__ import annotations

import numpy
import pytest

import npgpu

#: (function, positional arguments) of every creation function taking device=
CREATIONS = [
    (npgpu.zeros, ((3, 4),)), (npgpu.ones, (7,)), (npgpu.empty, ((2, 2),)), (npgpu.full, ((3,), 2.5)),
    (npgpu.arange, (10,)), (npgpu.arange, (1, 9, 2)), (npgpu.linspace, (0.0, 1.0, 5)), (npgpu.eye, (3,)),
    (npgpu.asarray, ([1.0, 2.0, 3.0],)),
]
NUMPY_OF = {npgpu.zeros: numpy.zeros, npgpu.ones: numpy.ones, npgpu.empty: numpy.empty, npgpu.full: numpy.full,
            npgpu.arange: numpy.arange, npgpu.linspace: numpy.linspace, npgpu.eye: numpy.eye,
            npgpu.asarray: numpy.asarray}


def test_namespace_info_names_the_device_in_force(device_backend: str) -> None:
    assert npgpu.__array_namespace_info__().devices() == ["cpu"]
    with npgpu.enable(device_backend):
        info = npgpu.__array_namespace_info__()
        assert info.devices() == ["cpu", device_backend]
        assert info.default_device() == device_backend
        assert info.default_dtypes(device=device_backend) == numpy.__array_namespace_info__().default_dtypes()
        assert "float64" in info.dtypes(device=device_backend)
        assert info.dtypes(device="cpu") == numpy.__array_namespace_info__().dtypes()
        with pytest.raises(ValueError, match="Device not understood"):
            info.dtypes(device="tpu")


@pytest.mark.parametrize(("func", "args"), CREATIONS, ids=lambda v: getattr(v, "__name__", None))
def test_creation_functions_take_device(device_backend: str, func, args) -> None:
    expected = NUMPY_OF[func](*args)
    with npgpu.enable(device_backend):  # (small requests: without device= NumPy would make them)
        made = func(*args, device=device_backend)
        assert type(made) is npgpu.DeviceArray and made.device == device_backend
        assert made.dtype == expected.dtype and made.shape == expected.shape
        if func is not npgpu.empty:
            numpy.testing.assert_array_equal(npgpu.asnumpy(made), expected)
        host = func(*args, device="cpu")
        assert type(host) is numpy.ndarray and host.device == "cpu"
        like = npgpu.zeros_like(host, device=made.device)
        assert type(like) is npgpu.DeviceArray and like.shape == expected.shape
        assert type(npgpu.asarray(made, device="cpu")) is numpy.ndarray
        with pytest.raises(ValueError, match="Device not understood"):
            func(*args, device="tpu")


def test_device_keyword_elsewhere_is_numpys_type_error(device_backend: str) -> None:
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(numpy.arange(4.0))
        with pytest.raises(TypeError):
            numpy.sum(numpy.arange(4.0), device="cpu")  # (NumPy's own: the error npgpu must give too)
        with pytest.raises(TypeError):
            npgpu.sum(x, device=device_backend)


def test_to_device_moves_between_host_and_device(device_backend: str) -> None:
    host = numpy.arange(12.0).reshape(3, 4)
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(host)
        assert x.to_device(x.device) is x
        back = x.to_device("cpu")
        assert type(back) is numpy.ndarray
        numpy.testing.assert_array_equal(back, host)
        with pytest.raises(ValueError):
            x.to_device("tpu")


# -- DLPack, CUDA's array interface -------------------------------------------------------------

def test_dlpack_gives_numpys_values_for_views_and_dtypes(device_backend: str) -> None:
    host = numpy.arange(24, dtype=numpy.int32).reshape(4, 6)
    if device_backend == "cupy":  # (a kDLCUDA capsule: CuPy reads it, NumPy can't)
        import cupy

        def read(view):
            return cupy.asnumpy(cupy.from_dlpack(view))
    else:
        read = numpy.from_dlpack
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(host)
        for view, expected in ((x, host), (x[:, 1::2], host[:, 1::2]), (x.T, host.T), (x + 0.5, host + 0.5)):
            got = read(view)
            assert got.dtype == expected.dtype
            numpy.testing.assert_array_equal(got, expected)
        kind, _ = x.__dlpack_device__()
        # kDLCUDA on CuPy; kDLCPU elsewhere: emulated "device" memory is host memory, OpenCL exports a host copy
        assert kind == (2 if device_backend == "cupy" else 1)


def test_dlpack_of_opencl_arrays_is_a_host_copy_and_says_so() -> None:
    from conftest import _OPENCL_REASON

    if _OPENCL_REASON is not None:
        pytest.skip(_OPENCL_REASON)
    with npgpu.enable("opencl", threshold=0):
        x = npgpu.asarray(numpy.arange(5.0))
        assert x.__dlpack_device__() == (1, 0)
        copy = numpy.from_dlpack(x)
        copy[0] = 99.0
        assert float(x[0]) == 0.0  # a copy: the device array is unchanged
        with pytest.raises(BufferError, match="without a copy"):
            numpy.from_dlpack(x, copy=False)
        with pytest.raises(BufferError, match="CPU"):
            x.__dlpack__(dl_device=(2, 0))


def test_dlpack_of_emulated_arrays_shares_memory() -> None:
    with npgpu.enable("emulated", threshold=0):
        x = npgpu.asarray(numpy.arange(5.0))
        shared = numpy.from_dlpack(x, copy=False)
        shared[0] = 99.0
        assert float(x[0]) == 99.0


def test_cuda_array_interface_only_on_cuda_memory(device_backend: str) -> None:
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(numpy.arange(5.0))
        if device_backend != "cupy":
            assert not hasattr(x, "__cuda_array_interface__")
            with pytest.raises(AttributeError, match="not in CUDA memory"):
                x.__cuda_array_interface__  # noqa: B018
            return
        interface = x.__cuda_array_interface__
        assert interface["shape"] == (5,) and interface["typestr"] == "<f8"
        import cupy

        view = cupy.asarray(x)  # through the interface: the same device memory
        assert view.data.ptr == interface["data"][0]


# -- host consumers -----------------------------------------------------------------------------

def test_matplotlib_hist_reads_a_device_array_without_a_call_per_element(device_backend: str) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    host = numpy.random.default_rng(0).random(1000)
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(host)
        npgpu.report(reset=True)
        counts, edges, _ = plt.hist(x, bins=10)
        items = npgpu.report().as_dict()["functions"].get("ndarray.__getitem__", {"device": 0, "host": 0})
    plt.close("all")
    expected, expected_edges = numpy.histogram(host, bins=10)
    numpy.testing.assert_array_equal(counts, expected)
    numpy.testing.assert_array_equal(edges, expected_edges)
    assert items["device"] + items["host"] < 10  # (not one per element)


def test_scikit_learn_array_api_dispatch_runs_pca_on_device_arrays() -> None:
    """scikit-learn's array API dispatch takes npgpu as the namespace of device arrays (device=,
    devices(), named-tuple results of unique_*); PCA gives NumPy's answer. (A subprocess: SciPy
    reads SCIPY_ARRAY_API at its import.)"""
    pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    pytest.importorskip("array_api_compat", reason="array_api_compat is not installed")
    import os
    import subprocess
    import sys

    from conftest import REPO, subprocess_env

    code = ("import numpy, sklearn, npgpu, array_api_compat\n"
            "from sklearn.decomposition import PCA\n"
            "X = numpy.random.default_rng(0).random((400, 6))\n"
            "want = PCA(n_components=3, svd_solver='full').fit(X).transform(X)\n"
            "with npgpu.enable('emulated', threshold=0), sklearn.config_context(array_api_dispatch=True):\n"
            "    Xd = npgpu.asarray(X)\n"
            "    assert array_api_compat.array_namespace(Xd) is npgpu\n"
            "    got = npgpu.asnumpy(PCA(n_components=3, svd_solver='full').fit(Xd).transform(Xd))\n"
            "numpy.testing.assert_allclose(numpy.abs(got), numpy.abs(want), rtol=1e-10, atol=1e-12)\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={**subprocess_env(), "SCIPY_ARRAY_API": "1", "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("name", ["unique_counts", "unique_inverse", "unique_all"])
def test_named_tuple_results_keep_numpys_type(device_backend: str, name: str) -> None:
    host = numpy.array([3, 1, 3, 2, 1, 3])
    expected = getattr(numpy, name)(host)
    with npgpu.enable(device_backend, threshold=0):
        got = getattr(npgpu, name)(npgpu.asarray(host))
    assert type(got) is type(expected)
    for field in expected._fields:
        numpy.testing.assert_array_equal(npgpu.asnumpy(getattr(got, field)), getattr(expected, field))


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int64, numpy.float64, numpy.bool_])
def test_array_api_astype_runs_on_opencl(dtype) -> None:
    """``numpy.astype`` (the array API's function, which xarray and scikit-learn call) is the
    method's cast on the device: NumPy's values, dtype and 0-d arrays, no fallback."""
    from conftest import _OPENCL_REASON

    if _OPENCL_REASON is not None:
        pytest.skip(_OPENCL_REASON)
    host = numpy.linspace(-3.0, 3.0, 12).reshape(3, 4)
    with npgpu.enable("opencl", threshold=0):
        x = npgpu.asarray(host)
        zero_d, host_zero_d = x[1, 2:3].reshape(()), host[1, 2:3].reshape(())
        npgpu.report(reset=True)
        for got, expected in ((npgpu.astype(x, dtype), numpy.astype(host, dtype)),
                              (npgpu.astype(zero_d, dtype), numpy.astype(host_zero_d, dtype))):
            assert type(got) is npgpu.DeviceArray and got.dtype == expected.dtype and got.shape == expected.shape
            numpy.testing.assert_array_equal(npgpu.asnumpy(got), expected)
        assert npgpu.report().as_dict()["functions"]["astype"]["fallback"] == 0
