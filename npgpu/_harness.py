"""npgpu's differential test harness (private: the project's tests import it).

The differential helpers run one test body taking ``xp`` as NumPy and as npgpu and compare the type
of result (a device backend must return device arrays), dtype, shape, values (integers and bools
exactly, floats within per-dtype tolerances, NaN where NumPy has NaN) and exception types.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy

import npgpu
from npgpu._array import DeviceArray

#: Relative tolerance per float kind and size (a few ulp of accumulated rounding).
RTOL = {2: 2e-3, 4: 2e-5, 8: 1e-12, 16: 1e-12}

#: Backends a differential test can run under: "off" is npgpu with acceleration off.
ALL_BACKENDS = ("off", "numpy", "emulated", "opencl", "cupy")


def backend_context(backend: str, **options: Any) -> contextlib.AbstractContextManager[Any]:
    """The state a differential run of ``backend`` uses: device placement from the first byte."""
    if backend == "off":
        return npgpu.disable()
    options.setdefault("threshold", 0)
    return npgpu.enable(backend, **options)


def _run(body: Callable[..., Any], xp: Any, kwargs: dict[str, Any]) -> tuple[Any, BaseException | None]:
    try:
        return body(xp, **kwargs), None
    except Exception as exc:  # the harness compares exceptions; it is not around a backend call
        return None, exc


def _rtol(dtype: numpy.dtype, rtol: float | None) -> float:
    if rtol is not None:
        return rtol
    if dtype.kind == "c":
        return RTOL[dtype.itemsize // 2]
    return RTOL.get(dtype.itemsize, 1e-12) if dtype.kind == "f" else 0.0


def assert_same(actual: Any, expected: Any, *, device: bool, rtol: float | None = None, atol: float = 0.0,
                path: str = "result") -> None:
    """Assert npgpu's ``actual`` matches NumPy's ``expected`` (type, dtype, shape, values)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, type(expected)), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, device=device, rtol=rtol, atol=atol, path=f"{path}[{i}]")
        return
    if isinstance(expected, numpy.ndarray):
        if device and expected.dtype.kind in "biufc":
            assert isinstance(actual, DeviceArray), f"{path}: expected a device array, got {type(actual).__name__}"
        else:
            assert type(actual) is numpy.ndarray, f"{path}: expected numpy.ndarray, got {type(actual).__name__}"
    elif isinstance(expected, numpy.generic):
        # where NumPy returns a scalar, npgpu returns that NumPy scalar (never a 0-d device array)
        got = type(actual).__name__
        assert type(actual) is type(expected), f"{path}: expected {type(expected).__name__}, got {got}"
    elif not isinstance(expected, (numpy.ndarray, numpy.generic)):
        if isinstance(actual, DeviceArray):
            actual = actual.__array__()[()]
        assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        if isinstance(expected, float) and numpy.isnan(expected):
            assert numpy.isnan(actual), f"{path}: {actual!r} != nan"
        else:
            assert actual == expected or _close(actual, expected, rtol, atol), f"{path}: {actual!r} != {expected!r}"
        return
    got = numpy.asarray(actual.__array__() if isinstance(actual, DeviceArray) else actual)
    want = numpy.asarray(expected)
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{path}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "fc":
        numpy.testing.assert_allclose(got, want, rtol=_rtol(want.dtype, rtol), atol=atol, equal_nan=True,
                                      err_msg=path)
    else:
        numpy.testing.assert_array_equal(got, want, err_msg=path, strict=True)


def _close(a: Any, b: Any, rtol: float | None, atol: float) -> bool:
    return bool(numpy.isclose(a, b, rtol=1e-12 if rtol is None else rtol, atol=atol))


def check(body: Callable[..., Any], backend: str, *, rtol: float | None = None, atol: float = 0.0,
          kwargs: dict[str, Any] | None = None, **options: Any) -> Any:
    """Run ``body(numpy)`` and ``body(npgpu)`` under ``backend`` and assert they agree."""
    kwargs = kwargs or {}
    expected, expected_exc = _run(body, numpy, kwargs)
    with backend_context(backend, **options):
        actual, actual_exc = _run(body, npgpu, kwargs)
        if expected_exc is None and actual_exc is None:
            device = backend not in ("off", "numpy")
            assert_same(actual, expected, device=device, rtol=rtol, atol=atol)
    if expected_exc is not None:
        assert actual_exc is not None, f"NumPy raised {type(expected_exc).__name__}: {expected_exc}; npgpu did not"
        assert isinstance(actual_exc, type(expected_exc)), (
            f"NumPy raised {type(expected_exc).__name__}({expected_exc}); npgpu raised "
            f"{type(actual_exc).__name__}({actual_exc})"
        )
    elif actual_exc is not None:
        raise actual_exc
    return actual


def differential(rtol: float | None = None, atol: float = 0.0, **options: Any) -> Callable[..., Any]:
    """Decorator: ``def test_x(xp, ...)`` becomes a test run as NumPy and as npgpu on each backend.

    The decorated test takes the fixture ``npgpu_backend`` (tests/conftest.py parametrizes it
    over the backends that can run here) plus the body's other parameters.
    """

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(body)
        others = [p for name, p in signature.parameters.items() if name != "xp"]

        @functools.wraps(body)
        def test(npgpu_backend: str, **kwargs: Any) -> None:
            check(body, npgpu_backend, rtol=rtol, atol=atol, kwargs=kwargs, **options)

        backend_param = inspect.Parameter("npgpu_backend", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        test.__signature__ = signature.replace(parameters=[backend_param, *others])  # type: ignore[attr-defined]
        del test.__wrapped__  # pytest must read the new signature, not the body's
        return test

    return decorate
