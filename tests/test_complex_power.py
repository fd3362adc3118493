"""Complex arrays raised to small integer powers: NumPy multiplies, and so must the device.

NumPy computes ``z ** n`` for complex ``z`` and an integer |n| < 100 by repeated complex
multiplication (binary exponentiation); CuPy's power goes through exp(n log z), whose error
NPBench's mandelbrot1 (``z = z**2 + c``, 200 times) amplified to a relative error of 1.7e-2.
The CuPy backend runs the same multiplications in a kernel. The first test pins down the
algorithm against NumPy itself on the host; the GPU test compares the kernel bit for bit.
"""

from __future__ import annotations

import numpy
import pytest

from npgpu._harness import differential


def _cmul(x, y):
    r = numpy.empty_like(x)  # (not re + 1j*im: 1j * inf is nan+infj)
    r.real = x.real * y.real - x.imag * y.imag
    r.imag = x.real * y.imag + x.imag * y.real
    return r


def _numpy_integer_power(z, n):
    """The multiplications the CuPy kernel makes (npgpu/backends/cupy/kernels.py), in NumPy."""
    if n == 0:
        return numpy.ones_like(z)
    m = abs(n)
    if m == 1:
        r = z.copy()
    elif m == 2:
        r = _cmul(z, z)
    elif m == 3:
        r = _cmul(z, _cmul(z, z))
    else:
        acc, p, mask = numpy.ones_like(z), z.copy(), 1
        while True:
            if m & mask:
                acc = _cmul(acc, p)
            mask <<= 1
            if m < mask:
                break
            p = _cmul(p, p)
        r = acc
    r = numpy.where(z == 0, 0, r).astype(z.dtype)
    return r if n > 0 else (1 / r).astype(z.dtype)


def _values(dtype):
    rng = numpy.random.default_rng(7)
    z = (rng.standard_normal(2000) + 1j * rng.standard_normal(2000)) * 1.5
    return z.astype(dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 13, 31, 64, 99])
def test_numpys_complex_power_is_repeated_multiplication(dtype, n):
    z = _values(dtype)
    with numpy.errstate(all="ignore"):
        expected = numpy.power(z, n)  # (not z ** n: ndarray's ** takes square for 2, see below)
        numpy.testing.assert_array_equal(_numpy_integer_power(z, n), expected)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("n", [2, 3, 5, 16, 99, -1, -2, -5, 2.0, True])
@differential()
def test_complex_integer_power_bit_for_bit(xp, dtype, n):
    z = xp.asarray(_values(dtype))
    with numpy.errstate(all="ignore"):
        result = z ** n
        b = xp.asarray(_values(dtype))
        b **= n  # (in place: the same products, stored into b)
    bits = "u8" if dtype == "complex128" else "u4"

    def exact(part):  # (the bits, a NaN's payload aside: a GPU's NaN is 0x7fffffff, x86's 0xffc00000)
        return xp.where(xp.isnan(part), numpy.nan, part).view(bits)

    return exact(result.real), exact(result.imag), exact(b.real), exact(b.imag)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("n", [100, -100, 2.5])
@differential(rtol=1e-4)
def test_complex_power_beyond_the_multiplied_exponents_is_cpow(xp, dtype, n):
    # |n| >= 100 or a non-integer exponent: NumPy calls the C library's cpow, the device its own
    # power, whose last digits differ (relative error ~1e-13 for complex128 at n = 100)
    z = _values(dtype)
    # (moduli near 1: z**100 neither overflows nor underflows, where the two libraries may disagree)
    z = xp.asarray((z / numpy.abs(z) * numpy.linspace(0.9, 1.1, z.size)).astype(dtype))
    with numpy.errstate(all="ignore"):
        return z ** n


@differential()
def test_complex_power_of_a_zero_base_is_numpys(xp):
    z = xp.asarray(numpy.array([0j, -0.0 + 0j, 1 + 1j, 2 - 0.5j]))
    with numpy.errstate(invalid="ignore"):
        return z ** 3, z ** 0, z ** -2


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int64"])
@pytest.mark.parametrize("exponent", [2, -1, 0.5, 2.0, 1, numpy.float64(0.5), True])
@differential(rtol=0.0)
def test_power_operator_takes_ndarrays_short_road(xp, dtype, exponent):
    # ndarray ** 2 is square, ** -1 reciprocal, ** 0.5 sqrt (for float and complex arrays and
    # exact Python int/float exponents): signed zeros, infinities and rounding follow those ufuncs
    values = numpy.array([-0.0, 0.0, 4.0, 2.0, -3.5, numpy.inf, -numpy.inf, 1e-300]).astype(dtype)
    a = xp.asarray(values if dtype != "int64" else numpy.arange(1, 6))
    with numpy.errstate(all="ignore"):
        b = xp.asarray(numpy.array(a))
        b **= exponent if dtype != "int64" or exponent in (2, 1, 3, True) else 1
        return (a ** exponent if dtype != "int64" or exponent in (2, 1, 3, True, 2.0, 0.5) else a), b


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int64"])
@differential(rtol=3e-7)
def test_power_operator_by_three_is_pow(xp, dtype):
    # No short road for 3: real arrays go through pow, libm-grade on devices (NVIDIA's OpenCL
    # float32 pow gives (-3.5)**3 = -42.875004, one ulp from NumPy's); complex and integer arrays
    # multiply, exactly as NumPy does (tests above)
    values = numpy.array([-0.0, 0.0, 4.0, 2.0, -3.5, numpy.inf, -numpy.inf, 1e-300]).astype(dtype)
    a = xp.asarray(values if dtype != "int64" else numpy.arange(1, 6))
    with numpy.errstate(all="ignore"):
        b = xp.asarray(numpy.array(a))
        b **= 3
        return a ** 3, b


@differential(rtol=0.0)
def test_iterated_square_keeps_numpys_digits(xp):
    # a few steps of mandelbrot's map, where rounding differences grow exponentially
    c = xp.asarray(numpy.linspace(-1.5, 0.3, 500) + 0.6j)
    z = xp.zeros_like(c)
    for _ in range(40):
        z = z ** 2 + c
        z = xp.where(abs(z) < 2, z, 0)
    return z


def _power_values(dtype):
    rng = numpy.random.default_rng(5)
    return numpy.concatenate([rng.random(200) * 50, [-0.0, 0.0, numpy.inf, -numpy.inf, -2.0]]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("exponent", [0.5, -1.0, 2.0, 1.0])
@differential(rtol=0.0)
def test_power_with_a_constant_exponent_is_numpys_loop(xp, dtype, exponent):
    # NumPy's power loop special-cases a constant exponent (0.5 sqrt, -1 reciprocal, 2 square,
    # 1 identity): correctly rounded operations, so the device gives the same bits
    a = xp.asarray(_power_values(dtype))
    with numpy.errstate(all="ignore"):
        return xp.power(a * 1, exponent) + 0, xp.power(a, exponent)  # inside a fused graph, and alone


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("exponent", [0.5, -1.0, 2.0, 3.0, -0.5])
@differential()
def test_power_with_an_array_of_exponents_is_pow(xp, dtype, exponent):
    # an array of exponents goes through pow, whose signed zeros and infinities differ from sqrt's
    a = xp.asarray(_power_values(dtype))
    with numpy.errstate(all="ignore"):
        return xp.power(a, xp.asarray(numpy.full(a.shape, exponent, dtype))), xp.power(a, 3.0)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@differential()
def test_complex_products_written_into_an_output_are_numpys(xp, dtype):
    """mandelbrot2's ``multiply(Z, Z, Z); add(Z, C, Z)`` (the output given positionally, the
    dispatcher's short road into it), and products into other memory, into a strided view and
    into a view that overlaps an operand shifted by one element (NumPy computes as if from a
    copy): bit for bit against NumPy. (``xp.array``: NumPy's ``asarray`` would share ``z0``.)"""
    z0 = (_values(dtype) * 0.4).astype(dtype)
    c = xp.array((z0[::-1] * 0.5).astype(dtype))
    z = xp.array(z0)
    with numpy.errstate(all="ignore"):  # (the iteration overflows, as mandelbrot's does)
        for _ in range(12):
            xp.multiply(z, z, z)
            xp.add(z, c, z)
        w = xp.array(z0)
        xp.multiply(w, c, out=w)
        v = xp.zeros_like(w)
        xp.multiply(w, c, v)
        s = xp.array(z0)
        xp.square(s, out=s)
        shifted = xp.array(z0)
        xp.multiply(shifted[:-1], c[1:], shifted[1:])
        strided = xp.array(z0)
        xp.multiply(strided[::2], c[::2], strided[::2])
        q = xp.array(z0)
        q *= c
    bits = "u8" if dtype == "complex128" else "u4"

    def exact(a):  # (each part's bits, a NaN's payload aside, as above)
        return tuple(xp.where(xp.isnan(part), numpy.nan, part).view(bits) for part in (a.real, a.imag))

    return (*exact(z), *exact(w), *exact(v), *exact(s), *exact(shifted), *exact(strided), *exact(q))
