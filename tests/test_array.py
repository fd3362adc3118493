"""The device array behaves like ndarray for the code that uses one (on every device backend)."""

from __future__ import annotations

import copy
import pickle
import sys

import numpy
import pytest

import npgpu
from npgpu._harness import backend_context


@pytest.fixture
def on(device_backend):
    with backend_context(device_backend):
        yield device_backend


def test_attributes(on):
    host = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4)
    a = npgpu.asarray(host)
    assert isinstance(a, npgpu.DeviceArray)
    assert (a.shape, a.dtype, a.ndim, a.size, a.itemsize, a.nbytes) == (
        host.shape, host.dtype, host.ndim, host.size, host.itemsize, host.nbytes)
    assert a.strides == host.strides
    assert a.T.shape == (4, 3, 2)
    assert a.flags["C_CONTIGUOUS"] and not a.T.flags.c_contiguous and a.T.flags.f_contiguous
    assert len(a) == 2
    assert [r.shape for r in a] == [(3, 4), (3, 4)]


def test_complex_parts(on):
    z = npgpu.asarray(numpy.array([1 + 2j, 3 - 4j]))
    numpy.testing.assert_array_equal(npgpu.asnumpy(z.real), [1, 3])
    numpy.testing.assert_array_equal(npgpu.asnumpy(z.imag), [2, -4])


def test_repr_and_str_match_numpy(on):
    host = numpy.linspace(0, 1, 7).reshape(7, 1)
    a = npgpu.asarray(host)
    assert repr(a) == repr(host)
    assert str(a) == str(host)
    assert repr(a.sum()) == repr(host.sum())
    assert str(a.max()) == str(host.max())
    assert f"{a[2, 0]:.3f}" == f"{host[2, 0]:.3f}"


def test_pickling_by_value(on):
    a = npgpu.arange(6.0).reshape(2, 3)
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is type(a) and b.dtype == a.dtype
    numpy.testing.assert_array_equal(npgpu.asnumpy(b), npgpu.asnumpy(a))
    b[0, 0] = 99
    assert float(a[0, 0]) == 0.0
    c = copy.deepcopy(a)
    c += 1
    assert float(a[1, 2]) == 5.0


def test_array_protocol(on):
    a = npgpu.arange(4)
    host = numpy.asarray(a)
    assert type(host) is numpy.ndarray
    numpy.testing.assert_array_equal(host, [0, 1, 2, 3])
    assert numpy.asarray(a, dtype=numpy.float32).dtype == numpy.float32
    with pytest.raises(ValueError, match="without a copy"):
        numpy.asarray(a, copy=False)
    assert a.__array_namespace__() is npgpu


def test_views_write_through(on):
    a = npgpu.zeros((4, 4))
    row = a[1]
    row += 3
    col = a[:, 2]
    col[...] = 7
    a.T[0, 3] = -1
    expected = numpy.zeros((4, 4))
    expected[1] += 3
    expected[:, 2] = 7
    expected.T[0, 3] = -1
    numpy.testing.assert_array_equal(npgpu.asnumpy(a), expected)


def test_fill_sort_item_tolist(on):
    a = npgpu.asarray(numpy.array([3.0, 1.0, 2.0]))
    a.sort()
    assert a.tolist() == [1.0, 2.0, 3.0]
    assert a.item(1) == 2.0 and isinstance(a.item(1), float)
    a.fill(5)
    assert a.tolist() == [5.0, 5.0, 5.0]
    b = npgpu.arange(6).reshape(2, 3)
    assert b.item(4) == 4 and b.item((1, 0)) == 3


def test_errors_leave_arrays_intact(on):
    a = npgpu.arange(5.0)
    with pytest.raises(IndexError):
        a[7] = 1.0
    with pytest.raises(ValueError):
        a[:3] = npgpu.arange(4.0)
    with pytest.raises(IndexError):
        a[npgpu.asarray(numpy.array([0, 5]))] = 2.0
    with pytest.raises(TypeError):
        a + "text"
    numpy.testing.assert_array_equal(npgpu.asnumpy(a), numpy.arange(5.0))
    assert (a + 1).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_scalar_protocols(on):
    a = npgpu.arange(5)
    assert int(a[3]) == 3 and float(a[2]) == 2.0 and bool(a[0]) is False
    assert [10, 20, 30][a[1]] == 20
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        [1, 2][npgpu.asarray(numpy.array(1.5))]  # a 0-d device array of floats is no index
    assert [10, 20][npgpu.asarray(numpy.array(1))] == 20
    with pytest.raises(TypeError, match="len"):
        len(npgpu.asarray(numpy.array(2.0)))
    assert type(a.sum()) is numpy.int64 and type(a[1]) is numpy.int64  # NumPy's scalars, as NumPy gives
    assert 3 in a and 7 not in a


def test_dlpack_roundtrip_when_native_supports_it(on):
    a = npgpu.arange(4.0)
    if not hasattr(a._native, "__dlpack__"):
        pytest.skip(f"{on} natives have no DLPack support")
    if on == "cupy":
        import cupy

        assert cupy.from_dlpack(a).tolist() == [0.0, 1.0, 2.0, 3.0]
    else:
        assert numpy.from_dlpack(a).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_device_arrays_after_disable_come_back_as_numpy(on):
    a = npgpu.arange(4.0)
    with npgpu.disable():
        b = a * 2
        c = npgpu.sum(a)
    assert type(b) is numpy.ndarray and b.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert c == 6.0


def test_iter_of_zero_d_fails_at_once(on):
    zero_d = npgpu.asarray(numpy.array(3.0))
    assert isinstance(zero_d, npgpu.DeviceArray) and zero_d.ndim == 0
    with pytest.raises(TypeError, match="0-d"):
        iter(zero_d)


def test_numpy_calls_from_libraries_get_host_arrays(on, tmp_path, monkeypatch):
    # A module that lives in a site-packages folder stands in for SciPy/matplotlib/pandas.
    library = tmp_path / "site-packages"
    library.mkdir()
    (library / "fake_library.py").write_text(
        "import numpy\n"
        "def stats(x):\n"
        "    return numpy.mean(x, axis=0), numpy.add(x, 1), x * 2\n"
    )
    monkeypatch.syspath_prepend(str(library))
    import fake_library

    a = npgpu.arange(6.0).reshape(2, 3)
    mean, plus, twice = fake_library.stats(a)
    assert type(mean) is numpy.ndarray and mean.tolist() == [1.5, 2.5, 3.5]
    assert type(plus) is numpy.ndarray and plus.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert type(twice) is numpy.ndarray
    assert type(numpy.mean(a, axis=0)) is npgpu.DeviceArray  # the same call from user code stays on the device


class _Duck:
    """A foreign array type with its own NumPy protocols: npgpu must defer to it."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("duck", ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        return ("duck", func.__name__)


def test_unknown_operand_types_get_notimplemented(on):
    a = npgpu.arange(3.0)
    duck = _Duck()
    assert a.__array_ufunc__(numpy.add, "__call__", a, duck) is NotImplemented
    assert a.__array_function__(numpy.concatenate, (npgpu.DeviceArray, _Duck), ([a, duck],), {}) is NotImplemented
    assert numpy.add(a, duck) == ("duck", "add")  # NumPy then asks the duck, which answers
    assert numpy.concatenate([a, duck]) == ("duck", "concatenate")


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((4,), (4, 3)), ((5, 4, 3), (3, 2)), ((4,), (4,)),
                                    ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (3, 2)), ((0, 4), (4, 0))])
@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("int64", "float32"), ("complex128", "float64")])
def test_the_matmul_operator_answers_and_fails_as_numpy_does_and_counts_at_its_line(on, shapes, dtypes):
    """``a @ b`` of device arrays goes to the dispatcher straight from the operator (not NumPy's
    override protocol): NumPy's values and dtype, NumPy's error, counted at the caller's line."""
    rng = numpy.random.default_rng(5)
    x, y = ((rng.random(s) * 4).astype(d) for s, d in zip(shapes, dtypes, strict=True))
    try:
        expected = x @ y
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error).split("(")[0].strip()):
            npgpu.asarray(x) @ npgpu.asarray(y)
        return
    a, b = npgpu.asarray(x), npgpu.asarray(y)
    npgpu.report(reset=True)
    got = a @ b; line = sys._getframe().f_lineno  # noqa: E702
    assert got.dtype == expected.dtype and got.shape == expected.shape
    numpy.testing.assert_allclose(npgpu.asnumpy(got), expected, rtol=1e-6 if "float32" in dtypes else 1e-12)
    sites = npgpu.report().as_dict()["call_sites"]
    assert any(site.endswith(f"test_array.py:{line}") and count["device"] + count["host"] >= 1
               for site, count in sites.items()), sites


@pytest.mark.parametrize("other", [2.0, 3, numpy.float64(1.5)])
def test_matmul_with_a_scalar_raises_numpys_error(on, other):
    a = npgpu.asarray(numpy.ones((3, 3)))
    with pytest.raises(ValueError, match="matmul"):
        numpy.ones((3, 3)) @ other
    with pytest.raises(ValueError, match="matmul"):
        a @ other


@pytest.mark.parametrize("other", [numpy.ones((3, 2)), numpy.ones((2, 3, 5)), 2.0])
def test_a_device_refusing_matmul_operands_in_its_own_words_gives_numpys_error(monkeypatch, other):
    """CuPy refuses mismatched core dimensions with "Axis dimension mismatch" and a scalar with a
    TypeError of its own: the error the program sees is NumPy's, on each road to the device (the
    operator, the function, a device or host right operand)."""
    with npgpu.enable("emulated", threshold=0):
        backend = npgpu._config.current().backend
        plain = backend.call_ufunc

        def refusing(uf, method, inputs, kwargs, loop=None):
            if uf is numpy.matmul:
                if any(not hasattr(x, "shape") for x in inputs):
                    raise TypeError("Argument 'b' has incorrect type")
                raise ValueError("Axis dimension mismatch")
            return plain(uf, method, inputs, kwargs, loop)

        monkeypatch.setattr(backend, "call_ufunc", refusing)
        host = numpy.ones((3, 4))
        with pytest.raises(ValueError) as expected:
            host @ other
        a = npgpu.asarray(host)
        b = npgpu.asarray(other) if type(other) is numpy.ndarray else other
        for call in (lambda: a @ b, lambda: numpy.matmul(a, b), lambda: a @ other):
            with pytest.raises(ValueError) as got:
                call()
            assert str(got.value) == str(expected.value)


def test_a_device_error_numpy_would_not_raise_stands_and_numpy_computes_no_product(monkeypatch):
    """Where NumPy takes the shapes, the device's own error stands; NumPy was asked on small
    stand-ins (sizes renamed), not made to compute a 3000 x 4000 by 4000 x 2000 product."""
    with npgpu.enable("emulated", threshold=0):
        backend = npgpu._config.current().backend
        plain = backend.call_ufunc

        def refusing(uf, method, inputs, kwargs, loop=None):
            if uf is numpy.matmul:
                raise TypeError("the device's own refusal")
            return plain(uf, method, inputs, kwargs, loop)

        monkeypatch.setattr(backend, "call_ufunc", refusing)
        a, b = npgpu.empty((3000, 4000)), npgpu.empty((4000, 2000))
        stand_ins = []
        broadcast_to = numpy.broadcast_to

        def noted(array, shape, *args, **kwargs):
            stand_ins.append(tuple(shape))
            return broadcast_to(array, shape, *args, **kwargs)

        monkeypatch.setattr(numpy, "broadcast_to", noted)
        with pytest.raises(TypeError, match="the device's own refusal"):
            a @ b
        assert stand_ins == [(3, 4), (4, 2)]  # (2000, 3000, 4000 renamed 2, 3, 4)


@pytest.mark.parametrize("other", [[1.0, 2.0, 3.0], (1, 2, 3), [[1, 2], [3, 4], [5, 6]],
                                   numpy.arange(6.0).reshape(3, 2), numpy.float32([0.5, 1.5, 2.5])])
def test_matmul_with_host_operands_gives_numpys_answer_on_either_side(on, other):
    """A list or host array on the right of a device array, and a host array on its left."""
    host = numpy.arange(9.0).reshape(3, 3)
    a = npgpu.asarray(host)
    left = numpy.asarray(other).T  # (its shape fits on the left of a 3 x 3)
    for got, expected in ((a @ other, host @ numpy.asarray(other)), (left @ a, left @ host)):
        assert numpy.asarray(got).dtype == expected.dtype
        numpy.testing.assert_allclose(numpy.asarray(got), expected, rtol=1e-6)
