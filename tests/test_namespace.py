"""npgpu's namespace mirrors NumPy's, is NumPy while off, and imports no GPU library."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy
import pytest

import npgpu


@pytest.mark.parametrize("module", ["", "linalg", "fft", "random"])
def test_every_public_numpy_name_resolves(module):
    source = getattr(numpy, module) if module else numpy
    target = getattr(npgpu, module) if module else npgpu
    missing = [name for name in dir(source) if not name.startswith("_") and not hasattr(target, name)]
    assert missing == []


def test_types_dtypes_and_constants_are_numpys_own():
    assert npgpu.float32 is numpy.float32
    assert npgpu.dtype is numpy.dtype
    assert npgpu.int64 is numpy.int64
    assert npgpu.pi is numpy.pi and npgpu.e is numpy.e
    assert npgpu.newaxis is None is numpy.newaxis
    assert npgpu.inf == numpy.inf and npgpu.nan is numpy.nan
    assert npgpu.linalg.LinAlgError is numpy.linalg.LinAlgError
    assert npgpu.errstate is numpy.errstate


def test_isinstance_ndarray_and_ufunc():
    assert isinstance(numpy.arange(3), npgpu.ndarray)
    with npgpu.enable("emulated", threshold=0):
        device = npgpu.arange(3)
    assert type(device) is npgpu.DeviceArray
    assert isinstance(device, npgpu.ndarray)
    assert not isinstance([1, 2], npgpu.ndarray)
    assert isinstance(npgpu.sin, npgpu.ufunc) and isinstance(numpy.sin, npgpu.ufunc)
    assert npgpu.add.nin == 2 and npgpu.add.identity == 0 and repr(npgpu.add) == "<ufunc 'add'>"
    assert type(npgpu.ndarray((2, 3))) is numpy.ndarray
    assert isinstance(device, numpy.ndarray) and not issubclass(npgpu.DeviceArray, numpy.ndarray)
    assert isinstance(npgpu.matmul, numpy.ufunc) and type(npgpu.matmul) is not numpy.ufunc


def test_ndarray_and_ufunc_are_numpys_classes():
    # With npgpu off it is NumPy: subclassing, views of a subclass or of ndarray, the type checks
    # NumPy's own tests make, and the ufunc class's methods called unbound.
    assert npgpu.ndarray is numpy.ndarray and npgpu.ufunc is numpy.ufunc

    class Sub(npgpu.ndarray):
        pass

    view = numpy.arange(3).view(Sub)
    assert type(view) is Sub and isinstance(view, npgpu.ndarray)
    assert type(view.view(npgpu.ndarray)) is npgpu.ndarray
    assert type(npgpu.arange(3)) is npgpu.ndarray
    assert npgpu.ufunc.reduce(npgpu.add, [1, 2, 3]) == 6


def test_numpy_testing_accepts_device_arrays(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.arange(4.0)
        for module in (numpy.testing, npgpu.testing):
            module.assert_equal(a, [0.0, 1.0, 2.0, 3.0])
            module.assert_array_equal(a, numpy.arange(4.0))
            module.assert_almost_equal(a, [0.0, 1.0, 2.0, 3.0000001])
            module.assert_allclose(a, numpy.arange(4.0))
            module.assert_array_less(a, 5)
            with pytest.raises(AssertionError):
                module.assert_equal(a, [0.0, 1.0, 2.0, 4.0])
            with pytest.raises(AssertionError):
                module.assert_array_almost_equal(a, [0.0, 1.0, 2.5, 3.0])


def test_functions_stored_on_a_class_bind_as_numpys_do():
    # ``class T: array = np.array`` then ``self.array(x)``: NumPy's C functions (array, zeros,
    # arange) are not bound as methods, its dispatched ones (sum) are; npgpu's wrappers bound
    # them all, so self became the data (NumPy's test_linalg with npgpu off)
    names = [n for n in dir(numpy) if not n.startswith("_") and callable(getattr(numpy, n))
             and not isinstance(getattr(numpy, n), type) and getattr(npgpu, n, None) is not getattr(numpy, n)]
    assert {"array", "zeros", "arange", "sum", "concatenate"} <= set(names)
    for name in names:
        holder = type("Holder", (), {"numpys": getattr(numpy, name), "ours": getattr(npgpu, name)})()
        assert isinstance(holder.numpys, types.MethodType) == isinstance(holder.ours, types.MethodType), name
    holder = type("Holder", (), {"array": npgpu.array, "zeros": npgpu.zeros})()
    numpy.testing.assert_array_equal(holder.array([[1, 3]], dtype=float), numpy.array([[1.0, 3.0]]))
    assert holder.zeros(2).shape == (2,)


def test_ufuncs_are_numpys_own_objects_and_functions_are_wrapped():
    # NumPy hands device arrays to npgpu (NEP 13) and runs NumPy arrays itself, at its own speed.
    for name in ("sin", "add", "sqrt", "multiply", "greater"):
        assert getattr(npgpu, name) is getattr(numpy, name), name
    # Functions place what they are given: large host operands move to the device.
    for name in ("zeros", "arange", "asarray", "loadtxt", "sum", "where", "concatenate", "zeros_like", "dot"):
        assert getattr(npgpu, name) is not getattr(numpy, name), name
        assert getattr(npgpu, name).__wrapped__ is getattr(numpy, name), name
    assert npgpu.matmul is not numpy.matmul and npgpu.matmul.__wrapped__ is numpy.matmul  # compute-heavy
    assert npgpu.linalg.solve is not numpy.linalg.solve and npgpu.fft.fft is not numpy.fft.fft


@pytest.mark.parametrize("backend", ["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_large_host_operands_of_functions_move_to_the_device(backend):
    host = numpy.arange(64.0)  # 512 bytes
    with npgpu.enable(backend, threshold=256):
        joined = npgpu.concatenate((host, host))  # arrays inside a tuple count: 1 KiB, uploaded
        assert type(joined) is npgpu.DeviceArray
        small = npgpu.concatenate((host[:8], host[8:16]))  # 128 bytes: NumPy's own call
        assert type(small) is numpy.ndarray
    numpy.testing.assert_array_equal(npgpu.asnumpy(joined), numpy.concatenate((host, host)))
    numpy.testing.assert_array_equal(small, host[:16])


def test_off_returns_exactly_what_numpy_returns():
    cases = [
        lambda xp: xp.arange(10) * 2,
        lambda xp: xp.sum(xp.ones((3, 4)), axis=0),
        lambda xp: xp.sin(xp.linspace(0, 1, 5)),
        lambda xp: xp.float32(2) * xp.arange(3, dtype=xp.float32),
        lambda xp: xp.add.reduce(xp.arange(5)),
        lambda xp: xp.linalg.norm(xp.arange(4.0)),
        lambda xp: xp.fft.fft(xp.arange(4.0)),
        lambda xp: xp.mean(xp.arange(4)),
    ]
    assert npgpu.current_backend() is None
    for case in cases:
        expected, actual = case(numpy), case(npgpu)
        assert type(actual) is type(expected)
        assert numpy.asarray(actual).dtype == numpy.asarray(expected).dtype
        numpy.testing.assert_array_equal(actual, expected)


def _fresh_python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NPGPU_")}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    return done.stdout.strip()


def test_import_imports_no_gpu_library():
    code = "import sys, npgpu; print(sorted(m for m in ('cupy', 'pyopencl') if m in sys.modules))"
    assert _fresh_python(code) == "[]"


def test_environment_variable_enables_a_backend_at_import():
    code = "import npgpu; print(npgpu.current_backend())"
    assert _fresh_python(code, NPGPU_BACKEND="numpy") == "numpy"
    assert _fresh_python(code) == "None"


def test_environment_backend_governs_functions_too():
    # Functions read the process default when it's set at import (they count a small host call
    # only while acceleration is on); a default captured before NPGPU_BACKEND was read left them off.
    code = "import numpy, npgpu; npgpu.sum(numpy.ones(3)); print(npgpu.report().as_dict()['totals']['host'])"
    assert _fresh_python(code, NPGPU_BACKEND="numpy") == "1"
    assert _fresh_python(code) == "0"


def test_environment_sets_the_threshold_and_fusion_of_the_process_default():
    # what a Dask worker started with LocalCluster(env=...) has to go on
    code = ("import numpy, npgpu; from npgpu import _config; s = _config.current(); "
            "a = npgpu.asarray(numpy.ones(1000)); print(s.host_limit, s.create_limit, s.fusion, type(a).__name__)")
    assert _fresh_python(code, NPGPU_BACKEND="emulated", NPGPU_THRESHOLD="0") == "0 0 True DeviceArray"
    assert _fresh_python(code, NPGPU_BACKEND="emulated", NPGPU_THRESHOLD="16MiB", NPGPU_FUSION="0") == \
        f"{16 << 20} {16 << 20} False ndarray"
    with pytest.raises(subprocess.CalledProcessError) as info:
        _fresh_python("import npgpu", NPGPU_BACKEND="emulated", NPGPU_THRESHOLD="lots")
    assert "NPGPU_THRESHOLD must be a byte count" in info.value.stderr


def test_byte_counts_read_as_people_write_them():
    from npgpu._config import parse_bytes

    assert [parse_bytes(t) for t in ("0", "1048576", "16MiB", "4M", "1GB", "2 kib", "1.5G")] == [
        0, 1 << 20, 16 << 20, 4 << 20, 10**9, 2048, 3 << 29]
    for bad in ("", "-1", "12 parsecs", "nan", "MiB"):
        with pytest.raises(ValueError, match="byte count"):
            parse_bytes(bad)


def test_unknown_backend_in_environment_is_a_clear_error():
    with pytest.raises(subprocess.CalledProcessError) as info:
        _fresh_python("import npgpu", NPGPU_BACKEND="nosuch")
    assert "unknown npgpu backend 'nosuch'" in info.value.stderr


def test_star_import_gives_numpys_names():
    namespace: dict[str, object] = {}
    exec("from npgpu import *", namespace)
    assert "concatenate" in namespace and "float64" in namespace and "enable" in namespace


def test_pickled_ufunc_is_the_same_ufunc():
    import pickle

    assert pickle.loads(pickle.dumps(npgpu.sin)) is npgpu.sin


GRID_KEYS = [(slice(0, 300), slice(0, 200)), (slice(-1.0, 1.0, 0.25),), (slice(0, 1, 5j), slice(2, 10, 3)),
             (slice(5),), (slice(0, 40), slice(0, 30), slice(0, 20))]


@pytest.mark.parametrize("key", GRID_KEYS, ids=[str(i) for i in range(len(GRID_KEYS))])
@pytest.mark.parametrize("name", ["mgrid", "ogrid"])
def test_grids_are_numpys_placed_as_creations(device_backend, name, key):
    """``mgrid[...]``/``ogrid[...]`` give NumPy's arrays (values, dtypes, shapes, a tuple for
    ogrid); with threshold 0 each is made on the device, as any creation from nothing would be
    (mandelbrot2's ``Xi, Yi = mgrid[0:n, 0:n]`` then indexes device arrays without a download)."""
    expected = getattr(numpy, name)[key]
    with npgpu.enable(device_backend, threshold=0):
        got = getattr(npgpu, name)[key]
        unpacked = list(got) if type(got) is npgpu.DeviceArray and got.ndim > 1 else []
    assert (type(got) is tuple) == (type(expected) is tuple)
    pairs = list(zip(got, expected)) if type(expected) is tuple else [(got, expected)]
    for g, e in pairs:
        assert type(g) is npgpu.DeviceArray
        assert g.dtype == e.dtype and g.shape == e.shape
        numpy.testing.assert_array_equal(numpy.asarray(g), e)
    for g, e in zip(unpacked, expected):  # (``Xi, Yi = mgrid[...]``: device views)
        assert type(g) is npgpu.DeviceArray
        numpy.testing.assert_array_equal(numpy.asarray(g), e)


def test_small_grids_and_grids_with_acceleration_off_are_numpys():
    assert type(npgpu.mgrid[0:4, 0:4]) is numpy.ndarray
    with npgpu.enable("emulated", threshold=1 << 20):
        small = npgpu.mgrid[0:10, 0:10]
        large = npgpu.mgrid[0:300, 0:300]
    assert type(small) is numpy.ndarray
    assert type(large) is npgpu.DeviceArray
    numpy.testing.assert_array_equal(numpy.asarray(large), numpy.mgrid[0:300, 0:300])
    assert npgpu.mgrid.__getitem__ is not None and repr(npgpu.ogrid) == repr(numpy.ogrid)


@pytest.mark.parametrize("kwargs", [{}, {"dtype": "int32"}, {"sparse": True}], ids=["dense", "int32", "sparse"])
def test_indices_is_numpys_placed_as_a_creation(device_backend, kwargs):
    """``indices(shape)`` makes its grid from nothing: NumPy's arrays, on the device from the
    creation threshold (the escape loop's ``rows, cols = indices(shape)`` index device arrays)."""
    expected = numpy.indices((30, 40), **kwargs)
    with npgpu.enable(device_backend, threshold=0):
        got = npgpu.indices((30, 40), **kwargs)
    assert (type(got) is tuple) == (type(expected) is tuple)
    for g, e in zip(got if type(got) is tuple else [got], expected if type(expected) is tuple else [expected]):
        assert type(g) is npgpu.DeviceArray and g.dtype == e.dtype and g.shape == e.shape
        numpy.testing.assert_array_equal(numpy.asarray(g), e)
    with npgpu.enable(device_backend, threshold=1 << 20):
        assert type(npgpu.indices((30, 40))) is numpy.ndarray
