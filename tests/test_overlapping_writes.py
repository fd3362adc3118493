"""Writes whose value is memory of the array written, in random shapes: NumPy's values on the device.

NumPy takes no copy of the value in some of these (one-dimensional views whose strides point the
same way, a boolean mask's write of a 1-D value, ``place``), so an element read after its memory
was written reads the new value; in the others it copies first. Each case runs as NumPy and as
npgpu and the whole array is compared afterwards.
"""

from __future__ import annotations

import os

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npgpu
from npgpu._harness import backend_context

N = 12
EXAMPLES = int(os.environ.get("NPGPU_BAD_INPUT_EXAMPLES", "150"))

bounds = st.one_of(st.none(), st.integers(-N - 2, N + 2))
slices = st.builds(slice, bounds, bounds, st.sampled_from([None, 1, 2, 3, -1, -2, -3]))
dtypes = st.sampled_from(["float64", "int32", "uint8"])


@st.composite
def writes(draw: st.DrawFn) -> tuple[str, str, tuple[object, ...]]:
    """(form, dtype, its arguments): a view written from a view, copyto, a mask write, place."""
    form = draw(st.sampled_from(["setitem", "copyto", "mask", "place"]))
    dtype = draw(dtypes)
    if form in ("setitem", "copyto"):
        return form, dtype, (draw(slices), draw(slices))
    mask = numpy.array(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
    return form, dtype, (mask, draw(slices))


def _run(xp: object, form: str, dtype: str, parts: tuple[object, ...]) -> object:
    a = xp.asarray((numpy.arange(N) * 3.3 - 17).astype(dtype))  # type: ignore[attr-defined]
    try:
        if form == "setitem":
            a[parts[0]] = a[parts[1]]
        elif form == "copyto":
            xp.copyto(a[parts[0]], a[parts[1]])  # type: ignore[attr-defined]
        elif form == "mask":
            mask = xp.asarray(parts[0])  # type: ignore[attr-defined]
            a[mask] = a[parts[1]][: int(parts[0].sum())]  # type: ignore[union-attr]
        else:
            xp.place(a, xp.asarray(parts[0]), a[parts[1]])  # type: ignore[attr-defined]
    except (ValueError, IndexError) as exc:
        return type(exc).__name__
    return numpy.asarray(a).copy()


@pytest.mark.parametrize("backend", ["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=writes())
def test_writes_from_the_array_itself_are_numpys(backend: str, case: tuple[str, str, tuple[object, ...]]) -> None:
    from conftest import _OPENCL_REASON

    if backend == "opencl" and _OPENCL_REASON is not None:
        pytest.skip(_OPENCL_REASON)
    want = _run(numpy, *case)
    with backend_context(backend):
        got = _run(npgpu, *case)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        numpy.testing.assert_array_equal(got, want, strict=True)
