"""Corners of NumPy's semantics that NumPy's own tests found npgpu missing, as differential tests.

Each body runs as NumPy and as npgpu on every backend (tests/conftest.py); several of these
were silent wrong answers on a device (noted where so).
"""

from __future__ import annotations

import warnings

import numpy
import pytest
from conftest import BACKEND_PARAMS

import npgpu
from npgpu._harness import backend_context, differential


def _arange(xp, n, dtype="float64"):
    return xp.asarray(numpy.arange(n, dtype=dtype))


# -- reductions ------------------------------------------------------------------------------

@differential(rtol=0.0)
def test_sum_keeps_the_sign_of_negative_zeros(xp):
    # wrong answer on the devices: reductions started from +0.0, and 0.0 + -0.0 is 0.0
    z = xp.asarray(numpy.full(1000, -0.0))
    empty = xp.asarray(numpy.zeros(0))
    return (xp.sum(z), z.sum(axis=0), xp.add.reduce(z), (z * 1).sum(), xp.sum(empty), xp.sum(z[:2]),
            xp.sum(xp.asarray(numpy.zeros((3, 0))), axis=1))


@differential()
def test_logical_reduce_into_out(xp):
    # wrong answer on OpenCL: logical_or.reduce(a, out=o) left o unwritten
    a = xp.asarray(numpy.array([1, 0, 2]))
    out = xp.asarray(numpy.zeros((), "int32"))
    xp.logical_or.reduce(a, out=out)
    out2 = xp.asarray(numpy.zeros((), "int32"))
    xp.logical_and.reduce(a, out=out2)
    return out, out2


@differential()
def test_reduce_where_needs_initial_without_identity(xp):
    a = xp.asarray(numpy.ones(3))
    return xp.maximum.reduce(a, where=a > 0)  # NumPy: ValueError (no identity, no initial)


@pytest.mark.parametrize("out_shape", [(1, 3), (2,), (3, 1)])
@differential()
def test_reduce_out_of_the_wrong_shape(xp, out_shape):
    a = xp.asarray(numpy.ones((2, 3)))
    return xp.add.reduce(a, axis=0, out=xp.asarray(numpy.zeros(out_shape)))  # NumPy: ValueError


@differential()
def test_reduce_argument_errors(xp):
    d = xp.asarray(numpy.zeros((3, 3)))
    errors = []
    for call in (lambda: xp.add.reduce(d, "invalid"), lambda: xp.min(d, (0.5, 1)),
                 lambda: xp.add.reduce(d, 0, None, "invalid"), lambda: xp.add(d, 2, [])):
        try:
            call()
            errors.append(None)
        except TypeError:
            errors.append("TypeError")
    return errors


# -- ufunc arguments ---------------------------------------------------------------------------

@differential()
def test_where_given_as_lists(xp):
    a = xp.asarray(numpy.arange(4).reshape(2, 2) + 2)
    xp.power(a, [2, 3], out=a, where=[[0, 1], [1, 0]])
    c = xp.asarray(numpy.full(10, 1.5))
    xp.add(_arange(xp, 10), 1, out=c, where=[1, 0, 0, 1, 0, 0, 1, 1, 1, 0])
    return a, c


@pytest.mark.parametrize("exponent", [-1, [1, -1, 2], "array"])
@differential()
def test_integer_power_with_negative_exponents(xp, exponent):
    # wrong answer on the devices: fused kernels wrapped instead of raising ValueError
    a = xp.asarray(numpy.arange(1, 4))
    e = xp.asarray(numpy.array([0, -3, 1])) if exponent == "array" else exponent
    return a ** e


@pytest.mark.parametrize("call", ["function", "operator", "general"])
@differential()
def test_negative_integer_exponents_of_an_empty_result_raise_nothing(xp, call):
    # NumPy raises only for an element it computes; the check ran on the exponents alone
    # (found by test_bad_input's hypothesis run: an empty bool view to the power of int8 -1)
    base = xp.asarray(numpy.zeros(3, dtype=bool))[1:1]
    e = xp.asarray(numpy.array([-1], dtype=numpy.int8))
    if call == "function":
        return xp.power(base, e)
    if call == "operator":
        return base ** e
    return xp.power(base, e, dtype=numpy.int8)


@differential()
def test_ufunc_at_and_reduceat_indices(xp):
    a = xp.asarray(numpy.zeros((2, 4)))
    xp.add.at(a, (slice(None), [1, 2, 1]), xp.asarray(numpy.array([1.0, 2.0, 3.0])))
    x = xp.asarray(numpy.ones((5, 2)))
    return a, xp.add.reduceat(x, [], axis=0), xp.add.reduceat(_arange(xp, 8), [0, 4])


@differential()
def test_comparison_without_a_loop(xp):
    a = _arange(xp, 3)
    zero_d = xp.asarray(numpy.array(0.0))
    return a == "a", a != "a", a == None, zero_d != xp.asarray(numpy.array("a"))  # noqa: E711 (NumPy's ==)


# -- casts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16", "int32", "int64"])
@differential()
def test_float_to_integer_casts_wrap_as_numpy(xp, dtype):
    # wrong answer on OpenCL (PoCL saturated 130.0 -> int8 to 127; NumPy wraps through int32: -126)
    values = numpy.array([130.0, 300.0, -200.0, 65536.7, -32769.5, 2.5, -2.5, 1e10, -3e9, 3e9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy warns for the values that don't fit)
        return xp.asarray(values).astype(dtype), xp.asarray(values.astype("float32")).astype(dtype)


_UNSIGNED_CASTS = {
    # (values where NumPy's contiguous and strided loops agree: into uint32, NaN and values outside
    # int32's negative range or uint32's range differ between them)
    "uint32": [-2.5, -1.0, -2147483000.5, 4294967040.0, 3e9, 0.5, 7.0, -7.75],
    "uint64": [-2.5, numpy.nan, numpy.inf, -numpy.inf, 2.0**64, 2.0**63, 1.5e19, -1e19, 1e20, 3.0],
}


@pytest.mark.parametrize("dtype", sorted(_UNSIGNED_CASTS))
@differential()
def test_float_to_unsigned_casts_wrap_as_numpy(xp, dtype):
    # wrong answers on OpenCL (PoCL gave 4294967295 for -2.5 into uint32, NumPy 4294967294: x86-64
    # converts through int64) and CUDA (saturating conversions)
    values = numpy.array(_UNSIGNED_CASTS[dtype])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return xp.asarray(values).astype(dtype), xp.asarray(values.astype("float32")).astype(dtype)


@pytest.mark.parametrize("signed", ["int8", "int32", "int64"])
@differential()
def test_signed_and_uint64_compare_exactly(xp, signed):
    # NumPy's qQ->? loops: a negative number is below every unsigned one; generated C converted it
    # to unsigned (-38 > 9 was True on OpenCL), alone and inside a fused expression
    a = xp.asarray(numpy.array([-38, 13, -1, 0, 100, -128], signed))
    b = xp.asarray(numpy.array([9, 100, 2**64 - 1, 0, 100, 2**63], "uint64"))
    fused = ((a > b) | (a == b)) & (a * 1 <= b + 0)
    return (a > b, a >= b, a < b, a <= b, a == b, a != b, b > a, b >= a, b < a, b <= a, b == a, b != a, fused)


_LAYOUTS = {
    "transposed": lambda xp, a: a.T * 2,
    "two_transposed": lambda xp, a: a.T + a.T,
    "unary_chain": lambda xp, a: xp.sqrt(xp.abs(a.T)) - 1,
    "permuted_3d": lambda xp, a: a.reshape(2, 3, 4).transpose(2, 0, 1) * 1.5,
    "reversed_transposed": lambda xp, a: a[::-1].T + 1,
    "mixed_orders": lambda xp, a: a + a.T.copy().T,  # (C and F operands: C order wins)
    "broadcast_row": lambda xp, a: a.T[:, :1] * a.T,
    "where": lambda xp, a: xp.where(a.T > 3, a.T, 0.0),
    # (accumulations keep their operand's layout too: PoCL's cumsum was C-ordered; tools/fuzz_programs.py)
    "cumsum_transposed": lambda xp, a: xp.cumsum(a.T, axis=1),
    "cumprod_transposed": lambda xp, a: xp.cumprod(a.T, axis=0),
    "round_integers_transposed": lambda xp, a: xp.round(a.astype(numpy.int64).T, 1),  # (PoCL's copy was C-ordered)
    "round_integers_tens_transposed": lambda xp, a: xp.round(a.astype(numpy.int32).T, -1),
    # (NumPy's argsort's indices are C-ordered, its sort is laid out as its operand: CuPy's were not)
    "argsort_columns": lambda xp, a: xp.argsort(a, axis=0, kind="stable"),
    "argsort_transposed": lambda xp, a: xp.argsort(a.T, axis=1, kind="stable"),
    "sort_transposed": lambda xp, a: xp.sort(a.T, axis=0),
    # (joins lay out as their operands, C order breaking ties: PoCL's were C-ordered; the fuzz)
    "concatenate_transposed": lambda xp, a: xp.concatenate([a.T, a.T]),
    "concatenate_mixed": lambda xp, a: xp.concatenate([a.T, xp.ones((6, 4))], axis=1),
    "stack_transposed": lambda xp, a: xp.stack([a.T, a.T[::-1]], axis=1),
    "hstack_strided": lambda xp, a: xp.hstack([a.T[:, ::2], a.T[:, 1::2]]),
    # (roll's result is empty_like(a): PoCL's was C-ordered; the fuzz)
    "roll_transposed": lambda xp, a: xp.roll(a.T, 1, axis=0),
    "roll_transposed_nowhere": lambda xp, a: xp.roll(a.T, 0, axis=1),
    "roll_two_axes": lambda xp, a: xp.roll(a.T[::-1], (1, 2), axis=(0, 1)),
}


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("case", sorted(_LAYOUTS))
@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "opencl", "cupy")])
def test_elementwise_results_keep_numpys_memory_order(backend, case, fusion):
    # NumPy lays an elementwise result out in its operands' memory order (a.T * 2 is F-ordered):
    # strides, flags and order="K" reads show it. PoCL's and CuPy's fused kernels' results were
    # C-ordered (np.ravel(a.T * 2, order="K") gave another order of the values).
    host = numpy.arange(24.0).reshape(4, 6)
    want = _LAYOUTS[case](numpy, host)
    with backend_context(backend, fusion=fusion):
        got = _LAYOUTS[case](npgpu, npgpu.asarray(host))
        assert got.shape == want.shape
        def varying(x):  # (the strides of axes longer than 1: a length-1 axis's is arbitrary)
            return [s for s, n in zip(x.strides, x.shape) if n > 1]
        assert varying(got) == varying(want)
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)
        numpy.testing.assert_array_equal(numpy.ravel(got, order="K"), numpy.ravel(want, order="K"), strict=True)


@differential()
def test_reshape_in_a_order_is_numpys_view_or_copy(xp):
    # order="A": Fortran order for a Fortran-contiguous array, else C; a view where NumPy gives one
    # (PoCL ran it in NumPy on a host copy, so a write through the result did not reach the array)
    a = xp.asarray(numpy.arange(24.0).reshape(2, 3, 4))
    viewed = xp.reshape(a[..., 1:], (-1, 3), order="A")
    viewed[0, 0] = -1.0
    f = xp.asfortranarray(xp.asarray(numpy.arange(6.0).reshape(2, 3)))
    return a, viewed, xp.reshape(f, (3, 2), order="A"), xp.reshape(f.T, (6,), order="A")


# -- assignment and indexing ------------------------------------------------------------------

@differential()
def test_assignment_drops_leading_ones_of_the_value(xp):
    a = xp.asarray(numpy.zeros((3, 2)))
    a[...] = xp.asarray(numpy.ones((1, 3, 2)))
    return a


@differential()
def test_boolean_index_of_the_wrong_length(xp):
    return _arange(xp, 3)[xp.asarray(numpy.array([True]))]  # NumPy: IndexError, its message


@pytest.mark.parametrize("key", ["list_bools", "none", "pair", "zero_d_bool", "floats", "mixed", "empty"])
@differential()
def test_flat_iterator_keys(xp, key):
    a = _arange(xp, 9, "int64").reshape(3, 3)
    keys = {"list_bools": [True, True], "none": None, "pair": (1, 2), "zero_d_bool": True, "floats": [1.0, 2.0],
            "mixed": [True, 1], "empty": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = a.flat[keys[key]]
    return got, [type(w.message).__name__ for w in caught]


@differential()
def test_flat_assignment_with_a_zero_d_index(xp):
    a = _arange(xp, 9).reshape(3, 3)
    a.flat[()] = 70  # NumPy: IndexError


# -- views -------------------------------------------------------------------------------------

@differential()
def test_metadata_functions_give_views(xp):
    a = _arange(xp, 24).reshape(2, 3, 4)
    views = (xp.rollaxis(a, 2), xp.moveaxis(a, 0, -1), xp.swapaxes(a, 0, 2), xp.flip(a, 1), xp.squeeze(a[:1]),
             xp.expand_dims(a, 0), xp.atleast_3d(a[0, 0]), xp.diagonal(a[0]))
    return (tuple(v.base is a.base for v in views), tuple(v.flags.owndata for v in views),
            xp.diagonal(a[0]).flags.writeable, views)


@differential()
def test_dtype_views_share_memory(xp):
    # wrong answer on OpenCL: a.view(int64) was a copy, so writes to it never reached a
    a = _arange(xp, 4)
    b = a.view("int64")
    b[0] = 4607182418800017408  # the bits of 1.0
    return a, b.base is a, a.view("uint8").shape, a.view()


@differential()
def test_reshape_copy_argument(xp):
    a = _arange(xp, 6)
    b = xp.reshape(a, (2, 3), copy=False)
    c = xp.reshape(a, (3, 2), copy=True)
    return xp.shares_memory(a, b), xp.shares_memory(a, c), xp.reshape(a, (-1, 2)).shape


@differential()
def test_reshape_without_a_copy_of_a_transpose(xp):
    return xp.reshape(_arange(xp, 6).reshape(2, 3).T, 6, copy=False)  # NumPy: ValueError


@differential()
def test_concatenate_checks_casting_into_out(xp):
    parts = (_arange(xp, 2), _arange(xp, 2))
    return xp.concatenate(parts, out=xp.asarray(numpy.empty(4, "complex64")), casting="no")  # NumPy: TypeError


# -- host subclasses and hidden device arrays ------------------------------------------------------

class _Tagged(numpy.ndarray):
    pass


@differential()
def test_host_subclasses_keep_their_class(xp):
    tagged = numpy.ones(3).view(_Tagged)
    masked = numpy.ma.masked_where([True, False], [1.0, 2.0])
    return (type(xp.ones_like(tagged)).__name__, type(xp.add(_arange(xp, 3), tagged)).__name__,
            type(xp.isclose(2, masked)).__name__, type(_arange(xp, 3).view(_Tagged)).__name__)


@differential()
def test_device_arrays_behind_numbers_in_a_list(xp):
    # np.block([1.0, d, e]) recursed forever: the first item said "numbers"
    return xp.block([1.0, 2 * xp.ones((1, 2)), 3 * xp.ones((1, 1, 3))]), xp.stack([_arange(xp, 2), [5.0, 6.0]])


@differential()
def test_out_given_positionally(xp):
    host_out = numpy.zeros((2, 2))
    returned = xp.outer(xp.ones(2), xp.ones(2), host_out)
    return returned is host_out, host_out.tolist()


@differential()
def test_device_outputs_given_positionally(xp):
    """``ufunc(a, b, out)`` into a device array (the dispatcher's in-place roads since the
    eighteenth session): the output returned and written, a narrower output dtype, an output
    that overlaps an operand shifted, and NumPy's errors for a cast it refuses, a read-only output
    and shapes that don't broadcast into it."""
    a = xp.asarray(numpy.linspace(0.0, 3.0, 12))
    b = xp.asarray(numpy.arange(12.0))
    out = xp.zeros(12)
    returned = xp.multiply(a, b, out)
    narrow = xp.zeros(12, dtype=numpy.float32)
    xp.add(a, 1.5, narrow)
    shifted = xp.asarray(numpy.arange(12.0))
    xp.add(shifted[:-1], shifted[1:], shifted[1:])
    xp.negative(b, b)
    errors = []
    for call in (lambda: xp.add(a, b, xp.zeros(12, dtype=numpy.int64)),
                 lambda: xp.add(a, b, xp.zeros(5)),
                 lambda: xp.add(a, b, xp.asarray(numpy.zeros(12)).view())):
        try:
            target = call()
        except (TypeError, ValueError) as exc:
            errors.append(type(exc).__name__)
        else:
            errors.append(None)
            assert target is not None
    read_only = xp.asarray(numpy.zeros(12))
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        xp.add(a, b, read_only)
    return returned is out, out, narrow, shifted, b, errors


@differential()
def test_put_along_axis_writes_into_a_device_array(xp):
    # silent lost write on every device backend: NumPy wrote into a host copy it then dropped
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    xp.put_along_axis(a, xp.asarray(numpy.array([[2, 0, 1, 2]])), 99.0, axis=0)
    b = xp.asarray(numpy.arange(6))
    before = b + 1  # (recorded work reading b runs on the old values)
    xp.put_along_axis(b, numpy.array([5, 0]), numpy.array([-1, -2]), axis=None)
    read_only = xp.asarray(numpy.zeros(3))
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        xp.put_along_axis(read_only, numpy.array([0]), 1.0, axis=0)
    return a, b, before


@differential()
def test_setting_shape_warns_as_numpy_does(xp):
    # NumPy 2.5 deprecates setting an array's shape (GPU run 69: its DeprecationWarning, which
    # npgpu's device arrays did not give); NumPy 2.4 warns nothing: both are compared here
    a = xp.asarray(numpy.arange(6.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a.shape = (2, 3)
    return a, [(w.category.__name__, str(w.message)) for w in caught]


@differential()
def test_recorded_work_reads_the_values_it_was_recorded_with(xp):
    # silent wrong answers on the devices: `e = d + 1` is recorded, and ran on the values after
    # nan_to_num(d, copy=False) (stale), or on the native that `d.shape = ...` and `d.resize(...)`
    # put in d's place (OpenCL: wrong values; emulated: a broadcast error from the kernel)
    def fresh():
        return xp.asarray(numpy.array([numpy.nan, 3.0, 1.0, numpy.inf]))

    d = fresh()
    before = d + 1
    same = xp.nan_to_num(d, copy=False, posinf=5.0)
    view = fresh()
    base_before = view * 2
    xp.nan_to_num(view[::2], False)  # (positional copy=False, into a view)
    ints = xp.asarray(numpy.arange(4))
    shaped = fresh()
    shaped_before = shaped - 1
    with warnings.catch_warnings():  # (NumPy 2.5 deprecates setting shape)
        warnings.simplefilter("ignore", DeprecationWarning)
        shaped.shape = (2, 2)
    grown = fresh()
    grown_before = grown + 0.5
    grown.resize((6,), refcheck=False)
    read_only = fresh()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        xp.nan_to_num(read_only, copy=False)
    return (before, d, same is d, base_before, view, xp.nan_to_num(ints, copy=False) is ints, shaped_before,
            shaped, grown_before, grown)


@differential()
def test_ravel_views_only_what_numpy_views(xp):
    # silent wrong answer on OpenCL: a[:, ::2].ravel() was a view (its reshape can be one), so a
    # write into it reached a; NumPy's ravel views only C-contiguous arrays
    a = xp.asarray(numpy.arange(24.0).reshape(4, 6))
    for part in (a[:, ::2], a[::2], a[:, :1], a.T, a[1:3], a[2]):
        flat = part.ravel()
        flat[...] = -1.0
        other = xp.ravel(part)
        other[:1] = -2.0
    return a


# -- found by NumPy's own tests on the CuPy backend (GPU machine, 2026-12-01) ------------------

@differential()
def test_array_equal_and_allclose_answer_with_python_bools(xp):
    a = xp.asarray(numpy.array([1.0, numpy.nan, 3.0]))
    results = (xp.array_equal(a, a), xp.array_equal(a, a, equal_nan=True), xp.allclose(a, a, equal_nan=True))
    assert all(type(r) is bool for r in results)  # (NumPy's tests check `is True`)
    return results


@differential()
def test_float_slice_bounds_are_a_type_error(xp):
    a = xp.asarray(numpy.arange(10.0))
    for key in (slice(0.0, None), slice(None, 2.0), slice(None, None, 1.0)):
        with pytest.raises(TypeError, match="slice indices must be integers"):
            a[key]
    return a[numpy.int64(1):numpy.int32(4)]


@differential()
def test_index_arrays_that_do_not_broadcast_are_an_index_error(xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="shape mismatch"):
        a[[0, 1], [0, 1, 2]]
    return a[[0, 1], [1, 2]]


@pytest.mark.parametrize("dtype", ["float16", "longdouble", "clongdouble"])
@differential()
def test_dtypes_a_device_lacks_stay_numpys_with_numpys_errors(xp, dtype):
    # (CuPy has no long double; float16 has no kernel template: checking its errors raised KeyError)
    # (where they live is npgpu's choice: compared as host arrays)
    a = xp.asarray(numpy.linspace(-2.0, 2.0, 50)).astype(dtype)
    with numpy.errstate(all="ignore"):
        results = xp.exp(a), xp.sqrt(a) * 2, xp.ones(5, dtype=dtype), xp.full(5, 1.5, dtype=dtype)
    return [(str(r.dtype), numpy.asarray(r).tolist()) for r in results], a.sum()


@differential()
def test_clip_propagates_nan_bounds_and_einsum_takes_out_and_sublists(xp):
    a = xp.asarray(numpy.linspace(-1.0, 1.0, 10))
    lo = xp.asarray(numpy.array([numpy.nan] + [-0.5] * 9))
    out = xp.asarray(numpy.zeros(10))
    xp.einsum("i,i->i", a, a, out=out)
    return (xp.clip(a, numpy.nan, 0.5), xp.clip(a, lo, 0.5), xp.clip(a, -0.5, 0.5), out,
            xp.einsum(a, [0], a, [0], [0]), xp.einsum("i,i->i", a, a, optimize=["einsum_path", (0, 1)]))


@differential()
def test_a_float_index_is_an_index_error_before_a_float_slice_is_a_type_error(xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError):
        a[0.0:, 0.0]
    with pytest.raises(IndexError):
        a[1.0]
    return a[1]


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@differential()
def test_float_to_integer_casts_wrap_in_every_memory_order(xp, order):
    values = numpy.array([[130.0, 300.0, -200.0], [65536.7, -32769.5, 2.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, f = xp.asarray(values), xp.asarray(numpy.asfortranarray(values))
        return a.astype("int8", order=order), f.astype("int8", order=order), a.T.astype("uint8", order=order)


# -- indexing by device masks and index arrays (the short roads of npgpu/_dispatch.py) ------------

@pytest.mark.parametrize("dtype", ["float64", "complex128", "int64", "bool", "float32"])
@differential(rtol=0.0)
def test_selection_by_a_device_mask(xp, dtype):
    a = xp.asarray((numpy.arange(24.0).reshape(4, 6) % 5).astype(dtype))
    full = a != a.ravel()[0]  # (a computed mask, pending where fusion records it)
    rows = xp.asarray(numpy.array([True, False, True, True]))
    picked = a[full]
    with pytest.raises(IndexError, match="boolean index did not match"):
        a[xp.asarray(numpy.array([True, False]))]
    narrowed = a[rows][xp.asarray(numpy.array([False, True, True]))]
    return picked, a[rows], narrowed, a[full & ~full], a.ravel()[full.ravel()]


@differential(rtol=0.0)
def test_writes_through_device_index_arrays_and_masks(xp):
    counts = xp.asarray(numpy.zeros((5, 6), "int64"))
    values = xp.asarray(numpy.zeros((5, 6), "complex128"))
    rows = xp.asarray(numpy.array([0, 4, 2, -1]))
    cols = xp.asarray(numpy.array([1, 5, 0, 3]))
    counts[rows, cols] = 7
    values[rows, cols] = xp.asarray(numpy.array([1 + 2j, 3j, -1.0, 2.5]))
    mask = counts > 0
    counts[mask] = counts[mask] + 1
    values[xp.asarray(numpy.array([3]))] = 9.0  # (one index array: a row)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 1 with size 6"):
        counts[rows, xp.asarray(numpy.array([1, 6, 0, 3]))] = 1
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        counts[xp.asarray(numpy.array([-6, 0])), xp.asarray(numpy.array([0, 0]))] = 1
    with pytest.raises(OverflowError):
        xp.asarray(numpy.zeros(3, "uint8"))[xp.asarray(numpy.array([0]))] = 300
    frozen = xp.asarray(numpy.zeros(3))
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        frozen[xp.asarray(numpy.array([0]))] = 1.0
    return counts, values


#: index arrays with elements outside their axis, and the error NumPy names: the first one outside,
#: in index order, array by array (not the largest)
OUTSIDE_KEYS = [
    ((3, 3), ([0, 5], [7, 0]), "index 5 is out of bounds for axis 0 with size 3"),
    ((3, 3), ([0, 1], [7, 5]), "index 7 is out of bounds for axis 1 with size 3"),
    ((3, 3), ([[4, -9], [1, 2]],), "index 4 is out of bounds for axis 0 with size 3"),
    ((3, 3), ([-4, 5],), "index -4 is out of bounds for axis 0 with size 3"),
    ((60,), (list(range(91, 100)),), "index 91 is out of bounds for axis 0 with size 60"),
    ((60,), ([3, -70, 99],), "index -70 is out of bounds for axis 0 with size 60"),
]


@pytest.mark.parametrize("on_device", [False, True], ids=["host-index", "device-index"])
@pytest.mark.parametrize("shape, key, message", OUTSIDE_KEYS)
def test_an_index_outside_its_axis_is_named_as_numpy_names_it(npgpu_backend, shape, key, message, on_device):
    host = numpy.arange(float(numpy.prod(shape))).reshape(shape)
    with pytest.raises(IndexError) as numpys:
        host[tuple(numpy.asarray(k) for k in key)] = 1.0
    assert str(numpys.value) == message
    with backend_context(npgpu_backend):
        a = npgpu.asarray(host.copy())
        index = tuple(npgpu.asarray(numpy.asarray(k)) if on_device else numpy.asarray(k) for k in key)
        with pytest.raises(IndexError) as read:
            a[index]
        with pytest.raises(IndexError) as write:
            a[index] = 1.0
        assert (str(read.value), str(write.value)) == (message, message)
        numpy.testing.assert_array_equal(npgpu.asnumpy(a), host)  # (nothing written)


def _outputs_given_as_none(xp):
    a = xp.asarray(numpy.arange(-6.0, 6.0))
    r = xp.asarray(numpy.zeros(12))
    f = xp.asarray(numpy.zeros(12))
    quotient, remainder = xp.divmod(a, 4.0, out=(None, r))
    fraction, whole = xp.modf(a / 5.0, out=(f, None))
    assert remainder is r and fraction is f
    return quotient, remainder, fraction, whole


@differential(rtol=0.0)
def test_an_output_given_as_none_is_allocated(xp):
    # (a wrong answer before: the device path returned the None it was given for the quotient)
    return _outputs_given_as_none(xp)


@differential(rtol=0.0, fusion=False)
def test_an_output_given_as_none_is_allocated_without_fusion(xp):
    return _outputs_given_as_none(xp)


@differential(rtol=0.0)
def test_device_arrays_copied_into_basic_views(xp):
    a = xp.asarray(numpy.arange(30.0).reshape(5, 6))
    row = xp.asarray(numpy.linspace(-1.0, 1.0, 6))
    a[1:3] = row  # (a row broadcast into a block)
    a[1:, 0] = a[:-1, 1]  # (overlapping memory, a strided column)
    a[0, 1:] = a[0, :-1]  # (overlapping, forward)
    corr = xp.asarray(numpy.eye(6))
    for i in range(5):
        corr[i + 1:6, i] = corr[i, i + 1:6] = a[i, :5 - i] * 2.0  # (correlation's chained write)
    whole = xp.asarray(numpy.zeros((3, 4), "int64"))
    whole[...] = xp.asarray(numpy.linspace(-3.7, 3.7, 12).reshape(3, 4))  # (float into int: truncated)
    with pytest.raises(ValueError):
        a[0:2] = xp.asarray(numpy.ones(4))
    return a, corr, whole


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "any", "all"])
@differential()
def test_reductions_of_a_device_array_by_method_and_function(xp, name):
    # (the dispatcher's short road for one device array with at most an int axis and keepdims)
    a = xp.asarray(numpy.linspace(-1.0, 2.0, 24).reshape(4, 6))
    ints = xp.asarray(numpy.arange(24).reshape(4, 6) % 5)
    f = getattr(xp, name)
    results = [f(a), getattr(a, name)(), f(a, 0), f(a, axis=1), f(a, axis=-1, keepdims=True), f(ints),
               getattr(ints, name)(axis=0), f(a * 2.0 + 1.0), f(a * 2.0, axis=1), f(xp.asarray(numpy.float64(3.5)))]
    with pytest.raises(numpy.exceptions.AxisError):
        f(a, axis=2)
    if name not in ("max", "min"):
        results.append(f(xp.asarray(numpy.zeros((0, 3))), axis=0))
    return results


@differential()
def test_more_arguments_by_position_than_the_devices_function_takes_are_numpys(xp):
    # numpy.sort(a, axis, kind, order): CuPy's sort takes no order; giving it a fourth positional
    # argument was CuPy's TypeError (the emulated stand-in has CuPy's sort signature)
    a = xp.asarray(numpy.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]]))
    return xp.sort(a, -1, None, None), xp.sort(a, 0, "stable"), xp.argsort(a, 1, None, None)


_METHOD_CALLS = {
    "clip_lower": lambda a: a.clip(3), "clip_upper": lambda a: a.clip(None, 4), "clip_max": lambda a: a.clip(max=2),
    "argmax_axis": lambda a: a.argmax(1), "argmin_keepdims": lambda a: a.argmin(0, None, keepdims=True),
    "cumsum_dtype": lambda a: a.cumsum(1, numpy.float32), "cumprod_axis": lambda a: a.cumprod(0),
    "any_axis": lambda a: a.any(0), "all_keepdims": lambda a: a.all(1, keepdims=True),
    "sum_dtype": lambda a: a.sum(0, numpy.int8), "mean_axis": lambda a: a.mean(1),
    "std_ddof": lambda a: a.std(0, None, None, 1), "var_keepdims": lambda a: a.var(1, None, None, 0, True),
    "max_axis": lambda a: a.max(0), "prod_dtype": lambda a: a.prod(1, numpy.float64),
    "trace_offset": lambda a: a.trace(1), "diagonal_offset": lambda a: a.diagonal(-1),
    "repeat_axis": lambda a: a.repeat(2, 0), "take_axis": lambda a: a.take([0, 2], 1),
    "argsort_axis": lambda a: a.argsort(0, "stable"), "round_decimals": lambda a: (a * 0.37).round(1),
    "squeeze_axis": lambda a: a[:1].squeeze(0), "swapaxes": lambda a: a.swapaxes(0, 1),
    "transpose_axes": lambda a: a.transpose(1, 0), "reshape_varargs": lambda a: a.reshape(4, 3),
    "ravel_order": lambda a: a.ravel("F"), "compress": lambda a: a.compress([True, False, True], 1),
    "searchsorted": lambda a: a.ravel().searchsorted(5, "right"), "ptp_removed": lambda a: a.ptp(),
}


@pytest.mark.parametrize("call", list(_METHOD_CALLS))
@differential()
def test_device_array_methods_take_ndarrays_positional_arguments(xp, call):
    # (a method forwarding its arguments to the function of its name gave a.clip(2) NumPy's
    # TypeError, numpy.clip's two required bounds; ptp left ndarray in NumPy 2: AttributeError)
    a = xp.asarray(numpy.arange(12).reshape(3, 4) % 5)
    return _METHOD_CALLS[call](a)


@pytest.mark.parametrize("name", ["mean", "nanmean"])
@differential()
def test_a_mean_of_no_integers_reports_its_division_as_numpys(xp, name):
    # NumPy's mean of nothing divides 0 by 0 ("invalid value encountered in divide", raised here),
    # and its nanmean of integers is their mean; CuPy's gave the NaN silently (an H100's fuzz)
    empty = xp.asarray(numpy.zeros((0, 3), numpy.int64))
    with numpy.errstate(invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ("Mean of empty slice")
        return getattr(xp, name)(empty, axis=0)


@differential(rtol=1e-12)
def test_matmul_of_device_arrays(xp):
    # (the dispatcher's short road for a gufunc of device arrays)
    rng = numpy.random.default_rng(7)
    a = xp.asarray(rng.random((6, 5)))
    v = xp.asarray(rng.random(5))
    batch = xp.asarray(rng.random((3, 5, 4)))
    ints = xp.asarray(numpy.arange(20).reshape(4, 5))
    single = xp.asarray(rng.random((5, 2)).astype("float32"))
    z = xp.asarray(rng.random((5, 3)) + 1j * rng.random((5, 3)))
    with pytest.raises(ValueError):
        a @ a
    return (a @ v, v @ a.T, a @ batch, ints @ ints.T, a @ single, single.T @ v, a @ z, xp.matmul(a[:, 1], a[1:, :]),
            (a * 2.0) @ v)


@differential(rtol=0.0)
def test_short_roads_with_numpy_scalars_lists_and_tuples(xp):
    # (NumPy scalars take the write's short road; lists, tuples and NumPy arrays among the
    # operands take the general path: every kind gives NumPy's answer)
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    rows, cols = xp.asarray(numpy.array([0, 2])), xp.asarray(numpy.array([1, 3]))
    a[rows, cols] = numpy.float32(-1.5)
    a[xp.asarray(numpy.array([True, False, True]))] = numpy.int64(7)
    a[1, 1:] = numpy.float64(0.25)
    a[[0, 1], [2, 2]] = (8.0, 9.0)
    b = xp.asarray(numpy.ones(3))
    b[xp.asarray(numpy.array([0, 2]))] = [4.0, 5.0]
    return (a, b, a[xp.asarray(numpy.array([True, True, False]))], a @ [1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 2.0] @ a,
            a @ numpy.ones((4, 2)), (1.0, 2.0, 3.0) @ a, xp.sum(a, numpy.int64(0)), a.max(axis=(0, 1)))


@differential(on_fallback="raise")
def test_require_returns_the_array_where_it_meets_the_requirements(xp):
    # a fallback returned a host-computed copy: writes through require's result were lost
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    same = [xp.require(a), xp.require(a, requirements="CAW"), xp.require(a, numpy.float64, ["C_CONTIGUOUS"]),
            xp.require(a, requirements=["E", "aligned"])]
    for k, r in enumerate(same):
        r[0, k] = -1.0 - k
    t = a.T  # (not C-contiguous, not its own data)
    copies = [xp.require(t, requirements=["C"]), xp.require(t, requirements="O"), xp.require(a, numpy.float32, "W")]
    for c in copies:
        c[1, 1] = 1000.0
    flags = [(c.flags.c_contiguous, c.flags.f_contiguous, c.flags.owndata, c.dtype.str) for c in copies]
    with pytest.raises(ValueError, match="Cannot specify both"):
        xp.require(a, requirements="CF")
    with pytest.raises(KeyError):
        xp.require(a, requirements=["X"])
    return a, copies, flags, xp.require(t, requirements="F").flags.f_contiguous


@differential(on_fallback="raise")
def test_unstack_gives_views_of_the_array(xp):
    # a fallback returned copies: writes through them were lost
    a = xp.asarray(numpy.arange(24.0).reshape(2, 3, 4))
    rows = xp.unstack(a)
    columns = xp.unstack(a, axis=-1)
    rows[1][0, 0] = -1.0
    columns[2][1, 1] = -2.0
    with pytest.raises(numpy.exceptions.AxisError):
        xp.unstack(a, axis=3)
    return a, [r.shape for r in rows], [c.shape for c in columns], type(rows).__name__, len(columns)


@differential(on_fallback="raise")
def test_asarray_of_an_array_it_need_not_copy_is_that_array(xp):
    # code tests `np.asarray(x) is x` (to know whether it was handed a copy); npgpu gave another
    # device array sharing the memory
    a = xp.asarray(numpy.arange(6.0))
    r = xp.asarray(numpy.arange(4.0))
    r.flags.writeable = False
    return [xp.asarray(a) is a, xp.asanyarray(a) is a, xp.array(a, copy=None) is a, xp.array(a, copy=False) is a,
            xp.ascontiguousarray(a) is a, xp.asarray(a, dtype=numpy.float64) is a, xp.asarray(r) is r,
            xp.array(a) is a, xp.asarray(a, dtype=numpy.float32) is a, xp.array(a, copy=None, ndmin=2) is a,
            xp.asarray(a[::2]) is a]


@differential(on_fallback="raise")
def test_diag_of_a_matrix_is_a_read_only_view(xp):
    # OpenCL's diag of a 2-d array was a copy: a later write to the matrix didn't show in it
    # (and CuPy's view was writable where NumPy's is read-only)
    a = xp.asarray(numpy.arange(16.0).reshape(4, 4))
    main, above, below = xp.diag(a), xp.diag(a, 1), xp.diag(a, k=-2)
    a[1, 1] = -1.0
    a[0, 1] = -2.0
    a[3, 1] = -3.0
    for d in (main, above, below):
        with pytest.raises(ValueError, match="read-only"):
            d[0] = 0.0
    made = xp.diag(xp.asarray(numpy.arange(3.0)), 1)  # (of a 1-d array: a new writable matrix)
    made[0, 0] = 7.0
    return main, above, below, main.flags.writeable, made, made.flags.writeable


@differential(on_fallback="raise")
def test_sliding_window_view_views_the_array(xp):
    # a fallback gave a writable host copy: later writes to the array didn't show in the windows
    swv = xp.lib.stride_tricks.sliding_window_view
    a = xp.asarray(numpy.arange(20.0).reshape(4, 5))
    windows = swv(a, (2, 3))
    rows = swv(a, 3, axis=1)
    strided = swv(a[:, ::2], 2, axis=0)
    writable = swv(a, 2, axis=0, writeable=True)
    a[1, 2] = -1.0
    writable[0, 4, 1] = -5.0  # (is a[1, 4])
    with pytest.raises(ValueError, match="read-only"):
        windows[0, 0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="cannot be larger"):
        swv(a, (5, 5))
    with pytest.raises(ValueError, match="must have the same length"):
        swv(a, (2, 2), axis=(0,))
    sums = (windows * 2.0).sum(axis=(2, 3))
    return a, windows, rows, strided, sums, windows.flags.writeable, writable.flags.writeable


def _copy_source(xp, layout):
    base = xp.asarray(numpy.arange(24.0).reshape(4, 6))
    if layout == "readonly":
        source = base.copy()
        source.flags.writeable = False
        return base, source
    sources = {"contiguous": lambda: base, "transposed": lambda: base.T, "strided": lambda: base[::2, 1::2],
               "pending": lambda: base * 2.0 + 1.0, "zero_d": lambda: base[1, 2:3].reshape(()),
               "empty": lambda: base[:0], "ints": lambda: xp.asarray(numpy.arange(12).reshape(3, 4)).T,
               "complex": lambda: (base + 1j * base)[:, ::-1]}
    return base, sources[layout]()


@pytest.mark.parametrize("order", ["C", "K", "A", "F", None])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "pending", "zero_d", "empty", "readonly",
                                    "ints", "complex"])
@differential(on_fallback="raise")
def test_copies_of_device_arrays_are_numpys(xp, order, layout):
    # (cavity_flow's pn = p.copy() each iteration; layouts NumPy keeps or makes C-ordered)
    base, source = _copy_source(xp, layout)
    options = {} if order is None else {"order": order}
    copies = [source.copy(**options), xp.copy(source, **options)]
    base[...] = -1.0  # (the copies are memory of their own)
    flags = [(c.flags.c_contiguous, c.flags.f_contiguous, c.flags.writeable, c.base is None) for c in copies]
    return copies, flags


def test_a_device_arrays_copy_is_counted_on_the_device(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(10.0))
        npgpu.report(reset=True)
        b = a.copy()
        c = numpy.copy(a[::2])
        counts = npgpu.report(reset=True).functions["copy"]
        assert (counts.device, counts.host, counts.fallback) == (2, 0, 0)
        assert type(b) is type(c) is npgpu.DeviceArray


RANGES = [
    ("linspace", lambda xp: xp.linspace(-2.25, 0.75, 1000)),
    ("linspace_open", lambda xp: xp.linspace(0.1, 1.0, 100_000, endpoint=False)),
    ("linspace_float32", lambda xp: xp.linspace(-1.5, 1.5, 999, dtype=numpy.float32)),
    ("linspace_retstep", lambda xp: xp.linspace(-1.0, 3.3, 77, retstep=True)),
    ("linspace_array_bounds", lambda xp: xp.linspace(xp.asarray(numpy.array([0.1, -2.0])), 5.3, 9)),
    ("linspace_ints", lambda xp: xp.linspace(0, 1000, 333, dtype=numpy.int64)),
    ("logspace", lambda xp: xp.logspace(-3.0, 2.7, 1001)),
    ("logspace_base", lambda xp: xp.logspace(-2.0, 2.0, 77, base=2.5)),
    ("arange_step", lambda xp: xp.arange(0.1, 100.3, 0.37)),
    ("arange_fine", lambda xp: xp.arange(-5.0, 5.0, 0.001)),
    ("arange_float32", lambda xp: xp.arange(1.0, 2.0, 0.003, dtype=numpy.float32)),
    ("arange_ints", lambda xp: xp.arange(3, 10**6, 7)),
]


@pytest.mark.parametrize("make", [m for _, m in RANGES], ids=[name for name, _ in RANGES])
def test_ranges_are_numpys_to_the_last_digit(device_backend, make):
    # (the harness compares floats within a tolerance: CuPy's grids differed in the last place,
    # which a chaotic iteration such as mandelbrot2's then makes visible)
    want = make(numpy)
    with npgpu.enable(device_backend, threshold=0):
        got = make(npgpu)
        host = npgpu.asnumpy(got[0]) if isinstance(got, tuple) else npgpu.asnumpy(got)
        assert type(got[0] if isinstance(got, tuple) else got) is npgpu.DeviceArray
    if isinstance(want, tuple):
        assert got[1] == want[1] and type(got[1]) is type(want[1])
        want = want[0]
    assert host.dtype == want.dtype
    numpy.testing.assert_array_equal(host, want, strict=True)
