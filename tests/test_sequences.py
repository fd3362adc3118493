"""Python lists, tuples and nested sequences as operands of device calls: they are array data.

Each body runs as NumPy and as npgpu on every backend (tests/conftest.py). A device array
combined with a list once used only the list's first element on OpenCL; these tests hold every
door (operators, ufuncs, functions, indices, out=, keyword values) to NumPy's answers.
"""

from __future__ import annotations

import numpy
import pytest

from npgpu._harness import differential


def _vector(xp, dtype="float64", n=3):
    return xp.asarray(numpy.arange(1, n + 1, dtype=dtype))


# -- operators and ufuncs ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint8", "bool"])
@differential()
def test_operators_with_lists(xp, dtype):
    a = _vector(xp, dtype)
    if dtype == "bool":
        return a & [True, False, True], [False, True, True] | a, a == [1, 0, 1], a ^ (True, True, False)
    return (a + [10, 20, 30], [1, 2, 3] - a, a * (2, 3, 4), a == [1, 0, 3], a < [2, 2, 2],
            a // [1, 2, 3], [[1, 2, 3], [4, 5, 6]] + a)


@differential()
def test_operators_with_float_and_mixed_lists(xp):
    a = _vector(xp, "float32")
    # a list of Python floats is a float64 array for NumPy: float32 + float64 array -> float64
    return a + [0.5, 1.5, 2.5], a * [1, 2.5, 3], a / (1, 2, 4), a ** [2, 2, 2], a + [True, False, True]


@differential()
def test_ufunc_calls_with_sequences(xp):
    a = _vector(xp)
    return (xp.add(a, [1, 2, 3]), xp.maximum([3, 0, 5], a), xp.hypot(a, (3, 4, 5)), xp.sin([0.5, 1.0, 1.5]) + a,
            xp.where([True, False, True], a, -a), xp.arctan2([[1.0], [2.0]], a))


@differential()
def test_nested_sequence_broadcasts(xp):
    m = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    return m + [[10], [20]], m * [1, 2, 3], m - ((1, 1, 1), (2, 2, 2)), m > [[1, 4, 1], [5, 1, 5]]


@differential()
def test_sequences_broadcast_errors(xp):
    a = _vector(xp)
    return a + [1, 2]  # NumPy: ValueError, operands could not be broadcast


@differential()
def test_sequence_of_numpy_scalars(xp):
    a = _vector(xp)
    return a + [numpy.float32(1), numpy.float32(2), numpy.float32(3)], a * (numpy.int8(2), 3, 4)


@differential()
def test_ufunc_where_and_out_with_lists(xp):
    a = _vector(xp)
    out = xp.asarray(numpy.full(3, -1.0))
    xp.add(a, [1, 2, 3], out=out, where=[True, False, True])
    target = xp.asarray(numpy.zeros(3))
    xp.multiply(a, (2, 2, 2), out=target)
    return out, target


@differential()
def test_inplace_operator_with_list(xp):
    a = _vector(xp)
    a += [1, 2, 3]
    a *= (2, 2, 2)
    return a


@differential()
def test_ufunc_methods_with_sequences(xp):
    a = _vector(xp)
    return xp.add.outer(a, [1, 2]), xp.multiply.outer([1, 2], a)


# -- functions ---------------------------------------------------------------------------------

@differential()
def test_where_clip_with_lists(xp):
    a = _vector(xp)
    return (xp.where(a > 1, [10, 20, 30], 0), xp.where(a > 1, a, [7, 8, 9]), xp.where([True, False, True], a, 0),
            xp.clip(a, [2, 2, 2], 2.5), xp.clip(a, 0, (1, 2, 3)))


@differential()
def test_concatenate_stack_with_lists(xp):
    a = _vector(xp)
    return (xp.concatenate([a, [7.0, 8.0]]), xp.concatenate(([0, 1], a)), xp.stack([a, [4.0, 5.0, 6.0]]),
            xp.concatenate([a, (9, 10)]))


@differential()
def test_matmul_dot_with_lists(xp):
    m = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    return xp.dot(m, [1.0, 2.0, 3.0]), xp.matmul([[1.0, 0.0], [0.0, 1.0]], m), m @ [1.0, 1.0, 1.0]


@differential()
def test_reductions_and_stats_with_lists(xp):
    a = _vector(xp)
    return xp.sum(a * [1, 2, 3]), xp.percentile(a, [25, 75]), xp.isclose(a, [1, 2.0000001, 4])


@differential()
def test_shapes_and_axes_stay_values(xp):
    m = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    parts = xp.array_split(m, [1, 2], axis=1)
    return (xp.reshape(m, [3, 2]), xp.transpose(m, [1, 0]), xp.tile(m, [2, 1]), m.reshape((6,)),
            xp.sum(m, axis=(0, 1)), parts[0], parts[2])


# -- indices, assignment, keyword values --------------------------------------------------------

@differential()
def test_list_indices(xp):
    a = xp.asarray(numpy.arange(10.0))
    m = xp.asarray(numpy.arange(12).reshape(3, 4))
    return a[[0, 2, 5]], a[[True, False] * 5], m[[0, 2]], m[[0, 1], [1, 3]], m[[2, 0], 1:3]


@differential()
def test_list_index_out_of_range(xp):
    a = xp.asarray(numpy.arange(5.0))
    return a[[0, 7]]


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8", "bool"])
@differential()
def test_setitem_with_sequences(xp, dtype):
    a = xp.asarray(numpy.zeros(6, dtype=dtype))
    a[:3] = [1, 0, 1]
    a[3:] = (1, 1, 0)
    m = xp.asarray(numpy.zeros((2, 3), dtype=dtype))
    m[...] = [[1, 0, 1], [0, 1, 1]]
    m[1] = [1, 1, 1]
    return a, m


@differential()
def test_setitem_list_values_convert_to_target_dtype(xp):
    a = xp.asarray(numpy.zeros(3, dtype="int16"))
    a[:] = [1.7, -2.2, 3.9]  # NumPy truncates into the integer dtype
    b = xp.asarray(numpy.zeros(3, dtype="int8"))
    b[[0, 2]] = [5, 6]
    return a, b


@differential()
def test_setitem_out_of_range_list_value(xp):
    a = xp.asarray(numpy.zeros(3, dtype="int8"))
    a[:] = [1, 300, 2]  # NumPy: OverflowError
    return a


@differential()
def test_out_is_host_array(xp):
    a = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    out = numpy.zeros(3)
    result = xp.sum(a, axis=0, out=out)
    return out.tolist(), result is out  # NumPy writes into the host array and returns it
