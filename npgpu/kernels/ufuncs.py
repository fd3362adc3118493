"""The ufunc table: one entry per NumPy ufunc (UFUNCS) holding every fact the kernels use about
it: a C expression template per dtype loop, exactness, its floating-point error conditions, ...

Shared by the OpenCL and CUDA emitters; dialect differences live in ``DIALECTS`` only.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy

from . import complexmath

# -- C types ----------------------------------------------------------------
# Generated code names types by these aliases; each dialect's preamble typedefs them.
# bool is stored as one unsigned byte (NumPy's layout); OpenCL forbids `bool` in buffers.
CTYPES: dict[str, str] = {
    "b": "b1_t",
    "i1": "i8_t",
    "i2": "i16_t",
    "i4": "i32_t",
    "i8": "i64_t",
    "u1": "u8_t",
    "u2": "u16_t",
    "u4": "u32_t",
    "u8": "u64_t",
    "f4": "f32_t",
    "f8": "f64_t",
    # float16: computed in float32, rounded to half after every operation (HALF_TYPEDEFS); only
    # where a backend asks for it (OpenCL: stored as 16-bit words, STORAGE_CTYPES)
    "f2": "f16_t",
    # structs {re, im} (kernels/complexmath.py); computed on where a backend asks for them
    "c8": "c64_t",
    "c16": "c128_t",
}

_OPENCL_TYPEDEFS = {
    "b1_t": "uchar",
    "i8_t": "char",
    "i16_t": "short",
    "i32_t": "int",
    "i64_t": "long",
    "u8_t": "uchar",
    "u16_t": "ushort",
    "u32_t": "uint",
    "u64_t": "ulong",
    "f32_t": "float",
    "f64_t": "double",
}
_CUDA_TYPEDEFS = {
    "b1_t": "unsigned char",
    "i8_t": "signed char",
    "i16_t": "short",
    "i32_t": "int",
    "i64_t": "long long",
    "u8_t": "unsigned char",
    "u16_t": "unsigned short",
    "u32_t": "unsigned int",
    "u64_t": "unsigned long long",
    "f32_t": "float",
    "f64_t": "double",
}

# C math functions the templates call by their double-precision names.  CUDA wants the
# `f` suffix for float (OpenCL overloads them), so the CUDA dialect renames them.
_MATH = (
    "sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2 log10 log1p "
    "sqrt cbrt pow fabs floor ceil trunc rint fmod atan2 hypot copysign nextafter fmax fmin ldexp modf frexp"
).split()
_MATH_RE = re.compile(r"\b(" + "|".join(_MATH) + r")\(")


@dataclass(frozen=True)
class Dialect:
    """What differs between OpenCL C and CUDA C for the generated code."""

    name: str
    typedefs: dict[str, str]
    #: qualifier of helper functions
    inline: str
    #: rename math functions for float32 (CUDA: sin -> sinf)
    float_suffix: bool


DIALECTS: dict[str, Dialect] = {
    "opencl": Dialect("opencl", _OPENCL_TYPEDEFS, "inline", False),
    "cuda": Dialect("cuda", _CUDA_TYPEDEFS, "__device__ __forceinline__", True),
}


def ctype(dtype: numpy.dtype) -> str:
    """The generated-code alias of a supported dtype (KeyError when unsupported)."""
    dtype = numpy.dtype(dtype)
    return CTYPES["b" if dtype.kind == "b" else dtype.str[1:]]


def is_supported_dtype(dtype: numpy.dtype) -> bool:
    dtype = numpy.dtype(dtype)
    return dtype.isnative and (dtype.kind == "b" or (dtype.kind in "iuf" and dtype.str[1:] in CTYPES
                                                     and dtype.str[1:] != "f2"))


def is_kernel_dtype(dtype: numpy.dtype) -> bool:
    """A dtype generated kernels compute on: the supported ones, native complex64/complex128 and
    float16 (the OpenCL backend's: its kernels ask for them with ``complex_values``)."""
    dtype = numpy.dtype(dtype)
    return is_supported_dtype(dtype) or (dtype.isnative and dtype.str[1:] in ("c8", "c16", "f2"))


#: C types of the values in memory where they differ from the type computed on (float16: the bits)
STORAGE_CTYPES = {"f16_t": "u16_t"}


def storage_ctype(dtype: numpy.dtype) -> str:
    """The C type of ``dtype``'s elements in memory (pointers' types)."""
    t = ctype(dtype)
    return STORAGE_CTYPES.get(t, t)


def is_half(dtype: numpy.dtype) -> bool:
    return numpy.dtype(dtype) == numpy.float16


def load(expression: str, dtype: numpy.dtype) -> str:
    """The value of the element ``expression`` (an lvalue of storage_ctype) as the kernel computes on it."""
    return f"npg_h2f({expression})" if is_half(dtype) else expression


def stored(value: str, dtype: numpy.dtype) -> str:
    """``value`` (a computed value of ``dtype``) as the bits stored in memory."""
    return f"npg_f2h({value})" if is_half(dtype) else value


def _real_ctype(dtype: numpy.dtype) -> str:
    """The C type of a complex dtype's parts (a real dtype's own)."""
    t = ctype(dtype)
    return complexmath.COMPLEX_TYPES[t][0] if t in complexmath.COMPLEX_TYPES else t


def _wide_unsigned(dtype: numpy.dtype) -> str:
    # Integer arithmetic is done in an unsigned type at least 32 bits wide: signed
    # overflow is undefined in C, NumPy wraps.
    return "u64_t" if numpy.dtype(dtype).itemsize == 8 else "u32_t"


# -- helper functions (emitted once per kernel, only when used) --------------
# Keys are helper templates; {T} is the C type, the function name gets a suffix per type.
_HELPERS: dict[str, str] = {
    # NumPy: integer division by zero gives 0; floor rounding; MIN // -1 wraps to MIN.
    "floordiv_s": """{inline} {T} npg_floordiv_{S}({T} a, {T} b) {{
  if (b == 0) return 0;
  if (b == -1) return ({T})(({U})0 - ({U})a);
  {T} q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}}""",
    "floordiv_u": """{inline} {T} npg_floordiv_{S}({T} a, {T} b) {{
  return b == 0 ? ({T})0 : ({T})(a / b);
}}""",
    "remainder_s": """{inline} {T} npg_remainder_{S}({T} a, {T} b) {{
  if (b == 0 || b == -1) return 0;
  {T} r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}}""",
    "remainder_u": """{inline} {T} npg_remainder_{S}({T} a, {T} b) {{
  return b == 0 ? ({T})0 : ({T})(a % b);
}}""",
    "fmod_s": """{inline} {T} npg_fmod_{S}({T} a, {T} b) {{
  return (b == 0 || b == -1) ? ({T})0 : ({T})(a % b);
}}""",
    # NumPy's float divmod: fmod, then fix the sign, then round the quotient.
    "floordiv_f": """{inline} {T} npg_floordiv_{S}({T} a, {T} b) {{
  if (b == 0) return a / b;
  {T} mod = fmod(a, b);
  {T} div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(({T})0, a / b);
  {T} fl = floor(div);
  if (div - fl > ({T})0.5) fl += 1;
  return fl;
}}""",
    "remainder_f": """{inline} {T} npg_remainder_{S}({T} a, {T} b) {{
  if (b == 0) return fmod(a, b);
  {T} mod = fmod(a, b);
  if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }}
  else mod = copysign(({T})0, b);
  return mod;
}}""",
    # exponentiation by squaring in wrapping unsigned arithmetic; negative exponents are
    # rejected on the host before launch (NumPy raises ValueError).
    "power_i": """{inline} {T} npg_power_{S}({T} a, {T} b) {{
  {U} r = 1, x = ({U})a;
  {U} e = ({U})b;
  while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }}
  return ({T})r;
}}""",
    "lshift": """{inline} {T} npg_lshift_{S}({T} a, {T} b) {{
  return (({U})b < ({U})(8 * sizeof({T}))) ? ({T})(({U})a << b) : ({T})0;
}}""",
    "rshift": """{inline} {T} npg_rshift_{S}({T} a, {T} b) {{
  if (({U})b < ({U})(8 * sizeof({T}))) return ({T})(a >> b);
  return a < 0 ? ({T})-1 : ({T})0;
}}""",
    "gcd": """{inline} {T} npg_gcd_{S}({T} a, {T} b) {{
  {U} x = a < 0 ? ({U})0 - ({U})a : ({U})a;
  {U} y = b < 0 ? ({U})0 - ({U})b : ({U})b;
  while (y) {{ {U} t = x % y; x = y; y = t; }}
  return ({T})x;
}}""",
    "logaddexp": """{inline} {T} npg_logaddexp_{S}({T} a, {T} b) {{
  if (a == b) return a + ({T})0.69314718055994530942;
  {T} d = a - b;
  if (d > 0) return a + log1p(exp(-d));
  if (d <= 0) return b + log1p(exp(d));
  return d;
}}""",
    # NumPy's lcm: |a| / gcd * |b| in the unsigned type (wrapping, as NumPy's), 0 when both are 0
    "lcm": """{inline} {T} npg_lcm_{S}({T} a, {T} b) {{
  {U} x = a < 0 ? ({U})0 - ({U})a : ({U})a;
  {U} y = b < 0 ? ({U})0 - ({U})b : ({U})b;
  {U} g = x, h = y;
  while (h) {{ {U} t = g % h; g = h; h = t; }}
  return g == 0 ? ({T})0 : ({T})(x / g * y);
}}""",
    # NumPy's bitwise_count: the set bits of |a|
    "popcount": """{inline} int npg_popcount_{S}({T} a) {{
  u64_t x = a < 0 ? (u64_t)0 - (u64_t)a : (u64_t)a;
  if (sizeof({T}) < 8) x &= ((u64_t)1 << (8 * sizeof({T}))) - 1;
  int n = 0;
  while (x) {{ x &= x - 1; n++; }}
  return n;
}}""",
    # NumPy's spacing: the distance to the next value away from zero (NaN for inf and NaN; float32
    # gives NaN where that next value is inf, float64 inf)
    "spacing": """{inline} {T} npg_spacing_{S}({T} a) {{
  {T} zero = 0;
  {T} away = a < 0 ? ({T})-1 / zero : ({T})1 / zero;
  {T} d = nextafter(a, away) - a;
  return (isinf(a) || (sizeof({T}) == 4 && isinf(d))) ? a - a : d;
}}""",
    # frexp's two outputs: the mantissa in [0.5, 1) (inf, NaN and zeros as they are), the exponent
    # (0 for those)
    "frexp_mantissa": """{inline} {T} npg_frexp_mantissa_{S}({T} a) {{
  int e;
  return (isfinite(a) && a != 0) ? frexp(a, &e) : a;
}}""",
    "frexp_exponent": """{inline} int npg_frexp_exponent_{S}({T} a) {{
  int e = 0;
  if (isfinite(a) && a != 0) frexp(a, &e);
  return e;
}}""",
    "logaddexp2": """{inline} {T} npg_logaddexp2_{S}({T} a, {T} b) {{
  if (a == b) return a + 1;
  {T} d = a - b;
  if (d > 0) return a + log1p(exp2(-d)) * ({T})1.44269504088896340736;
  if (d <= 0) return b + log1p(exp2(d)) * ({T})1.44269504088896340736;
  return d;
}}""",
}


#: absolute of a signed integer, NumPy's (INT_MIN stays INT_MIN) as a product by +-1 in unsigned
#: arithmetic: NVIDIA's OpenCL compiler takes a select form (x < 0 ? -x : x, also as bit tricks, the
#: builtin abs or through a volatile) for non-negative and turned abs(INT_MIN) % 7 into an unsigned
#: remainder (2, NumPy's 5: GPU runs 12-13, 2026-12-01); the product survives there and on PoCL
_SIGNED_ABSOLUTE = "(({T})(({U}){0} * ({0} < 0 ? ~({U})0 : ({U})1)))"


def _h(helper: str, args: str = "{0}, {1}") -> str:
    return "@" + helper + "(" + args + ")"


_SWRAP = "(({T})(({U}){0} {op} ({U}){1}))"


def _wrap(op: str) -> str:
    return _SWRAP.replace("{op}", op)


_NAN_MAX = "((({0}) > ({1}) || isnan({0})) ? ({0}) : ({1}))"
_NAN_MIN = "((({0}) < ({1}) || isnan({0})) ? ({0}) : ({1}))"
#: clip's halves: the first operand where the two compare equal (a signed zero kept)
_KEEP_MAX = "((({0}) >= ({1}) || isnan({0})) ? ({0}) : ({1}))"
_KEEP_MIN = "((({0}) <= ({1}) || isnan({0})) ? ({0}) : ({1}))"

# -- floating-point errors ---------------------------------------------------------------------
# NumPy's error categories, as the bits of its seterrcall flag (divide + 2*over + 4*under + 8*invalid).
DIVIDE, OVER, UNDER, INVALID = 1, 2, 4, 8

# When a NumPy loop raises a floating-point flag, as conditions over the operands {0}, {1}, the
# result {r} (output 1 of a two-output ufunc: {r1}), in the loop's types; {MIN} is the smallest
# value of a signed integer input type. Float loops raise IEEE's flags: divide by zero is an
# exact infinity from finite operands, overflow a rounded one, invalid a NaN from non-NaN
# operands (tests/test_errstate.py checks every entry against NumPy on special values). Integer
# loops set NumPy's own: x // 0, x % 0 (divide), MIN // -1 (overflow). Underflow is not detected.
_INF_1 = "(isinf({r}) && isfinite({0}))"
_INF_2 = "(isinf({r}) && isfinite({0}) && isfinite({1}))"
_NAN_2 = "(isnan({r}) && !isnan({0}) && !isnan({1}))"
_BY_ZERO = "(isinf({r}) && isfinite({0}) && {1} == 0)"
_ANY_NAN_2 = "(isnan({0}) || isnan({1}))"
_QUOTIENT_OVER = "(isinf({r}) && isfinite({0}) && {1} != 0)"
_ARITHMETIC = {OVER: _INF_2, INVALID: _NAN_2}
_DIVISION = {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER, INVALID: _NAN_2}
# NumPy's float floor division also raises invalid where the quotient overflows (floor(inf) - inf)
_FLOOR_INVALID = "(!isnan({0}) && !isnan({1}) && (isnan({r}) || (isinf({r}) && isfinite({0}) && {1} != 0)))"
_POWER = {DIVIDE: "(isinf({r}) && {0} == 0)", OVER: "(isinf({r}) && isfinite({0}) && {0} != 0 && isfinite({1}))",
          INVALID: _NAN_2}
_FLOAT_POWER = {**_POWER, DIVIDE: "(isinf({r}) && {0} == 0 && isfinite({1}))"}
_INT_DIVISION = {DIVIDE: "({1} == 0)", OVER: "({1} == -1 && {0} == {MIN})"}
_UINT_DIVISION = {DIVIDE: "({1} == 0)"}
_LOG = {DIVIDE: "({0} == 0)", INVALID: "({0} < 0)"}
_EXP = {OVER: _INF_1}
# libm's cexp (glibc, as C99 Annex G allows): invalid where the imaginary part is inf or NaN and the
# real part finite, or inf beside +inf, or nonzero beside a NaN real part; overflow where a finite
# operand gives an infinite part. clog: divide by zero at 0.
_CEXP = {OVER: "((isinf({r}.re) || isinf({r}.im)) && isfinite({0}.re) && isfinite({0}.im))",
         INVALID: "((isfinite({0}.re) && !isfinite({0}.im)) || ({0}.re > 0 && isinf({0}.re) && isinf({0}.im)) "
                  "|| (isnan({0}.re) && {0}.im != 0 && !isnan({0}.im)))"}
_C_ZERO = "({0}.re == 0 && {0}.im == 0)"
_TRIG = {INVALID: "isinf({0})"}

#: A float cast to a narrower float overflows where a finite value becomes infinite.
NARROWING_CAST_ERRORS = {OVER: _INF_1}

# -- THE TABLE ----------------------------------------------------------------
Kinds = str  # kinds of the loop's first input: b bool, i signed int, u unsigned int, f float
Template = str | tuple[str, ...]


@dataclass(frozen=True)
class UfuncFacts:
    """Everything the kernels know about one NumPy ufunc (a new ufunc is one entry of UFUNCS)."""

    name: str
    #: {kinds: C expression template, or a tuple of them, one per output}. Operands are {0}, {1}, ...;
    #: {T} is the output's C type, {U} the wide unsigned type, @name(...) a helper of _HELPERS.
    expressions: dict[Kinds, Template]
    #: NumPy computes the result with correctly rounded or exactly specified operations: it
    #: matches NumPy bit for bit on IEEE devices with FP_CONTRACT OFF (others are libm-grade).
    exact: bool = False
    #: {kinds: template} used instead of ``expressions`` when operand 1 is a kernel scalar: NumPy's
    #: loop sees a constant (stride 0) and special-cases its value: numpy.power(x, 0.5) is sqrt(x),
    #: -1 is 1/x, 2 is x*x, 1 is x, where pow differs in signed zeros, infinities or the last bit.
    #: The condition is on a kernel argument, the same for every element; in vector code it
    #: selects lanes, and every lane agrees.
    constant_operand: dict[Kinds, str] = field(default_factory=dict)
    #: {kinds: {category: condition}}: where NumPy's loop raises which floating-point flag.
    errors: dict[Kinds, dict[int, str]] = field(default_factory=dict)
    #: The operands whose inf or NaN always makes the float result inf or NaN: an error upstream
    #: of such an operand shows in the result, so kernels test the final value's finiteness
    #: first and look at each operation only when that test fails.
    propagates_nonfinite: tuple[int, ...] = ()
    #: The float template is plain arithmetic or an OpenCL builtin that also takes vector types,
    #: with no helper function and no comparison: the same text computes a vector of them.
    vectorizes: bool = False
    #: Its OpenCL builtin's float8 form gives the other lanes of a vector wrong values where one
    #: lane is infinite (PoCL 3.0's sin, cos and tan: sin(0.001) as 0.0079999, on the kernel
    #: library of AVX-512 CPUs): float32 vector code calls it with infinite lanes made NaN first,
    #: which the builtin maps to NaN as it maps an infinity (codegen._vector_elementwise).
    guard_float8: bool = False
    #: Kinds of loops whose result is inf or NaN wherever they raise a flag (every error shows in the
    #: result: a kernel tests the result's finiteness first, the conditions only where it fails).
    flagged_result_nonfinite: Kinds = ""
    #: As a reduction operator, its start value doesn't depend on the data (the others start from
    #: inf, the dtype's limits, or NaN for fmax/fmin: fmax(nan, x) == x, and an all-NaN slice stays NaN).
    constant_identity: bool = False
    #: Its float16 loop's template where NumPy's half loop is not its float32 one (max and min keep
    #: the first operand of equal ones: NumPy's half loops compare with >= and <=)
    half_expression: str = ""
    #: Its float32 loop's template where the builtin's float form and NumPy's float32 loop part
    #: (tanh: PoCL 3.0's float tanh never reaches 1, tanh(inf) being 0.99999994, where NumPy's is
    #: +-1 from |x| >= 10). Plain arithmetic and builtins with vector forms, as ``vectorizes`` asks.
    float32_expression: str = ""


_BOTH, _FIRST = (0, 1), (0,)


def _flags(helper: str, nin: int, operands: str = "", categories: tuple[int, ...] = (DIVIDE, OVER, INVALID)
           ) -> dict[int, str]:
    """A complex loop's error conditions: the flags its helper's flag form computes (complexmath)."""
    args = operands or ", ".join(f"{{{i}}}" for i in range(nin))
    return {category: f"(@{helper}_flags({args}) & {category})" for category in categories}


def _ordered(helper: str) -> dict[str, Any]:
    """A complex comparison: NumPy's lexicographic order, which raises invalid for a NaN it compares."""
    return {"c": f"@{helper}({{0}}, {{1}})"}


# float32 tanh: the builtin's value, made +-1 where |x| >= 10 (NumPy's float32 loop reaches 1 there,
# and is below it at 9.999999, the float before 10): the step is fmin(fmax(|x| - 9.999999, 0) * 1e30,
# 1), 0 or 1 with no comparison (vector code takes it), 0 for NaN (fmax drops it: NaN stays NaN);
# 1 - |t| is exact for |t| >= 0.5, so t plus it, with x's sign, is exactly +-1
_TANH_F32 = ("(tanh({0}) + copysign(fmin(fmax(fabs({0}) - 9.999999046325684f, 0.0f) * 1e30f, 1.0f)"
             " * (1.0f - fabs(tanh({0}))), {0}))")


_NZ0, _NZ1 = "({0}.re != 0 || {0}.im != 0)", "({1}.re != 0 || {1}.im != 0)"


def _math(name: str, c: str, **facts: Any) -> UfuncFacts:
    """A float ufunc that is one C math function of its operands."""
    nin = facts.pop("nin", 1)
    return UfuncFacts(name, {"f": c + "(" + ", ".join(f"{{{i}}}" for i in range(nin)) + ")"}, **facts)


_ENTRIES = (
    UfuncFacts("add", {"b": "({0} || {1})", "iu": _wrap("+"), "f": "({0} + {1})", "c": "@cadd({0}, {1})"}, exact=True,
               errors={"f": _ARITHMETIC, "c": _flags("cadd", 2)}, propagates_nonfinite=_BOTH, vectorizes=True,
               constant_identity=True, flagged_result_nonfinite="c"),
    UfuncFacts("subtract", {"iu": _wrap("-"), "f": "({0} - {1})", "c": "@csub({0}, {1})"}, exact=True,
               errors={"f": _ARITHMETIC, "c": _flags("csub", 2)}, flagged_result_nonfinite="c",
               propagates_nonfinite=_BOTH, vectorizes=True),
    UfuncFacts("multiply", {"b": "({0} && {1})", "iu": _wrap("*"), "f": "({0} * {1})", "c": "@cmul({0}, {1})"},
               exact=True, errors={"f": _ARITHMETIC, "c": _flags("cmul", 2)}, propagates_nonfinite=_BOTH,
               vectorizes=True, constant_identity=True, flagged_result_nonfinite="c"),
    UfuncFacts("divide", {"f": "({0} / {1})", "c": "@cdiv({0}, {1})"}, errors={"f": _DIVISION, "c": _flags("cdiv", 2)},
               propagates_nonfinite=_FIRST,
               vectorizes=True),
    UfuncFacts("true_divide", {"f": "({0} / {1})", "c": "@cdiv({0}, {1})"}, exact=True,
               errors={"f": _DIVISION, "c": _flags("cdiv", 2)},
               propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("floor_divide", {"i": _h("floordiv_s"), "u": _h("floordiv_u"), "f": _h("floordiv_f")},
               errors={"i": _INT_DIVISION, "u": _UINT_DIVISION,
                       "f": {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER, INVALID: _FLOOR_INVALID}},
               propagates_nonfinite=_FIRST),
    UfuncFacts("remainder", {"i": _h("remainder_s"), "u": _h("remainder_u"), "f": _h("remainder_f")},
               errors={"iu": _UINT_DIVISION, "f": {INVALID: _NAN_2}}, propagates_nonfinite=_FIRST),
    UfuncFacts("fmod", {"i": _h("fmod_s"), "u": _h("remainder_u"), "f": "fmod({0}, {1})"},
               errors={"iu": _UINT_DIVISION, "f": {INVALID: _NAN_2}}, propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("divmod", {"i": (_h("floordiv_s"), _h("remainder_s")), "u": (_h("floordiv_u"), _h("remainder_u")),
                          "f": (_h("floordiv_f"), _h("remainder_f"))},
               errors={"i": _INT_DIVISION, "u": _UINT_DIVISION,
                       "f": {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER,
                             INVALID: "(" + _FLOOR_INVALID + " || (isnan({r1}) && !isnan({0}) && !isnan({1})))"}}),
    UfuncFacts("power", {"iu": _h("power_i"), "f": "pow({0}, {1})"}, errors={"f": _POWER}, vectorizes=True,
               constant_operand={"f": "({1} == ({T})0.5 ? sqrt({0}) : ({1} == ({T})-1 ? ({T})1 / {0} : "
                                      "({1} == ({T})2 ? {0} * {0} : ({1} == ({T})1 ? {0} : pow({0}, {1})))))"}),
    _math("float_power", "pow", nin=2, errors={"f": _FLOAT_POWER}, vectorizes=True),
    UfuncFacts("negative", {"iu": "(({T})(({U})0 - ({U}){0}))", "f": "(-{0})", "c": "{MK}(-{0}.re, -{0}.im)"},
               exact=True,
               propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("positive", {"iufc": "({0})"}, exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("square", {"iu": _wrap("*").replace("{1}", "{0}"), "f": "({0} * {0})", "c": "@cmul({0}, {0})"},
               exact=True, errors={"f": {OVER: _INF_1}, "c": _flags("cmul", 2, "{0}, {0}")},
               propagates_nonfinite=_FIRST, vectorizes=True, flagged_result_nonfinite="c"),
    UfuncFacts("reciprocal", {"f": "(({T})1 / {0})", "c": "@crecip({0})"}, vectorizes=True,
               errors={"f": {DIVIDE: "({0} == 0)", OVER: "(isinf({r}) && isfinite({0}) && {0} != 0)"},
                       "c": _flags("crecip", 1)}),
    UfuncFacts("absolute", {"b": "({0})", "i": _SIGNED_ABSOLUTE, "u": "({0})",
                            "f": "fabs({0})", "c": "hypot({0}.re, {0}.im)"}, exact=True, propagates_nonfinite=_FIRST,
               vectorizes=True),  # (NumPy's complex abs raises no overflow: npy_cabs)
    _math("fabs", "fabs", exact=True, propagates_nonfinite=_FIRST),
    UfuncFacts("sign", {"i": "(({0} > 0) - ({0} < 0))", "u": "({0} > 0)",
                        "f": "({0} > 0 ? ({T})1 : ({0} < 0 ? ({T})-1 : ({0} == 0 ? ({T})0 : {0})))"}, exact=True),
    UfuncFacts("conjugate", {"biuf": "({0})", "c": "{MK}({0}.re, -{0}.im)"}, exact=True),
    UfuncFacts("maximum", {"biu": "({0} > {1} ? {0} : {1})", "f": _NAN_MAX, "c": "@cmax({0}, {1})"}, exact=True,
               half_expression="(({0} >= {1} || isnan({0})) ? {0} : {1})"),
    UfuncFacts("minimum", {"biu": "({0} < {1} ? {0} : {1})", "f": _NAN_MIN, "c": "@cmin({0}, {1})"}, exact=True,
               half_expression="(({0} <= {1} || isnan({0})) ? {0} : {1})"),
    UfuncFacts("fmax", {"biu": "({0} > {1} ? {0} : {1})", "f": "fmax({0}, {1})", "c": "@cfmax({0}, {1})"}, exact=True,
               vectorizes=True, half_expression="(({0} >= {1} || isnan({1})) ? {0} : {1})"),
    UfuncFacts("fmin", {"biu": "({0} < {1} ? {0} : {1})", "f": "fmin({0}, {1})", "c": "@cfmin({0}, {1})"}, exact=True,
               vectorizes=True, half_expression="(({0} <= {1} || isnan({1})) ? {0} : {1})"),
    # minimum(maximum(x, lo), hi), as NumPy: hi where lo > hi; NumPy's clip keeps x where it equals a
    # bound (clip(-0.0, 0.0, 1.0) is -0.0, clip(0.0, -1.0, -0.0) 0.0) and NaN from x or a bound
    UfuncFacts("clip", {"biu": "({0} < {1} ? ({1} > {2} ? {2} : {1}) : ({0} > {2} ? {2} : {0}))",
                        "f": "(isnan({0}) ? {0} : " + _KEEP_MIN.format(_KEEP_MAX.format("{0}", "{1}"), "{2}") + ")"}),
    UfuncFacts("equal", {"biuf": "({0} == {1})", "c": "({0}.re == {1}.re && {0}.im == {1}.im)"}),
    UfuncFacts("not_equal", {"biuf": "({0} != {1})", "c": "({0}.re != {1}.re || {0}.im != {1}.im)"}),
    UfuncFacts("less", {"biuf": "({0} < {1})", **_ordered("clt")},
               errors={"c": _flags("clt", 2, categories=(INVALID,))}),
    UfuncFacts("less_equal", {"biuf": "({0} <= {1})", **_ordered("cle")},
               errors={"c": _flags("cle", 2, categories=(INVALID,))}),
    UfuncFacts("greater", {"biuf": "({0} > {1})", **_ordered("cgt")},
               errors={"c": _flags("cgt", 2, categories=(INVALID,))}),
    UfuncFacts("greater_equal", {"biuf": "({0} >= {1})", **_ordered("cge")},
               errors={"c": _flags("cge", 2, categories=(INVALID,))}),
    UfuncFacts("logical_and", {"biuf": "({0} != 0 && {1} != 0)", "c": f"({_NZ0} && {_NZ1})"}, constant_identity=True),
    UfuncFacts("logical_or", {"biuf": "({0} != 0 || {1} != 0)", "c": f"({_NZ0} || {_NZ1})"}, constant_identity=True),
    UfuncFacts("logical_xor", {"biuf": "(({0} != 0) != ({1} != 0))", "c": f"({_NZ0} != {_NZ1})"}),
    UfuncFacts("logical_not", {"biuf": "({0} == 0)", "c": f"(!{_NZ0})"}),
    UfuncFacts("bitwise_and", {"biu": "({0} & {1})"}, constant_identity=True),
    UfuncFacts("bitwise_or", {"biu": "({0} | {1})"}, constant_identity=True),
    UfuncFacts("bitwise_xor", {"biu": "({0} ^ {1})"}, constant_identity=True),
    UfuncFacts("invert", {"b": "(!{0})", "iu": "(~{0})"}),
    UfuncFacts("left_shift", {"iu": _h("lshift")}),
    UfuncFacts("right_shift", {"iu": _h("rshift")}),
    UfuncFacts("gcd", {"iu": _h("gcd")}),
    UfuncFacts("lcm", {"iu": _h("lcm")}),
    UfuncFacts("bitwise_count", {"iu": _h("popcount", "{0}")}),
    UfuncFacts("isnan", {"biu": "0", "f": "isnan({0})", "c": "(isnan({0}.re) || isnan({0}.im))"}),
    UfuncFacts("isinf", {"biu": "0", "f": "isinf({0})", "c": "(isinf({0}.re) || isinf({0}.im))"}),
    UfuncFacts("isfinite", {"biu": "1", "f": "isfinite({0})", "c": "(isfinite({0}.re) && isfinite({0}.im))"}),
    _math("signbit", "signbit"),
    _math("copysign", "copysign", nin=2, exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("nextafter", "nextafter", nin=2, errors={"f": {OVER: _INF_2}}),
    UfuncFacts("spacing", {"f": _h("spacing", "{0}")}, errors={"f": {OVER: _INF_1}}),
    # NumPy clamps a 64-bit exponent to int's range
    UfuncFacts("ldexp", {"f": "ldexp({0}, (int)({1} > 2147483647 ? 2147483647 : ({1} < -2147483647 ? -2147483647 "
                              ": {1})))"}, errors={"f": {OVER: _INF_1}}),
    UfuncFacts("frexp", {"f": (_h("frexp_mantissa", "{0}"), _h("frexp_exponent", "{0}"))}),
    # the fractional part keeps the sign of x (modf(-2.0) is (-0.0, -2.0)); inf's is a signed 0
    UfuncFacts("modf", {"f": ("copysign(isinf({0}) ? ({T})0 : {0} - trunc({0}), {0})", "trunc({0})")}),
    UfuncFacts("heaviside", {"f": "(isnan({0}) ? {0} : ({0} == 0 ? {1} : ({0} < 0 ? ({T})0 : ({T})1)))"}),
    _math("arctan2", "atan2", nin=2, vectorizes=True),
    _math("hypot", "hypot", nin=2, errors={"f": {OVER: _INF_2}}, propagates_nonfinite=_BOTH, vectorizes=True),
    # (NumPy's npy_logaddexp orders its operands with a signaling comparison: any NaN is invalid)
    UfuncFacts("logaddexp", {"f": _h("logaddexp")}, errors={"f": {INVALID: _ANY_NAN_2}}),
    UfuncFacts("logaddexp2", {"f": _h("logaddexp2")}, errors={"f": {INVALID: _ANY_NAN_2}}),
    UfuncFacts("sqrt", {"f": "sqrt({0})", "c": "@csqrt({0})"}, exact=True, errors={"f": {INVALID: "({0} < 0)"}},
               propagates_nonfinite=_FIRST, vectorizes=True),
    _math("cbrt", "cbrt", propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("exp", {"f": "exp({0})", "c": "@cexp({0})"}, errors={"f": _EXP, "c": _CEXP}, vectorizes=True,
               flagged_result_nonfinite="c"),
    _math("exp2", "exp2", errors={"f": _EXP}, vectorizes=True),
    _math("expm1", "expm1", errors={"f": _EXP}, vectorizes=True),
    UfuncFacts("log", {"f": "log({0})", "c": "@clog({0})"}, errors={"f": _LOG, "c": {DIVIDE: _C_ZERO}},
               propagates_nonfinite=_FIRST, vectorizes=True, flagged_result_nonfinite="c"),
    _math("log2", "log2", errors={"f": _LOG}, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("log10", "log10", errors={"f": _LOG}, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("log1p", "log1p", errors={"f": {DIVIDE: "({0} == -1)", INVALID: "({0} < -1)"}},
          propagates_nonfinite=_FIRST, vectorizes=True),
    _math("sin", "sin", errors={"f": _TRIG}, propagates_nonfinite=_FIRST, vectorizes=True, guard_float8=True),
    _math("cos", "cos", errors={"f": _TRIG}, propagates_nonfinite=_FIRST, vectorizes=True, guard_float8=True),
    _math("tan", "tan", errors={"f": _TRIG}, propagates_nonfinite=_FIRST, vectorizes=True, guard_float8=True),
    _math("arcsin", "asin", errors={"f": {INVALID: "(fabs({0}) > 1)"}}, propagates_nonfinite=_FIRST,
          vectorizes=True),
    _math("arccos", "acos", errors={"f": {INVALID: "(fabs({0}) > 1)"}}, propagates_nonfinite=_FIRST,
          vectorizes=True),
    _math("arctan", "atan", vectorizes=True),
    _math("sinh", "sinh", errors={"f": _EXP}, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("cosh", "cosh", errors={"f": _EXP}, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("tanh", "tanh", vectorizes=True, float32_expression=_TANH_F32),
    _math("arcsinh", "asinh", propagates_nonfinite=_FIRST, vectorizes=True),
    _math("arccosh", "acosh", errors={"f": {INVALID: "({0} < 1)"}}, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("arctanh", "atanh", errors={"f": {DIVIDE: "(fabs({0}) == 1)", INVALID: "(fabs({0}) > 1)"}},
          propagates_nonfinite=_FIRST, vectorizes=True),
    _math("floor", "floor", exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("ceil", "ceil", exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("trunc", "trunc", exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    _math("rint", "rint", exact=True, propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("deg2rad", {"f": "({0} * ({T})0.017453292519943295769)"}, propagates_nonfinite=_FIRST,
               vectorizes=True),
    UfuncFacts("radians", {"f": "({0} * ({T})0.017453292519943295769)"}, propagates_nonfinite=_FIRST),
    UfuncFacts("rad2deg", {"f": "({0} * ({T})57.295779513082320877)"}, errors={"f": _EXP},
               propagates_nonfinite=_FIRST, vectorizes=True),
    UfuncFacts("degrees", {"f": "({0} * ({T})57.295779513082320877)"}, errors={"f": _EXP},
               propagates_nonfinite=_FIRST),
)

#: The ufuncs whose float16 loop is NumPy's float32 loop with its inputs widened and its result
#: rounded to half (tests/test_opencl_float16.py compares them with NumPy bit for bit on special
#: and random halves). Not here: NumPy's own half loops (nextafter, spacing), and those whose
#: float32 result differed from PoCL's in bits that survive the rounding (2026-12-01, every half
#: tried: exp, expm1, log10, sin, cos, tan, arctan, cosh, arcsinh, arccosh, cbrt; of 4e6 random pairs:
#: arctan2, hypot, logaddexp, logaddexp2: README). arcsin: NumPy's float32 result depends on the
#: host's SIMD code (2026-12-03, an AMD EPYC without AVX-512: 2 halves of 65536 differ from PoCL's).
HALF_LOOPS = frozenset((
    "add subtract multiply divide true_divide floor_divide remainder fmod divmod negative positive square "
    "reciprocal absolute fabs sign maximum minimum fmax fmin equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_xor logical_not isnan isinf isfinite signbit copysign sqrt floor ceil trunc "
    "rint log2 log1p arccos tanh arctanh deg2rad radians "
    "rad2deg degrees heaviside"
).split())

#: ufunc name -> its facts: the one table every emitter, backend and the error checks read.
UFUNCS: dict[str, UfuncFacts] = {facts.name: facts for facts in _ENTRIES}


def facts(ufunc_name: str) -> UfuncFacts | None:
    """The table's entry for ``ufunc_name`` (None: the kernels don't know it)."""
    return UFUNCS.get(ufunc_name)


def _for_kind(entry: dict[Kinds, Any], kind: str) -> Any:
    return next((value for kinds, value in entry.items() if kind in kinds), None)


def _lookup(ufunc_name: str, kind: str, constant: bool = False) -> Template | None:
    entry = UFUNCS.get(ufunc_name)
    if entry is None:
        return None
    template = _for_kind(entry.constant_operand, kind) if constant else None
    return template if template is not None else _for_kind(entry.expressions, kind)



def _name(ufunc: numpy.ufunc) -> str:
    return ufunc.__name__


#: Comparisons of a signed with an unsigned 64-bit integer: NumPy's exact loops (qQ->?, Qq->?), a
#: negative number below every unsigned one; C converts the signed operand to unsigned (-38 > 9u).
#: (signed first, unsigned first)
_MIXED_SIGN_COMPARISONS = {
    "greater": ("({0} >= 0 && (u64_t){0} > {1})", "({1} < 0 || {0} > (u64_t){1})"),
    "greater_equal": ("({0} >= 0 && (u64_t){0} >= {1})", "({1} < 0 || {0} >= (u64_t){1})"),
    "less": ("({0} < 0 || (u64_t){0} < {1})", "({1} >= 0 && {0} < (u64_t){1})"),
    "less_equal": ("({0} < 0 || (u64_t){0} <= {1})", "({1} >= 0 && {0} <= (u64_t){1})"),
    "equal": ("({0} >= 0 && (u64_t){0} == {1})", "({1} >= 0 && {0} == (u64_t){1})"),
    "not_equal": ("({0} < 0 || (u64_t){0} != {1})", "({1} < 0 || {0} != (u64_t){1})"),
}


def supports_loop(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], complex_values: bool = False) -> bool:
    """True when the table has a template for this ufunc and resolved loop dtypes (complex ones
    only with ``complex_values``: a backend that computes on complex arrays asks so)."""
    name = _name(ufunc)
    if not all(is_supported_dtype(dt) or (complex_values and is_kernel_dtype(dt)) for dt in loop):
        return False
    if any(is_half(dt) for dt in loop) and name not in HALF_LOOPS:
        return False
    template = _lookup(_name(ufunc), loop[0].kind)
    if template is None:
        return False
    if loop[0].kind == "c" and "@cmul(" in str(template) and numpy_complex_product_fuses(loop[0]) is None:
        return False  # the host's NumPy rounds its complex products like neither formula
    return (len(template) if isinstance(template, tuple) else 1) == ufunc.nout


def float_suffix_needed(dialect: Dialect, loop: tuple[numpy.dtype, ...]) -> bool:
    return dialect.float_suffix and any(dt == numpy.float32 for dt in loop[: max(1, len(loop))])


def _dialectize(text: str, dialect: Dialect, compute_dtype: numpy.dtype) -> str:
    if dialect.float_suffix and compute_dtype in (numpy.float32, numpy.complex64):
        text = _MATH_RE.sub(lambda m: m.group(1) + "f(", text)
    return text


def render(
    ufunc: numpy.ufunc,
    loop: tuple[numpy.dtype, ...],
    operands: list[str],
    out_index: int,
    dialect: str,
    constant_second: bool = False,
) -> tuple[str, dict[str, str]]:
    """C expression for output ``out_index`` of ``ufunc`` over operand expressions.

    Returns the expression (already cast to the output's C type) and the helper
    functions it needs, as {name: source}.  Operand expressions must already have
    the loop's input C types. ``constant_second``: operand 1 is a kernel scalar (see
    UfuncFacts.constant_operand).
    """
    d = DIALECTS[dialect]
    nin = ufunc.nin
    out_dt = loop[nin + out_index]
    in_dt = loop[0]
    template = _lookup(_name(ufunc), in_dt.kind, constant_second and nin == 2)
    if nin == 2 and {in_dt.kind, loop[1].kind} == {"i", "u"} and _name(ufunc) in _MIXED_SIGN_COMPARISONS:
        template = _MIXED_SIGN_COMPARISONS[_name(ufunc)][in_dt.kind != "i"]
    if is_half(in_dt) and UFUNCS[_name(ufunc)].half_expression:
        template = UFUNCS[_name(ufunc)].half_expression
    elif in_dt == numpy.float32 and UFUNCS[_name(ufunc)].float32_expression:
        template = UFUNCS[_name(ufunc)].float32_expression
    if template is None:
        raise KeyError(f"no {dialect} template for {ufunc.__name__} with loop {loop}")
    if isinstance(template, tuple):
        template = template[out_index]
    # helpers are typed by the loop's input type (they take and return it)
    helpers: dict[str, str] = {}
    t_in = ctype(in_dt)
    suffix = t_in[:-2]

    def use_helper(m: re.Match[str]) -> str:
        key = m.group(1)
        if in_dt.kind == "c":
            return _complex_helper(key, d, in_dt, helpers) + "("
        fname = f"npg_{key.rsplit('_', 1)[0] if key.endswith(('_s', '_u', '_f', '_i')) else key}_{suffix}"
        src = _HELPERS[key].format(inline=d.inline, T=t_in, U=_wide_unsigned(in_dt), S=suffix)
        helpers[fname] = _dialectize(src, d, in_dt)
        return fname + "("

    text = re.sub(r"@(\w+)\(", use_helper, template)
    text = text.format(*operands, T=ctype(out_dt), U=_wide_unsigned(out_dt) if out_dt.kind in "iu" else "u32_t",
                       R=_real_ctype(in_dt), MK=complexmath.COMPLEX_TYPES.get(ctype(out_dt), ("", ""))[1])
    text = _dialectize(text, d, in_dt)
    if out_dt.kind == "c":
        return f"({text})", helpers  # (C casts no struct, not even to its own type)
    if is_half(out_dt):
        return f"npg_round_f16({text})", helpers  # (NumPy rounds each float16 result computed in float32)
    return f"(({ctype(out_dt)}){text})", helpers


def _complex_helper(key: str, d: Dialect, dtype: numpy.dtype, helpers: dict[str, str]) -> str:
    """Add complex helper ``key`` for ``dtype`` (and what it calls) to ``helpers``; its name."""
    if key in ("cmul", "cmul_flags") and numpy_complex_product_fuses(dtype):
        key = "cmul_fma" + key[4:]
    for name, src in complexmath.sources(key, d.inline, ctype(dtype)).items():
        helpers[name] = _dialectize(src, d, dtype)
    return f"npg_{key}_{ctype(dtype)[:-2]}"


_product_rounding: dict[numpy.dtype, bool | None] = {}


def numpy_complex_product_fuses(dtype: numpy.dtype) -> bool | None:
    """Whether the host NumPy's complex multiply (and square) of ``dtype`` rounds with FMA.

    NumPy's complex multiply and square loops: with FMA (the SIMD loops of hosts that have it,
    x86-64-v3 and newer) the real part is fma(ar, br, -(ai*bi)) and the imaginary part
    fma(ar, bi, ai*br); without, both are plain products and sums. True or False when its results
    on probe values match one of the two formulas exactly, None when they match neither (then
    npgpu can't promise NumPy's digits)."""
    dtype = numpy.dtype(dtype)
    if dtype in _product_rounding:
        return _product_rounding[dtype]
    real = numpy.empty(0, dtype).real.dtype.type
    rng = numpy.random.default_rng(12345)
    x = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)
    y = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)

    def fma(a: Any, b: Any, c: Any) -> Any:  # a*b + c rounded once, to ``real``
        exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        return real(float(exact)) if real is numpy.float64 else real(numpy.float64(float(exact)))

    def product(a: numpy.ndarray, b: numpy.ndarray, fused: bool) -> tuple[numpy.ndarray, numpy.ndarray]:
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if not fused:
            return ar * br - ai * bi, ar * bi + ai * br
        re = numpy.array([fma(p, q, -(s * t)) for p, q, s, t in zip(ar, br, ai, bi)], real)
        im = numpy.array([fma(p, q, s * t) for p, q, s, t in zip(ar, bi, ai, br)], real)
        return re, im

    answer = None
    for fused in (True, False):
        checks = ((numpy.multiply(x, y), x, y), (numpy.square(x), x, x))
        if all(numpy.array_equal(got.real, re) and numpy.array_equal(got.imag, im)
               for got, a, b in checks for re, im in (product(a, b, fused),)):
            answer = fused
            break
    _product_rounding[dtype] = answer
    return answer


# -- reductions -------------------------------------------------------------------------------
def reduction_identity(op: str, dtype: numpy.dtype) -> numpy.generic:
    """The value a reduction with ``op`` starts from, in ``dtype``. A float sum starts from -0.0,
    the additive identity that keeps NumPy's sign of a sum of negative zeros (0.0 + -0.0 is 0.0)."""
    dtype = numpy.dtype(dtype)
    if op in ("add", "logical_or", "bitwise_or", "bitwise_xor"):
        return dtype.type(-0.0) if dtype.kind in "fc" and op == "add" else dtype.type(0)
    if op in ("multiply", "logical_and"):
        return dtype.type(1)
    if op == "bitwise_and":
        return dtype.type(-1) if dtype.kind == "i" else dtype.type(numpy.iinfo(dtype).max)
    if dtype.kind == "b":
        return dtype.type(op in ("minimum", "fmin", "argmin"))
    if dtype.kind == "f":
        if op in ("fmax", "fmin"):
            return dtype.type(numpy.nan)
        return dtype.type(-numpy.inf if op in ("maximum", "argmax") else numpy.inf)
    info = numpy.iinfo(dtype)
    return dtype.type(info.min if op in ("maximum", "fmax", "argmax") else info.max)


def identity_literal(op: str, dtype: numpy.dtype) -> str | None:
    """``reduction_identity`` as C text, for the operators with UfuncFacts.constant_identity (else None)."""
    entry = UFUNCS.get(op)
    if entry is None or not entry.constant_identity:
        return None
    value = reduction_identity(op, dtype)
    if numpy.dtype(dtype).kind == "c":
        make = complexmath.COMPLEX_TYPES[ctype(dtype)][1]
        return f"{make}({repr(float(value.real))}, {repr(float(value.imag))})"
    if numpy.dtype(dtype).kind == "f":
        return "-0.0" if value == 0 else repr(float(value))
    return f"(({ctype(numpy.dtype(dtype))}){int(value)})"


# -- casts ------------------------------------------------------------------------------------
# C leaves a float -> integer conversion undefined when the value doesn't fit (devices saturate:
# CUDA, and PoCL for narrow types); NumPy on x86-64 converts through the processor's truncating
# instruction, whose out-of-range and NaN result is the most negative int32 (or int64), and
# converts to 8- and 16-bit types through int32, wrapping: 130.0 -> int8 is -126; to uint32 through
# int64 (-2.5 -> 4294967294, where devices give 0 or 4294967295); to uint64 through int64 below
# 2**63, and from 2**63 up by converting x - 2**63 and setting the top bit. Generated casts spell
# that rule out, where the host's NumPy follows it (probed once).
_FLOAT_TO_INT_VIA = {"i1": "i4", "i2": "i4", "u1": "i4", "u2": "i4", "i4": "i4", "i8": "i8", "u4": "i8", "u8": "i8"}
_LIMITS = {"i4": ("2147483648.0", "(-2147483647 - 1)"), "i8": ("9223372036854775808.0", "(-9223372036854775807L - 1)")}
_x86_casts: list[bool] = []


def numpy_casts_like_x86() -> bool:
    """Whether the host NumPy's out-of-range float -> int casts give x86-64's results."""
    if not _x86_casts:  # (the caller's errstate may raise: the probe's invalid casts are its own)
        with warnings.catch_warnings(), numpy.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            probe = numpy.array([130.0, 1e10, numpy.nan, -3e9])
            narrow = probe.astype(numpy.int8).tolist() == [-126, 0, 0, 0]
            wide = probe.astype(numpy.int32).tolist() == [130, -(2**31), -(2**31), -(2**31)]
            unsigned = numpy.array([-2.5, numpy.nan, 2.0**63, 1e20]).astype(numpy.uint64).tolist() == \
                [2**64 - 2, 2**63, 2**63, 0] and numpy.array([-2.5]).astype(numpy.uint32).tolist() == [2**32 - 2]
        _x86_casts.append(narrow and wide and unsigned)
    return _x86_casts[0]


def has_cast(source: numpy.dtype, target: numpy.dtype) -> bool:
    """Whether ``cast`` converts ``source`` to ``target`` in generated code (an integer wider than a
    byte to float16 stays NumPy's: its overflow warning)."""
    source, target = numpy.dtype(source), numpy.dtype(target)
    return not (is_half(target) and source.kind in "iu" and source.itemsize > 1)


def cast(expression: str, source: numpy.dtype, target: numpy.dtype, dialect: str) -> str:
    """C for ``expression`` (of dtype ``source``) converted as NumPy converts it to ``target``."""
    ct = ctype(target)
    if source.kind == "c":  # (complex to real: NumPy warns ComplexWarning; the backends keep it in NumPy)
        if target.kind == "b":
            return f"(({ct})({expression}.re != 0 || {expression}.im != 0))"
        if target.kind != "c":
            raise KeyError(f"no cast from {source} to {target} in generated code")
        real = _real_ctype(target)
        return f"{complexmath.COMPLEX_TYPES[ct][1]}(({real}){expression}.re, ({real}){expression}.im)"
    if target.kind == "c":
        real = _real_ctype(target)
        return f"{complexmath.COMPLEX_TYPES[ct][1]}(({real}){expression}, ({real})0)"
    if target.kind == "b":
        return f"(({ct})({expression} != 0))"  # C truncates 0.5 to 0; NumPy's bool is "nonzero"
    if is_half(target):  # (a float64 rounds to half directly, as NumPy does: not through float32)
        if source == numpy.float64:
            return f"npg_h2f(npg_d2h({expression}))"
        if not has_cast(source, target):
            raise KeyError(f"no cast from {source} to {target} in generated code")
        return f"npg_round_f16((float)({expression}))"
    via = _FLOAT_TO_INT_VIA.get(target.str[1:]) if source.kind == "f" else None
    if via is None or not numpy_casts_like_x86():
        return f"(({ct}){expression})"
    limit, smallest = _LIMITS[via]
    if dialect == "cuda" and via == "i8":
        smallest = "(-9223372036854775807LL - 1)"
    vt = CTYPES[via]
    fits = f"({expression} >= -{limit} && {expression} < {limit})"
    converted = f"(({ct})({fits} ? ({vt}){expression} : ({vt}){smallest}))"
    if target.str[1:] != "u8":
        return converted
    high = f"({expression} - {limit})"  # (from 2**63 up: at least 0, so only its top needs a test)
    top = f"((({ct})({high} < {limit} ? ({vt}){high} : ({vt}){smallest})) ^ (({ct})1 << 63))"
    return f"({expression} >= {limit} ? {top} : {converted})"


def typedefs(dialect: str, complex_values: bool = False, half: bool = False, fp64: bool = False) -> str:
    """The typedef block every generated kernel starts with (``complex_values``: with the complex
    struct types; ``half``: with float16's type and its conversions, from float64 too with ``fp64``)."""
    text = "\n".join(f"typedef {c} {alias};" for alias, c in DIALECTS[dialect].typedefs.items())
    if half:
        if dialect != "opencl":
            raise KeyError("float16 kernels are OpenCL's")
        text += "\n" + HALF_TYPEDEFS + (HALF_FROM_DOUBLE if fp64 else "")
    return text + "\n" + complexmath.typedefs(dialect) if complex_values else text


# float16 in OpenCL C without cl_khr_fp16: values are floats holding a half's value exactly, stored
# as the half's bits; npg_f2h rounds to nearest even (subnormals, overflow to inf; a NaN keeps its
# top payload bits, a nonzero payload, as NumPy's casts do); npg_d2h rounds a double directly.
HALF_TYPEDEFS = """typedef float f16_t;
inline float npg_h2f(ushort h) {
  uint s = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
  if (e == 0u) { float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }
  return as_float(s | (e == 31u ? 0x7f800000u : (e + 112u) << 23) | (m << 13));
}
inline ushort npg_f2h(float f) {
  uint x = as_uint(f), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) { uint n = 0x7c00u | ((a >> 13) & 0x3ffu); return (ushort)(s | (n == 0x7c00u ? 0x7c01u : n)); }
  if (a >= 0x47800000u) return (ushort)(s | 0x7c00u);
  if (a >= 0x38800000u) {
    uint h = (a >> 13) - (112u << 10), r = a & 0x1fffu;
    if (r > 0x1000u || (r == 0x1000u && (h & 1u))) h++;
    return (ushort)(s | h);
  }
  if (a <= 0x33000000u) return (ushort)s;
  uint sh = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u, h = m >> sh, r = m & ((1u << sh) - 1u);
  uint hw = 1u << (sh - 1u);
  if (r > hw || (r == hw && (h & 1u))) h++;
  return (ushort)(s | h);
}
inline float npg_round_f16(float f) { return npg_h2f(npg_f2h(f)); }
"""
HALF_FROM_DOUBLE = """inline ushort npg_d2h(double d) {
  ulong x = as_ulong(d), a = x & 0x7fffffffffffffffUL;
  uint s = (uint)(x >> 48) & 0x8000u;
  if (a > 0x7ff0000000000000UL) {
    uint n = 0x7c00u | (uint)((a >> 42) & 0x3ffUL);
    return (ushort)(s | (n == 0x7c00u ? 0x7c01u : n));
  }
  if (a >= 0x40f0000000000000UL) return (ushort)(s | 0x7c00u);
  if (a >= 0x3f10000000000000UL) {
    ulong h = (a >> 42) - (1008UL << 10), r = a & 0x3ffffffffffUL;
    if (r > 0x20000000000UL || (r == 0x20000000000UL && (h & 1UL))) h++;
    return (ushort)(s | (uint)h);
  }
  if (a <= 0x3e60000000000000UL) return (ushort)s;
  ulong sh = 1051UL - (a >> 52), m = (a & 0xfffffffffffffUL) | 0x10000000000000UL, h = m >> sh;
  ulong r = m & ((1UL << sh) - 1UL), hw = 1UL << (sh - 1UL);
  if (r > hw || (r == hw && (h & 1UL))) h++;
  return (ushort)(s | (uint)h);
}
"""



def error_table(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> dict[int, str]:
    """{category: condition template} for ``ufunc``'s ``loop``: where NumPy raises which flag."""
    entry = UFUNCS.get(ufunc.__name__)
    table = (_for_kind(entry.errors, loop[0].kind) if entry is not None else None) or {}
    if ufunc is numpy.power and table is _POWER and not _zero_to_minus_inf_divides(loop[0].char):
        return _FLOAT_POWER
    return table


@functools.cache
def _zero_to_minus_inf_divides(char: str) -> bool:
    """Whether NumPy's power of this float type raises divide by zero for 0 ** -inf, which C99
    leaves to the platform ("may raise"): NumPy's AVX-512 float64 loop does, glibc's pow does not
    (float32's powf does). Asked of NumPy here, once per type, on arrays as a program passes them."""
    flagged = False
    for n in (1, 17):
        with numpy.errstate(divide="raise", invalid="ignore", over="ignore"):
            try:
                numpy.power(numpy.zeros(n, char), numpy.full(n, -numpy.inf, char))
            except FloatingPointError:
                flagged = True
    return flagged


def error_categories(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> int:
    """The categories (bits) ``ufunc``'s ``loop`` can raise."""
    mask = 0
    for category in error_table(ufunc, loop):
        mask |= category
    return mask


def cast_error_table(src: numpy.dtype, dst: numpy.dtype) -> dict[int, str]:
    """{category: condition template} of a cast from ``src`` to ``dst``: a narrowing float cast
    overflows where a finite value becomes infinite; a float cast to an integer is invalid where
    the host's C conversion is (NaN, infinities, values outside the integer it converts through:
    int32 for the narrow integers, so 300.0 into int8 wraps silently and 3e9 warns; int64 for the
    others, from 2**64 up and below -2**63 for uint64), as NumPy's "invalid value encountered in cast"."""
    if src.kind == "f" and dst.kind == "f" and dst.itemsize < src.itemsize:
        return NARROWING_CAST_ERRORS
    via = _FLOAT_TO_INT_VIA.get(dst.str[1:]) if src.kind == "f" else None
    if via is None:
        return {}
    limit = _LIMITS[via][0]
    top = "18446744073709551616.0" if dst.str[1:] == "u8" else limit
    return {INVALID: f"(!({{0}} >= -{limit} && {{0}} < {top}))"}


def cast_error_categories(src: numpy.dtype, dst: numpy.dtype) -> int:
    """The categories a cast from ``src`` to ``dst`` can raise (cast_error_table's)."""
    mask = 0
    for category in cast_error_table(src, dst):
        mask |= category
    return mask


def render_condition(template: str, operands: list[str], results: list[str], in_dtype: numpy.dtype,
                     dialect: str, helpers: dict[str, str] | None = None) -> str:
    """C text of an error condition (UfuncFacts.errors) over operand and result expressions."""
    minimum = ""
    if in_dtype.kind == "i":
        minimum = f"(({ctype(in_dtype)})({int(numpy.iinfo(in_dtype).min) + 1}) - 1)"
    if "@" in template:  # (complex loops: their flags come from a helper; ``helpers`` gets it)
        d = DIALECTS[dialect]
        found = helpers if helpers is not None else {}
        template = re.sub(r"@(\w+)\(", lambda m: _complex_helper(m.group(1), d, in_dtype, found) + "(", template)
    text = template.format(*operands, r=results[0], r1=results[-1], MIN=minimum)
    return _dialectize(text, DIALECTS[dialect], in_dtype)
