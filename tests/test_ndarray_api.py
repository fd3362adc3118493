"""The rest of ndarray's API on device arrays, compared with NumPy on every backend.

flat (get, set, cyclic assignment, iteration), choose, compress, put, searchsorted,
partition/argpartition, byteswap, getfield, resize, to_device, dumps, Fortran-order ravel and
reshape (which raised NotImplementedError on OpenCL), boolean assignment into a strided view,
and concatenate's out=/dtype= rule.
"""

from __future__ import annotations

import pickle

import numpy
import pytest

import npgpu
from npgpu._harness import differential


def _matrix(xp, dtype="float64"):
    return xp.asarray(numpy.arange(6, dtype=dtype).reshape(2, 3))


@differential()
def test_flat_reads(xp):
    m = _matrix(xp)
    return m.flat[4], m.flat[1:4], m.T.flat[1:4], m.flat[[0, 5]], list(m.T.flat), len(m.flat), m.flat.copy()


@pytest.mark.parametrize("transposed", [False, True])
@differential()
def test_flat_writes(xp, transposed):
    m = _matrix(xp)
    target = m.T if transposed else m
    target.flat[1:3] = 9.0
    target.flat[[0, 4]] = -1.0
    target.flat[5] = 7.0
    return m


@differential()
def test_flat_assignment_repeats_values(xp):
    m = _matrix(xp)
    m.flat[:5] = [1.0, 2.0]
    n = _matrix(xp)
    n.flat = 3.0
    return m, n


@differential()
def test_flat_write_into_read_only_array(xp):
    m = _matrix(xp)
    m.flags.writeable = False
    m.flat[0] = 1.0


@differential()
def test_choose_compress_searchsorted(xp):
    a = xp.asarray(numpy.arange(5.0))
    picks = xp.asarray(numpy.array([0, 1, 0]))
    return (picks.choose([xp.asarray(numpy.arange(3.0)), -xp.asarray(numpy.arange(3.0))]),
            a.compress([True, False, True]), a.compress([False, True], axis=0), a.searchsorted([1.5, 3.0]),
            a.searchsorted(2.0, side="right"))


@differential()
def test_put_and_partition_in_place(xp):
    a = xp.asarray(numpy.arange(5.0))
    a.put([0, 2], [9.0, 8.0])
    b = xp.asarray(numpy.array([5.0, 1.0, 4.0, 2.0, 3.0]))
    order = b.argpartition(2)
    b.partition(2)
    return a, b[2], b[:2].max() <= b[2] <= b[3:].min(), order[2]


@pytest.mark.parametrize("dtype", ["int32", "float64", "uint16"])
@differential()
def test_byteswap(xp, dtype):
    a = xp.asarray(numpy.arange(3, dtype=dtype))
    swapped = a.byteswap()
    b = xp.asarray(numpy.arange(3, dtype=dtype))
    same = b.byteswap(inplace=True) is b
    return swapped, b, same


@differential()
def test_getfield_and_resize(xp):
    a = xp.asarray(numpy.arange(3, dtype="int64"))
    r = xp.asarray(numpy.arange(6.0))
    r.resize((2, 4), refcheck=False)
    s = xp.asarray(numpy.arange(6.0))
    s.resize(3, refcheck=False)
    return a.getfield("int32", 0), r, s


@differential()
def test_resize_of_a_view(xp):
    a = xp.asarray(numpy.arange(6.0))
    a[1:].resize(3, refcheck=False)  # NumPy: ValueError (it does not own its data)


@pytest.mark.parametrize("order", ["F", "A", "K", "C"])
@differential()
def test_fortran_order_ravel_reshape_flatten(xp, order):
    m = _matrix(xp)
    t = m.T
    return m.ravel(order=order), xp.ravel(t, order), t.flatten(order), m.reshape((3, 2), order="F" if order == "F"
                                                                                   else "C")


@differential()
def test_boolean_assignment_into_strided_view(xp):
    a = xp.asarray(numpy.arange(6.0))[::2]
    a[a > 1] = -1.0
    m = _matrix(xp).T
    m[m > 2] = 0.0
    return a, m


@differential()
def test_concatenate_out_and_dtype_together(xp):
    a = xp.asarray(numpy.arange(3.0))
    return xp.concatenate([a, a], out=xp.asarray(numpy.zeros(6)), dtype="float64")  # NumPy: TypeError


@differential()
def test_delete_element_raises(xp):
    a = xp.asarray(numpy.arange(3.0))
    del a[0]  # NumPy: ValueError


def test_to_device_and_pickling(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.arange(4.0)
        host = a.to_device("cpu")
        assert type(host) is numpy.ndarray and host.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert a.to_device(a.device) is a
        with pytest.raises(ValueError):
            a.to_device("somewhere-else")
        again = pickle.loads(a.dumps())
        assert type(again) is npgpu.DeviceArray and again.tolist() == a.tolist()


@differential()
def test_memory_layout_survives_upload_and_download(xp):
    f = xp.asarray(numpy.asfortranarray(numpy.arange(6.0).reshape(2, 3)))
    t = xp.asarray(numpy.arange(24.0).reshape(2, 3, 4)).transpose(2, 0, 1)
    host_f, host_t = numpy.asarray(f), numpy.asarray(t)
    return (f.flags.f_contiguous, f.flags.c_contiguous, host_f.flags.f_contiguous, host_t.strides == t.strides,
            xp.ravel(f, "K"), xp.ravel(t, "A"), xp.ravel(t, "K"), xp.copy(t, order="K").strides == t.strides)


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@differential()
def test_memory_order_arguments(xp, order):
    t = xp.asarray(numpy.arange(24.0).reshape(2, 3, 4)).transpose(1, 2, 0)
    f = xp.asarray(numpy.asfortranarray(numpy.arange(6.0).reshape(2, 3)))
    made = [xp.empty_like(t, order=order), xp.zeros_like(f, order=order), xp.ones_like(t, order=order),
            xp.full_like(f, 2.0, order=order), t.astype("float32", order=order), xp.copy(t, order=order), f.copy(
                order="C" if order == "K" else order)]
    if order in "CF":
        made += [xp.zeros((2, 3), order=order), xp.ones((3, 4), order=order), xp.full((2, 2), 1.5, order=order)]
    layouts = tuple((m.flags.c_contiguous, m.flags.f_contiguous, m.strides) for m in made)
    return layouts, tuple(made[1:])  # (empty_like's values are whatever memory held)
