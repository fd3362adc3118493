"""NumPy's floating-point error state on the device: np.errstate / np.seterr give NumPy's warnings,
FloatingPointErrors and callbacks, with NumPy's messages, in NumPy's order, on every backend.

Each body runs as NumPy and as npgpu; everything it warns, raises, calls back and logs is recorded
(warnings arrive by the time the result is downloaded, which the harness does inside the body's
errstate-free context) and compared with NumPy's.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from typing import Any

import numpy
import pytest

import npgpu
from npgpu import _fperr
from npgpu._array import DeviceArray
from npgpu._harness import assert_same, backend_context
from npgpu.kernels import codegen, ir
from npgpu.kernels import ufuncs as table


class _Events:
    """What a run did: warnings (class, message), seterrcall calls, log writes, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def call(self, kind: str, flag: int) -> None:
        # (the flag word holds every category the call raised; devices don't detect underflow: README)
        self.seen.append(("call", kind, flag & ~table.UNDER))

    def write(self, message: str) -> None:
        self.seen.append(("log", message))


def _host(value: Any) -> Any:
    if isinstance(value, DeviceArray):
        return value.__array__()
    if isinstance(value, tuple):
        return tuple(_host(v) for v in value)
    return value


def _observe(body: Any, xp: Any, locations: bool = False) -> tuple[Any, BaseException | None, list[tuple[Any, ...]]]:
    events = _Events()

    def show(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
        events.seen.append(("warn", category, str(message)) + ((filename, lineno) if locations else ()))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        try:
            result = _host(body(xp, events))  # (the download: where deferred warnings arrive)
            error = None
        except (FloatingPointError, NameError, RuntimeWarning) as exc:
            result, error = None, exc
    return result, error, events.seen


def check(body: Any, backend: str, locations: bool = False, **options: Any) -> None:
    """``body(xp, events)`` warns, raises and calls back under npgpu as under NumPy."""
    expected, expected_error, expected_events = _observe(body, numpy, locations)
    with backend_context(backend, **options):
        actual, actual_error, actual_events = _observe(body, npgpu, locations)
    assert actual_events == expected_events
    assert type(actual_error) is type(expected_error), (actual_error, expected_error)
    if expected_error is not None:
        assert str(actual_error) == str(expected_error)
    else:
        assert_same(actual, expected, device=False)


def _dev(xp: Any, values: Any, dtype: Any = float) -> Any:
    return xp.asarray(numpy.array(values, dtype))


FLOAT_CASES = {
    "divide": lambda xp: _dev(xp, [1.0, -2.0, 3.0]) / _dev(xp, [0.0, 0.0, 1.0]),
    "zero_by_zero": lambda xp: _dev(xp, [0.0, 1.0]) / _dev(xp, [0.0, 1.0]),
    "both": lambda xp: _dev(xp, [1.0, 0.0]) / _dev(xp, [0.0, 0.0]),
    "overflow": lambda xp: _dev(xp, [10.0, 1.0]) * 1e308,
    "exp": lambda xp: xp.exp(_dev(xp, [1000.0, 1.0])),
    "sqrt": lambda xp: xp.sqrt(_dev(xp, [-1.0, 4.0])),
    "log": lambda xp: xp.log(_dev(xp, [0.0, -1.0, 1.0])),
    "sin_inf": lambda xp: xp.sin(_dev(xp, [numpy.inf, 0.0])),
    "inf_minus_inf": lambda xp: _dev(xp, [numpy.inf, 1.0]) - numpy.inf,
    "inf_times_zero": lambda xp: _dev(xp, [numpy.inf, 1.0]) * 0.0,
    "arctanh": lambda xp: xp.arctanh(_dev(xp, [1.0, 2.0, 0.5])),
    "power": lambda xp: xp.power(_dev(xp, [0.0, -1.0, 10.0]), _dev(xp, [-1.0, 0.5, 400.0])),
    "reciprocal_operator": lambda xp: _dev(xp, [0.0, 2.0]) ** -1,
    "float32_overflow": lambda xp: _dev(xp, [3e38, 1.0], numpy.float32) * numpy.float32(10),
}
INT_CASES = {
    "floor_divide_by_zero": lambda xp: _dev(xp, [5, 7], numpy.int32) // _dev(xp, [0, 2], numpy.int32),
    "remainder_by_zero": lambda xp: _dev(xp, [5, 7], numpy.int64) % _dev(xp, [0, 2], numpy.int64),
    "min_floor_divide_minus_one": lambda xp: _dev(xp, [-2**31, 4], numpy.int32) // _dev(xp, [-1, 2], numpy.int32),
    "unsigned_by_zero": lambda xp: _dev(xp, [5, 7], numpy.uint8) // _dev(xp, [0, 2], numpy.uint8),
    "fmod_by_zero": lambda xp: xp.fmod(_dev(xp, [5, 7], numpy.int16), _dev(xp, [0, 2], numpy.int16)),
}
MODES = ("warn", "raise", "ignore", "call", "log")


def _in_state(case: Any, mode: str) -> Any:
    def body(xp: Any, events: _Events) -> Any:
        handler = events if mode == "log" else (events.call if mode == "call" else None)
        with xp.errstate(all=mode, under="ignore", call=handler):
            return case(xp)
    return body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_float_errors(npgpu_backend: str, case: str, mode: str) -> None:
    check(_in_state(FLOAT_CASES[case], mode), npgpu_backend)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(INT_CASES))
def test_integer_errors(npgpu_backend: str, case: str, mode: str) -> None:
    check(_in_state(INT_CASES[case], mode), npgpu_backend)


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("case", ["divide", "overflow", "sqrt", "log", "both", "power"])
def test_default_state_warns_fused_and_eager(device_backend: str, case: str, fusion: bool) -> None:
    check(lambda xp, events: FLOAT_CASES[case](xp), device_backend, fusion=fusion)


@pytest.mark.parametrize("fusion", [True, False])
def test_divmod_and_integer_overflow_eager(device_backend: str, fusion: bool) -> None:
    def body(xp: Any, events: _Events) -> Any:
        q, r = xp.divmod(_dev(xp, [-2**31, 3, 4], numpy.int32), _dev(xp, [-1, 0, 3], numpy.int32))
        f = xp.divmod(_dev(xp, [3.0, 0.0, 5.0]), _dev(xp, [0.0, 0.0, 2.0]))
        return q, r, f[0], f[1]
    check(body, device_backend, fusion=fusion)


CHAINS = {
    # an error in the middle of a chain, carried to the result
    "overflow_then_invalid": lambda xp, x: (x * 1e308) * 0.0 + 1.0,
    # an inf that vanishes before the result: 1 / inf is 0, exp(-inf) is 0
    "absorbed_denominator": lambda xp, x: 1.0 / (x * 1e308) + 2.0,
    "absorbed_by_exp": lambda xp, x: xp.exp(-(x * 1e308)) * 3.0,
    "absorbed_by_comparison": lambda xp, x: (x / (x - x)) > 0,
    "absorbed_by_maximum": lambda xp, x: xp.maximum(xp.log(x - 1.0), 0.0),
    "e8": lambda xp, x: ((x * x + x) * x - x) / (x + 1.5) + xp.sqrt(xp.abs(x)) * 0.5 - xp.exp(-x),
    "two_errors_one_line": lambda xp, x: xp.sqrt(x - 3.0) + xp.log(x - 1.0),
    "reused_value": lambda xp, x: (lambda y: y * y + y)(x / (x - 1.0)),
}


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("mode", ["warn", "raise", "call"])
def test_fused_chains(npgpu_backend: str, chain: str, mode: str) -> None:
    def body(xp: Any, events: _Events) -> Any:
        x = _dev(xp, [1.0, 2.0, -3.0, 1000.0, 0.0])
        with xp.errstate(all=mode, under="ignore", call=events.call):
            return CHAINS[chain](xp, x)
    check(body, npgpu_backend)


NO_ERRORS = {
    "nan_plus_one": lambda xp, x: x + 1.0,
    "inf_times_two": lambda xp, x: x * 2.0,
    "nonfinite_over_zero": lambda xp, x: x[:3] / 0.0,
    "comparisons": lambda xp, x: (x < 1.0) | (x == x) | (x >= 2.0),
    "maximum": lambda xp, x: xp.maximum(x, 1.0) + xp.fmin(x, 0.0),
    "isnan": lambda xp, x: xp.isnan(x) & xp.isfinite(x),
    "chain": lambda xp, x: xp.sqrt(xp.abs(x)) * 2.0 - xp.exp(-xp.abs(x)),
    "sum": lambda xp, x: xp.sum(x),
}


@pytest.mark.parametrize("case", sorted(NO_ERRORS))
def test_nonfinite_inputs_do_not_warn(npgpu_backend: str, case: str) -> None:
    def body(xp: Any, events: _Events) -> Any:
        x = _dev(xp, [numpy.nan, numpy.inf, -numpy.inf, 1.0, -2.0])
        with xp.errstate(all="call", under="ignore", call=events.call):
            return NO_ERRORS[case](xp, x)
    check(body, npgpu_backend)


def test_state_is_the_recording_one(npgpu_backend: str) -> None:
    """Recorded inside an errstate, computed outside it: the call's own state applies."""
    def body(xp: Any, events: _Events) -> Any:
        x, z = _dev(xp, [1.0, 0.0]), _dev(xp, [0.0, 0.0])
        with xp.errstate(divide="ignore"):
            quiet = x / z  # invalid (0/0) still warns
        loud = x / z + 1.0
        with xp.errstate(all="ignore"):
            both = quiet + loud  # (materialized here: the earlier calls keep their states)
        return both
    check(body, npgpu_backend)


def test_raise_inside_the_block(npgpu_backend: str) -> None:
    """NumPy's pattern: try the division under divide='raise', handle FloatingPointError there."""
    def body(xp: Any, events: _Events) -> Any:
        x, z = _dev(xp, [1.0, 2.0]), _dev(xp, [0.0, 1.0])
        try:
            with xp.errstate(divide="raise"):
                y = x / z
            handled = "no"
        except FloatingPointError as exc:
            handled = str(exc)
            y = x
        return y, handled
    check(body, npgpu_backend)


def test_seterr_and_seterrcall(npgpu_backend: str) -> None:
    def body(xp: Any, events: _Events) -> Any:
        old = xp.seterr(over="call", invalid="raise", divide="ignore")
        previous = xp.seterrcall(events.call)
        try:
            y = _dev(xp, [1e308, 1.0]) * 10.0 + _dev(xp, [1.0, 2.0]) / _dev(xp, [0.0, 1.0])
            y = _host(y)
            xp.sqrt(_dev(xp, [-1.0]))
        finally:
            xp.seterrcall(previous)
            xp.seterr(**old)
        return y
    check(body, npgpu_backend)


def test_call_without_function_and_log_without_writer(npgpu_backend: str) -> None:
    for mode in ("call", "log"):
        def body(xp: Any, events: _Events, mode: str = mode) -> Any:
            with xp.errstate(divide=mode, call=None):
                return _dev(xp, [1.0]) / _dev(xp, [0.0])
        check(body, npgpu_backend)


def test_print_mode(npgpu_backend: str, capfd: pytest.CaptureFixture[str]) -> None:
    def body(xp: Any) -> Any:
        with xp.errstate(all="print"):
            return _host(_dev(xp, [1.0, 0.0]) / _dev(xp, [0.0, 0.0]))
    body(numpy)
    expected = capfd.readouterr()
    with backend_context(npgpu_backend):
        body(npgpu)
    actual = capfd.readouterr()
    assert expected.err and actual.err == expected.err


REDUCTIONS = {
    "sum_overflow": lambda xp, x: xp.sum(x * 1e307),
    "sum_of_array": lambda xp, x: xp.sum(xp.asarray(numpy.array([1e308, 1e308, 1.0]))),
    "sum_inf_minus_inf": lambda xp, x: xp.sum(xp.asarray(numpy.array([numpy.inf, -numpy.inf, 1.0]))),
    "sum_of_inf_is_quiet": lambda xp, x: xp.sum(xp.asarray(numpy.array([numpy.inf, 1.0, 2.0]))),
    "prod_overflow": lambda xp, x: xp.prod(x * 1e100),
    "mean_overflow": lambda xp, x: xp.mean(x * 1e307),
    "axis_sum": lambda xp, x: xp.sum((x * 1e307).reshape(2, 3), axis=1),
    "map_error_in_sum": lambda xp, x: xp.sum(xp.sqrt(x - 5.0)),
    "large_sum_overflow": lambda xp, x: xp.sum(xp.asarray(numpy.full(50_000, 1e305))),
}


@pytest.mark.parametrize("case", sorted(REDUCTIONS))
@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
def test_reductions(npgpu_backend: str, case: str, mode: str) -> None:
    def body(xp: Any, events: _Events) -> Any:
        x = _dev(xp, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        with xp.errstate(all=mode, under="ignore"):
            return REDUCTIONS[case](xp, x)
    check(body, npgpu_backend)


def test_narrowing_store_names_the_ufunc(npgpu_backend: str) -> None:
    """``a += big`` with float32 ``a``: NumPy's 'overflow encountered in add'."""
    def body(xp: Any, events: _Events) -> Any:
        a = _dev(xp, [1.0, 2.0], numpy.float32)
        a += _dev(xp, [1e300, 1.0])
        return a
    check(body, npgpu_backend)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", ["computed", "pending", "broadcast"])
def test_narrowing_writes_report_the_cast(npgpu_backend: str, value: str, mode: str) -> None:
    """``f32[basic key] = f64 values`` beyond float32's range: NumPy's 'overflow encountered in
    cast' (or its raise, call, log), the values written all the same."""
    def body(xp: Any, events: _Events) -> Any:
        a = _dev(xp, numpy.zeros((2, 3)), numpy.float32)
        big = _dev(xp, [1e300, 2.0, -1e300])
        handler = events if mode == "log" else (events.call if mode == "call" else None)
        with xp.errstate(all=mode, under="ignore", call=handler):
            try:
                if value == "computed":
                    a[0] = big
                elif value == "pending":
                    a[1, :] = xp.negative(xp.negative(big))
                else:
                    a[:, 1:] = big[1:]
            except FloatingPointError as exc:
                return str(exc), a
        return a
    check(body, npgpu_backend)


def _int_target(xp: Any, dtype: Any) -> Any:
    return xp.zeros(3, dtype)


def _written(write: Any) -> Any:
    """``write(xp, target)`` into three int32 zeros; the target (its download: where a deferred
    warning arrives)."""
    def case(xp: Any) -> Any:
        target = _int_target(xp, numpy.int32)
        write(xp, target)
        return target
    return case


#: Conversions of floats NumPy makes as it casts: NaN, an infinity or a value outside the integer
#: the host's C converts through warns "invalid value encountered in cast" (or names the ufunc or
#: the reduce that converted); a float64 beyond float32's range "overflow encountered in cast".
CAST_CASES = {
    "astype_nan": lambda xp: _dev(xp, [numpy.nan, 1.0, 2.0]).astype(numpy.int64),
    "astype_inf_uint8": lambda xp: _dev(xp, [1.0, -numpy.inf, 2.0]).astype(numpy.uint8),
    "astype_int8_wraps_silently": lambda xp: _dev(xp, [300.0, -300.0, 1.0]).astype(numpy.int8),
    "astype_int8_beyond_int32": lambda xp: _dev(xp, [3e9, 1.0, 2.0]).astype(numpy.int8),
    "astype_uint64_beyond": lambda xp: _dev(xp, [2.0**64, 2.0**63, -1.0]).astype(numpy.uint64),
    "astype_float32_overflow": lambda xp: _dev(xp, [1e300, 1.0, 2.0]).astype(numpy.float32),
    "astype_float32_source": lambda xp: _dev(xp, [3e9, 1.0, numpy.nan], numpy.float32).astype(numpy.int32),
    "astype_order_f": lambda xp: _dev(xp, [[numpy.nan, 1.0], [2.0, 3.0]]).astype(numpy.int32, order="F"),
    "asarray_dtype": lambda xp: xp.asarray(_dev(xp, [numpy.nan, 1.0, 2.0]), dtype=numpy.int32),
    "array_dtype": lambda xp: xp.array(_dev(xp, [numpy.inf, 1.0, 2.0]), dtype=numpy.int16),
    "copyto": _written(lambda xp, t: xp.copyto(t, _dev(xp, [1.0, numpy.nan, 2.0]), casting="unsafe")),
    "copyto_where": _written(lambda xp, t: xp.copyto(t, _dev(xp, [1.0, numpy.nan, 2.0]), casting="unsafe",
                                                     where=_dev(xp, [True, False, True], bool))),
    "setitem": _written(lambda xp, t: t.__setitem__(slice(None), _dev(xp, [1.0, numpy.nan, 2.0]))),
    "ufunc_dtype": lambda xp: xp.add(_dev(xp, [1.0, numpy.nan, 2.0]), 1.0, dtype=numpy.int32, casting="unsafe"),
    "ufunc_out": lambda xp: xp.add(_dev(xp, [1.0, numpy.nan, 2.0]), 1.0, out=_int_target(xp, numpy.int32),
                                   casting="unsafe"),
    "unary_out": lambda xp: xp.sqrt(_dev(xp, [4.0, -1.0, 9.0]), out=_int_target(xp, numpy.int64), casting="unsafe"),
    "sum_dtype": lambda xp: xp.sum(_dev(xp, [1.0, numpy.inf, 2.0]), dtype=numpy.int32),
    "mean_dtype": lambda xp: xp.mean(_dev(xp, [1.0, numpy.nan, 2.0]), dtype=numpy.int64),
    "cumsum_dtype": lambda xp: xp.cumsum(_dev(xp, [1.0, numpy.nan, 2.0]), dtype=numpy.int64),
    "nansum_dtype_nan": lambda xp: xp.nansum(_dev(xp, [1.0, numpy.nan, 2.0]), dtype=numpy.int64),
    "nansum_dtype_inf": lambda xp: xp.nansum(_dev(xp, [1.0, numpy.nan, numpy.inf]), dtype=numpy.int64),
    "nanprod_dtype_inf": lambda xp: xp.nanprod(_dev(xp, [1.0, numpy.nan, -numpy.inf]), dtype=numpy.int32),
    "fused_then_cast": lambda xp: (_dev(xp, [1.0, 2.0, 3.0]) / 0.0).astype(numpy.int32),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CAST_CASES))
def test_casts_report_as_numpy(npgpu_backend: str, case: str, mode: str) -> None:
    check(_in_state(CAST_CASES[case], mode), npgpu_backend)


@pytest.mark.parametrize("mode", ["call", "raise"])
def test_a_write_that_does_not_broadcast_reports_no_cast(npgpu_backend: str, mode: str) -> None:
    """NumPy checks the value's shape against the selection before it converts: a NaN that would
    be invalid in the int32 memory raises only NumPy's ValueError (the emulated backend converted
    first; found by tools/fuzz_programs.py --errors)."""
    def body(xp: Any, events: _Events) -> Any:
        a = _dev(xp, numpy.zeros((4, 1)), numpy.uint32)
        with xp.errstate(all=mode, under="ignore", call=events.call):
            try:
                a[_dev(xp, [-3, 1], numpy.intp)] = _dev(xp, [numpy.nan, 2.0])
            except ValueError as exc:
                return str(exc), a
        return a
    check(body, npgpu_backend)


def test_a_number_written_by_an_index_array_reports_its_overflow_once(npgpu_backend: str) -> None:
    """``f16[[i]] = 1e10``: one "overflow encountered in cast" (the emulated backend converted the
    number twice, once to find NumPy's errors and once to write it)."""
    def body(xp: Any, events: _Events) -> Any:
        a = _dev(xp, [0.5, 1.5, 2.5], numpy.float16)
        with xp.errstate(all="call", under="ignore", call=events.call):
            a[_dev(xp, [-3], numpy.intp)] = 1e10
        return a
    check(body, npgpu_backend)


MOMENT_VALUES = {
    "inf": ([numpy.inf, 1.0, 2.0], {}),
    "both_infs": ([-numpy.inf, numpy.inf, 1.0], {}),
    "square_overflows": ([1e200, -1e200, 1.0], {}),
    "rows": ([[numpy.inf, 1.0, 2.0], [1.0, 2.0, 3.0]], {"axis": 1}),
    "columns_keepdims": ([[1e300, 1.0], [-1e300, 2.0]], {"axis": 0, "keepdims": True, "ddof": 1}),
    "nan_and_inf": ([numpy.nan, numpy.inf, 1.0], {}),
    "float32": (numpy.array([3e38, -3e38, 1.0], numpy.float32), {}),
}


@pytest.mark.parametrize("mode", ["call", "raise", "warn"])
@pytest.mark.parametrize("func", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("case", sorted(MOMENT_VALUES))
def test_variances_report_as_numpy(npgpu_backend: str, func: str, case: str, mode: str) -> None:
    """var and std report each step's errors as NumPy's do: the mean's sum (reduce), the
    deviations (subtract), their squares (square; nanvar's multiply), their sum (reduce)."""
    values, kwargs = MOMENT_VALUES[case]

    def body(xp: Any, events: _Events) -> Any:
        x = xp.asarray(numpy.asarray(values, getattr(values, "dtype", float)))
        with xp.errstate(all=mode, under="ignore", call=events.call):
            return getattr(xp, func)(x, **kwargs)
    check(body, npgpu_backend)


ACCUMULATIONS = {
    "cumsum_infs": lambda xp: xp.cumsum(_dev(xp, [1.0, -numpy.inf, numpy.inf, 2.0])),
    "cumsum_overflow": lambda xp: xp.cumsum(_dev(xp, [1e308, 1e308, 1.0])),
    "cumsum_nan_first": lambda xp: xp.cumsum(_dev(xp, [numpy.nan, numpy.inf, -numpy.inf])),
    "cumprod_zero_inf": lambda xp: xp.cumprod(_dev(xp, [[0.0, numpy.inf], [2.0, 3.0]]), axis=1),
    "cumprod_overflow_rows": lambda xp: xp.cumprod(_dev(xp, [[1e200, 1e200], [1.0, 2.0]]), axis=0),
    "cumprod_flat": lambda xp: xp.cumprod(_dev(xp, [[1e200, 1.0], [1e200, 2.0]])),
    "cumsum_float32": lambda xp: xp.cumsum(_dev(xp, [3e38, 3e38], numpy.float32)),
    "cumsum_dtype": lambda xp: xp.cumsum(_dev(xp, [3e38, 3e38], numpy.float32), dtype=numpy.float64),
    "nancumsum": lambda xp: xp.nancumsum(_dev(xp, [numpy.nan, numpy.inf, -numpy.inf])),
    "nancumprod": lambda xp: xp.nancumprod(_dev(xp, [numpy.nan, 1e300, 1e300])),
    "accumulate_method": lambda xp: xp.add.accumulate(_dev(xp, [numpy.inf, -numpy.inf, 1.0])),
    "integers": lambda xp: xp.cumsum(_dev(xp, [2**62, 2**62], numpy.int64)),
}


@pytest.mark.parametrize("mode", ["call", "raise", "warn"])
@pytest.mark.parametrize("case", sorted(ACCUMULATIONS))
def test_accumulations_report_as_numpy(npgpu_backend: str, case: str, mode: str) -> None:
    """cumsum and cumprod report NumPy's "... encountered in accumulate" (its sequential loop's
    steps: an infinity of finite operands, a NaN of non-NaN ones)."""
    check(_in_state(ACCUMULATIONS[case], mode), npgpu_backend)


CAST_VALUES = (0.5, -0.5, -1.0, 127.5, 300.0, -300.0, 65535.0, 70000.0, -70000.0, 2.0**31, -2.0**31 - 4096,
               3e9, -3e9, 2.0**32, 2.0**63, -2.0**63, 2.0**64, -1e19, 1e20, 65504.0, numpy.inf, -numpy.inf,
               numpy.nan)


def _cast_categories(xp: Any, a: Any, dtype: Any) -> list[str]:
    """The categories ``a.astype(dtype)`` raises, result downloaded (under all='call')."""
    got: list[str] = []
    with xp.errstate(all="call", under="ignore", call=lambda kind, flag: got.append(kind)):
        _host(a.astype(dtype))
    return got


@pytest.mark.parametrize("src", [numpy.float16, numpy.float32, numpy.float64])
def test_cast_conditions_match_numpy(device_backend: str, src: Any) -> None:
    """Each float -> integer conversion's "invalid value" (kernels/ufuncs.cast_error_table) where
    NumPy's cast reports it, value by value, into every integer dtype."""
    with numpy.errstate(all="ignore"):
        values = sorted({v.item() for v in numpy.array(CAST_VALUES).astype(src)}, key=repr)
    mismatches = []
    with backend_context(device_backend, fusion=False):
        for dst in numpy.typecodes["AllInteger"]:
            for value in values:
                host = numpy.array([value], src)
                want = _cast_categories(numpy, host, dst)
                got = _cast_categories(npgpu, npgpu.asarray(host), dst)
                if got != want:
                    mismatches.append((numpy.dtype(dst).name, value, want, got))
    assert not mismatches


def test_warning_names_the_users_line(device_backend: str) -> None:
    def body(xp: Any, events: _Events) -> Any:
        y = _dev(xp, [1.0]) / _dev(xp, [0.0])
        return xp.sqrt(y - numpy.inf)
    check(body, device_backend, locations=True)


def test_warnings_wait_for_a_synchronization_point(device_backend: str) -> None:
    """Deferred warnings: none at the recording or the launch, all at the next download."""
    from npgpu.lazy import materialize as lazy

    with backend_context(device_backend), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = _dev(npgpu, [1.0, 0.0]) / _dev(npgpu, [0.0, 0.0])
        lazy.materialize(y)  # the kernel ran
        launched = [str(w.message) for w in caught]
        npgpu.asnumpy(npgpu.ones(3))  # another array's download: a sync point too
        first = [str(w.message) for w in caught]
        z = _dev(npgpu, [-1.0]) ** 0.5
        npgpu.sync()
        second = [str(w.message) for w in caught]
        del y, z
    assert launched == []
    assert first == ["divide by zero encountered in divide", "invalid value encountered in divide"]
    assert second == first + ["invalid value encountered in sqrt"]


def test_warnings_as_errors_reach_the_user(device_backend: str) -> None:
    with backend_context(device_backend), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = _dev(npgpu, [1.0]) / _dev(npgpu, [0.0])
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
            npgpu.asnumpy(y)
        npgpu.asnumpy(y)  # reported once


def test_ignored_categories_are_not_checked(device_backend: str) -> None:
    """Under all='ignore' fused graphs carry no checks (the kernel is the unchecked one)."""
    from npgpu.lazy import materialize as lazy

    with backend_context(device_backend):
        x = _dev(npgpu, [1.0, 2.0])
        with npgpu.errstate(all="ignore"):
            quiet = npgpu.log(x) / x
        loud = npgpu.log(x) / x
        graphs = []
        for array in (quiet, loud):
            state = lazy._GraphState()
            graphs.append(state.graph(array, array.dtype))
            npgpu.asnumpy(array)
    assert graphs[0].error_nodes == ()
    assert [n.ufunc.__name__ for n in graphs[1].error_nodes] == ["log", "divide"]


# -- every error condition of the ufunc table against NumPy, element by element --------------

SPECIAL = (0.0, -0.0, 1.0, -1.0, 2.5, 1e-310, 1e300, numpy.inf, -numpy.inf, numpy.nan)
SPECIAL32 = (0.0, -0.0, 1.0, -1.0, 2.5, 1e-40, 3e38, numpy.inf, -numpy.inf, numpy.nan)
EXPONENTS = (0, 1, -1, 3, 200, -200, 2000, -2000, 2**40, -(2**40))


def _table_cases() -> list[Any]:
    cases = []
    for name, facts in table.UFUNCS.items():
        uf = getattr(numpy, name)
        # (every float ufunc: one whose table lacks NumPy's errors is checked too, logaddexp's NaN)
        if not isinstance(uf, numpy.ufunc) or "f" not in "".join(facts.expressions) or uf is numpy.true_divide \
                and name == "true_divide":
            continue
        for dtype in (numpy.float64, numpy.float32):
            if dtype is numpy.float32 and (uf.nin > 1 and uf is not numpy.ldexp or uf is numpy.float_power):
                continue  # (float32: the unary ones, where C's float functions differ from double's)
            cases.append(pytest.param(uf, numpy.dtype(dtype), id=f"{name}-{numpy.dtype(dtype).name}"))
    return cases


def _categories(xp: Any, uf: numpy.ufunc, operands: list[Any]) -> list[str]:
    """The categories ``uf(*operands)`` raises, result downloaded (under all='call')."""
    got: list[str] = []
    with xp.errstate(all="call", under="ignore", call=lambda kind, flag: got.append(kind)):
        result = uf(*operands)
        _host(result)
    return sorted(set(got))


@pytest.mark.parametrize(("uf", "dtype"), _table_cases())
def test_table_conditions_match_numpy(device_backend: str, uf: numpy.ufunc, dtype: numpy.dtype) -> None:
    values = SPECIAL if dtype == numpy.float64 else SPECIAL32
    known = {(numpy.power, (1e300, numpy.inf)), (numpy.power, (-1e300, numpy.inf))}  # (libm's pow: README)
    mismatches = []
    with backend_context(device_backend, fusion=False):
        # (ldexp's exponent is an integer: NumPy's int64 loop, with exponents beyond int's range)
        operands = [(values, dtype)] + ([(EXPONENTS, numpy.dtype(numpy.int64))] if uf is numpy.ldexp
                                        else [(values, dtype)] * (uf.nin - 1))
        for args in itertools.product(*(v for v, _ in operands)):
            if (uf, args) in known:
                continue
            hosts = [numpy.array([a], dt) for a, (_, dt) in zip(args, operands, strict=True)]
            want = _categories(numpy, uf, hosts)
            got = _categories(npgpu, uf, [npgpu.asarray(h) for h in hosts])
            if got != want:
                mismatches.append((args, want, got))
    assert not mismatches


# -- the kernels ---------------------------------------------------------------------------

def test_kernel_tests_finiteness_once_per_surviving_value() -> None:
    """E8's checked kernel tests the output and the one value whose inf could vanish (the
    denominator); each operation's own condition runs only where one of those fails."""
    f8 = numpy.dtype(numpy.float64)
    b = ir.GraphBuilder()
    a, c = b.input(f8), b.input(f8)
    every = table.DIVIDE | table.OVER | table.INVALID

    def ap(uf: numpy.ufunc, *ops: Any) -> Any:
        loop = (f8,) * (uf.nin + 1)
        return b.apply(uf, loop, *ops, check=every & table.error_categories(uf, loop))[0]

    half, shift = b.scalar(f8), b.scalar(f8)
    numerator = ap(numpy.subtract, ap(numpy.multiply, ap(numpy.add, ap(numpy.multiply, a, c), c), a), c)
    quotient = ap(numpy.divide, numerator, ap(numpy.add, c, shift))
    e8 = ap(numpy.subtract, ap(numpy.add, quotient, ap(numpy.multiply, ap(numpy.sqrt, ap(numpy.absolute, a)), half)),
            ap(numpy.exp, ap(numpy.negative, c)))
    graph = b.build([e8])
    source = codegen.elementwise(graph, codegen.Layout(1, True)).source
    test = next(line for line in source.splitlines() if "isfinite" in line and line.strip().startswith("if (("))
    assert test.count("!isfinite") == 2
    assert len(graph.error_nodes) == 11
    assert source.count("npg_err[npg_err_off") == 2 * sum(bin(n.check).count("1") for n in graph.error_nodes)


def test_flags_are_read_once_per_synchronization(device_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Default state: launches don't read their flags; the next download reads them all at once."""
    from npgpu.lazy import materialize as lazy

    reads = []
    with backend_context(device_backend):
        backend = npgpu.asarray(numpy.ones(2))._backend
        for name in ("read_errors", "read_errors_later"):
            original = getattr(backend, name)
            monkeypatch.setattr(backend, name, lambda *a, original=original: reads.append(1) or original(*a))
        x = _dev(npgpu, [1.0, 2.0])
        for _ in range(5):
            x = npgpu.sqrt(x * 2.0) + 1.0
            lazy.materialize(x)
        assert reads == []
        npgpu.asnumpy(x)
    assert reads == [1]


@pytest.mark.gpu
@pytest.mark.parametrize("fusion", [True, False])
def test_cupy_kernels_report_errors(fusion: bool) -> None:
    """(GPU) Each CUDA kernel that carries error flags, in one place: the contiguous RawKernel, the
    strided ElementwiseKernel, the fused ReductionKernel, CuPy's ufuncs plus the check kernel."""
    from npgpu.backends import unavailable_reason

    reason = unavailable_reason("cupy")
    if reason is not None:
        pytest.skip(reason)

    def body(xp: Any, events: _Events) -> Any:
        x = _dev(xp, [1.0, 0.0, -1.0, 1e308, numpy.nan, numpy.inf])
        grid = xp.asarray(numpy.linspace(-2.0, 2.0, 24).reshape(4, 6))
        with xp.errstate(all="call", under="ignore", call=events.call):
            contiguous = xp.sqrt(x) / x * 10.0
            strided = xp.log(grid[:, ::2]) * 1e308
            total = xp.sum(x[:4] * 1e308)
            integers = _dev(xp, [7, -2**31, 3], numpy.int32) // _dev(xp, [0, -1, 2], numpy.int32)
            single = xp.float32(3e38) * _dev(xp, [10.0, 1.0], numpy.float32)
        return contiguous, strided, total, integers, single
    check(body, "cupy", fusion=fusion)


def test_reading_after_every_launch_gives_the_same_warnings(device_backend: str) -> None:
    with _fperr.read_after_each_launch():
        check(lambda xp, events: CHAINS["overflow_then_invalid"](xp, _dev(xp, [1.0, 2.0])), device_backend)


def test_c_recorder_takes_only_a_state_it_has_seen() -> None:
    """The C recorder records with the errstate last learned by the Python one, if it needs no
    immediate answer; any other state goes to the Python recorder (which learns it)."""
    from npgpu import _dispatch, _native

    speedups = _native.speedups
    if speedups is None:
        pytest.skip("the C extension is not built or is turned off")
    with backend_context("emulated"):
        x = _dev(npgpu, [1.0, 2.0])
        npgpu.multiply(x, 2.0)  # (the loop cache learns multiply(float64, float))
        assert speedups.record_binary(numpy.multiply, x, 2.0, False, None, _dispatch._LOOPS)._pending.errstate \
            is _fperr.current()
        with numpy.errstate(divide="ignore"):
            first = speedups.record_binary(numpy.multiply, x, 2.0, False, None, _dispatch._LOOPS)
            npgpu.multiply(x, 3.0)  # the Python recorder learns this state
            second = speedups.record_binary(numpy.multiply, x, 2.0, False, None, _dispatch._LOOPS)
            assert first is None
            assert second._pending.errstate is _fperr.current()
            assert second._pending.errstate.modes[table.DIVIDE] == "ignore"
        with numpy.errstate(invalid="raise"):
            npgpu.multiply(x, 3.0)
            assert speedups.record_binary(numpy.multiply, x, 2.0, False, None, _dispatch._LOOPS) is None


def test_errstate_is_per_thread(device_backend: str) -> None:
    import threading

    outcome: dict[str, Any] = {}

    def worker() -> None:
        with backend_context(device_backend):
            try:
                with npgpu.errstate(divide="raise"):
                    npgpu.asnumpy(_dev(npgpu, [1.0]) / _dev(npgpu, [0.0]))
                outcome["thread"] = "no error"
            except FloatingPointError as exc:
                outcome["thread"] = str(exc)

    with backend_context(device_backend), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with npgpu.errstate(divide="ignore"):
            quiet = _dev(npgpu, [1.0]) / _dev(npgpu, [0.0])
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
        npgpu.asnumpy(quiet)
    assert outcome["thread"] == "divide by zero encountered in divide"
    assert caught == []


BIG = {
    # contiguous float64: OpenCL's vector kernels, chunks checked again where they saw inf/NaN
    "vector_chain": lambda xp, x, y: xp.sqrt(x) / (y - 1.0) + xp.exp(x * 0.001),
    "vector_no_error": lambda xp, x, y: x * 2.0 + y,
    # strided and mixed dtypes: the scalar chunked kernels
    "strided": lambda xp, x, y: xp.log(x[::3]) * y[::3],
    "mixed_dtypes": lambda xp, x, y: x.astype(numpy.float32) / (y - 1.0),
    # the output overwrites an input: checked element by element
    "in_place": lambda xp, x, y: (lambda z: (z.__imul__(1e306), z)[1])(x + y),
    "sum": lambda xp, x, y: xp.sum(xp.log(x) * y),
    "max": lambda xp, x, y: xp.max(xp.sqrt(x - 1.0)),
}


@pytest.mark.parametrize("case", sorted(BIG))
@pytest.mark.parametrize("special", ["none", "nan_inf", "zero"])
def test_many_chunks(npgpu_backend: str, case: str, special: str) -> None:
    """Arrays of many chunks, with NaN and inf among the values (which warn nothing) and zeros
    (which make errors) here and there: the warnings are NumPy's."""
    def body(xp: Any, events: _Events) -> Any:
        rng = numpy.random.default_rng(7)
        x, y = rng.uniform(0.5, 600.0, 100_003), rng.uniform(0.5, 2.0, 100_003)
        if special == "nan_inf":
            x[[5, 50_000, 99_999]] = [numpy.nan, numpy.inf, -numpy.inf]
        if special == "zero":
            x[[17, 70_001]] = 0.0
            y[[3, 60_000]] = 1.0
        with xp.errstate(all="call", under="ignore", call=events.call):
            return BIG[case](xp, xp.asarray(x), xp.asarray(y))
    check(body, npgpu_backend)


def test_a_full_flag_buffer_is_read_early(device_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """More launches between synchronizations than the flag buffer holds: it is read when full,
    and every warning still comes, in order."""
    from npgpu.lazy import materialize as lazy

    monkeypatch.setattr(_fperr, "BUFFER_BYTES", 3 * _fperr.SLOT_BYTES)
    with backend_context(device_backend), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = _dev(npgpu, [4.0, 0.0])
        for divisor in (1.0, 0.0, 2.0, 0.0, 0.0):
            y = npgpu.sqrt(x) / divisor  # (two checked operations per launch)
            lazy.materialize(y)
        npgpu.sync()
    assert [str(w.message) for w in caught] == ["divide by zero encountered in divide",
                                                "invalid value encountered in divide"] * 3


@pytest.mark.gpu
@pytest.mark.parametrize("mapped", [True, False], ids=["host_memory", "device_buffer"])
def test_cupy_flags_in_host_memory_or_a_device_buffer_report_as_numpy(mapped: bool, monkeypatch: Any) -> None:
    """CuPy's kernels write their flag bytes into page-locked host memory where the device has
    unified addressing, else into a device buffer copied back: both report NumPy's warnings and
    errors, read at downloads, at sync() and when the buffer fills. (Run in a fresh thread: each
    thread has its own flag buffer, made at its first launch.)"""
    pytest.importorskip("cupy")
    from npgpu.backends import get_backend

    backend = get_backend("cupy")
    if mapped and not backend.map_flags:
        pytest.skip("this device has no unified addressing")
    monkeypatch.setattr(backend, "map_flags", mapped)
    monkeypatch.setattr(_fperr, "BUFFER_BYTES", 64)  # (a few launches fill it: deliveries in reserve)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            for case, mode in itertools.product(sorted(REDUCTIONS), ["warn", "raise"]):
                def body(xp: Any, events: _Events, case: str = case, mode: str = mode) -> Any:
                    x = _dev(xp, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
                    with xp.errstate(all=mode, under="ignore"):
                        return REDUCTIONS[case](xp, x)
                check(body, "cupy")

            def chain(xp: Any, events: _Events) -> Any:
                x = _dev(xp, [1.0, 2.0])
                out = [xp.sqrt(x - 3.0) + 1.0 for _ in range(20)]  # (more launches than the buffer holds)
                return [float(o.sum()) for o in out], CHAINS["overflow_then_invalid"](xp, x)
            check(chain, "cupy")
        except BaseException as exc:  # (reported in the test's thread)
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if failures:
        raise failures[0]


def test_a_first_float_to_integer_cast_under_raise_converts_finite_values(npgpu_backend: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The code generator probes the host NumPy's out-of-range conversions once, at its first float
    -> integer cast: under the caller's errstate(all='raise') the probe's own NaN raised
    FloatingPointError though the caller's values all fit (found by tools/numpy_suite.py)."""
    from npgpu.kernels import ufuncs
    monkeypatch.setattr(ufuncs, "_x86_casts", [])
    def body(xp: Any, events: _Events) -> Any:
        with xp.errstate(all="raise"):
            return _dev(xp, [1.5, -2.5, 100.0]).astype(numpy.int8)
    check(body, npgpu_backend)
