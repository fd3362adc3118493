"""Read-only arrays, views' ``base`` and ``setflags`` on the device behave as NumPy's.

A device view whose WRITEABLE flag was cleared once accepted writes, and so did
``np.broadcast_to``'s result; NumPy raises ValueError for both. Each body runs as NumPy and
as npgpu on every backend.
"""

from __future__ import annotations

import numpy
import pytest

from npgpu._harness import differential

WRITES = {
    "setitem": lambda a: a.__setitem__(0, 1.0),
    "slice_setitem": lambda a: a.__setitem__(slice(None), 2.0),
    "iadd": lambda a: a.__iadd__(1.0),
    "ufunc_out": lambda a: numpy.multiply(a, 2.0, out=a),
    "fill": lambda a: a.fill(0.0),
    "sort": lambda a: a.sort(),
    "copyto": lambda a: numpy.copyto(a, 3.0),
    "sum_out": lambda a: numpy.sum(numpy.ones((2, a.size)), axis=0, out=a),
}


@pytest.mark.parametrize("write", list(WRITES))
@differential()
def test_writes_into_read_only_view_raise(xp, write):
    a = xp.asarray(numpy.arange(6.0))
    view = a[1:4]
    view.flags.writeable = False
    WRITES[write](view)  # NumPy: ValueError (read-only); the array keeps its values


@pytest.mark.parametrize("write", ["setitem", "iadd", "fill"])
@differential()
def test_read_only_array_keeps_values_after_failed_write(xp, write):
    a = xp.asarray(numpy.arange(6.0))
    a.setflags(write=False)
    try:
        WRITES[write](a)
    except ValueError:
        pass
    return a, a.flags.writeable, a.flags["WRITEABLE"]


@differential()
def test_broadcast_to_is_read_only(xp):
    b = xp.broadcast_to(xp.asarray(numpy.arange(3.0)), (2, 3))
    assert not b.flags.writeable
    b[0, 0] = 5.0  # NumPy: ValueError, assignment destination is read-only


@differential()
def test_views_of_read_only_arrays_are_read_only(xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    a.flags.writeable = False
    views = (a[1:], a.T, a.reshape(4, 3), a[:, 1], a[::2, ::-1])
    copies = (a.copy(), a + 1, xp.asarray(a) * 2, a[numpy.array([0, 2])])
    return tuple(v.flags.writeable for v in views), tuple(c.flags.writeable for c in copies)


@differential()
def test_writeable_flag_comes_back_where_numpy_allows(xp):
    a = xp.asarray(numpy.arange(6.0))
    v = a[1:]
    v.flags.writeable = False
    w = v[1:]  # NumPy: read-only, like the view it views; its base (a) is writeable, so it may be set
    before = w.flags.writeable
    w.flags.writeable = True
    w[0] = -1.0
    return before, a


@differential()
def test_writeable_cannot_return_over_read_only_owner(xp):
    a = xp.asarray(numpy.arange(6.0))
    a.flags.writeable = False
    a[2:].setflags(write=True)  # NumPy: ValueError, cannot set WRITEABLE flag to True of this array


@differential()
def test_view_bases(xp):
    a = xp.asarray(numpy.arange(12.0))
    m = a.reshape(3, 4)
    return (a.base is None, a[2:].base is a, a[2:][1:].base is a, m.base is a, m.T.base is a, m[1].base is a,
            a.copy().base is None, (a * 2).base is None)


@differential()
def test_asarray_of_read_only_host_array(xp):
    host = numpy.arange(5.0)
    host.flags.writeable = False
    d, c = xp.asarray(host), xp.array(host)
    return d.flags.writeable, c.flags.writeable, d, c


@differential()
def test_setflags_arguments(xp):
    a = xp.asarray(numpy.arange(3.0))
    a.setflags(write=False)
    a.setflags(write=True)
    a.setflags(align=True)
    return a.flags.writeable, a.flags.aligned
