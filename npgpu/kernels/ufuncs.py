"""The ufunc table: for each NumPy ufunc and dtype loop, a C expression template.

Shared by the OpenCL and CUDA emitters; dialect differences live in ``DIALECTS`` only.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy

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
    return dtype.isnative and (dtype.kind == "b" or (dtype.kind in "iuf" and dtype.str[1:] in CTYPES))


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


def _h(helper: str, args: str = "{0}, {1}") -> str:
    return "@" + helper + "(" + args + ")"


_SWRAP = "(({T})(({U}){0} {op} ({U}){1}))"


def _wrap(op: str) -> str:
    return _SWRAP.replace("{op}", op)


_NAN_MAX = "((({0}) > ({1}) || isnan({0})) ? ({0}) : ({1}))"
_NAN_MIN = "((({0}) < ({1}) || isnan({0})) ? ({0}) : ({1}))"

# -- THE TABLE ----------------------------------------------------------------
# ufunc name -> {kinds of the first loop input: template, or a tuple per output}.
# Kinds: b bool, i signed int, u unsigned int, f float.  Operands are {0}, {1}, ...;
# {T} is the output's C type, {U} the wide unsigned type, @name(...) a helper above.
TABLE: dict[str, dict[str, str | tuple[str, ...]]] = {
    "add": {"b": "({0} || {1})", "iu": _wrap("+"), "f": "({0} + {1})"},
    "subtract": {"iu": _wrap("-"), "f": "({0} - {1})"},
    "multiply": {"b": "({0} && {1})", "iu": _wrap("*"), "f": "({0} * {1})"},
    "divide": {"f": "({0} / {1})"},
    "true_divide": {"f": "({0} / {1})"},
    "floor_divide": {"i": _h("floordiv_s"), "u": _h("floordiv_u"), "f": _h("floordiv_f")},
    "remainder": {"i": _h("remainder_s"), "u": _h("remainder_u"), "f": _h("remainder_f")},
    "fmod": {"i": _h("fmod_s"), "u": _h("remainder_u"), "f": "fmod({0}, {1})"},
    "divmod": {
        "i": (_h("floordiv_s"), _h("remainder_s")),
        "u": (_h("floordiv_u"), _h("remainder_u")),
        "f": (_h("floordiv_f"), _h("remainder_f")),
    },
    "power": {"iu": _h("power_i"), "f": "pow({0}, {1})"},  # (a constant exponent: CONSTANT_OPERAND below)
    "float_power": {"f": "pow({0}, {1})"},
    "negative": {"iu": "(({T})(({U})0 - ({U}){0}))", "f": "(-{0})"},
    "positive": {"iuf": "({0})"},
    "square": {"iu": _wrap("*").replace("{1}", "{0}"), "f": "({0} * {0})"},
    "reciprocal": {"f": "(({T})1 / {0})"},
    "absolute": {"b": "({0})", "i": "({0} < 0 ? ({T})(({U})0 - ({U}){0}) : {0})", "u": "({0})", "f": "fabs({0})"},
    "fabs": {"f": "fabs({0})"},
    "sign": {
        "i": "(({0} > 0) - ({0} < 0))",
        "u": "({0} > 0)",
        "f": "({0} > 0 ? ({T})1 : ({0} < 0 ? ({T})-1 : ({0} == 0 ? ({T})0 : {0})))",
    },
    "conjugate": {"biuf": "({0})"},
    "maximum": {"biu": "({0} > {1} ? {0} : {1})", "f": _NAN_MAX},
    "minimum": {"biu": "({0} < {1} ? {0} : {1})", "f": _NAN_MIN},
    "fmax": {"biu": "({0} > {1} ? {0} : {1})", "f": "fmax({0}, {1})"},
    "fmin": {"biu": "({0} < {1} ? {0} : {1})", "f": "fmin({0}, {1})"},
    "clip": {
        # minimum(maximum(x, lo), hi), as NumPy: hi where lo > hi
        "biu": "({0} < {1} ? ({1} > {2} ? {2} : {1}) : ({0} > {2} ? {2} : {0}))",
        "f": "(isnan({0}) ? {0} : " + _NAN_MIN.format(_NAN_MAX.format("{0}", "{1}"), "{2}") + ")",
    },
    "equal": {"biuf": "({0} == {1})"},
    "not_equal": {"biuf": "({0} != {1})"},
    "less": {"biuf": "({0} < {1})"},
    "less_equal": {"biuf": "({0} <= {1})"},
    "greater": {"biuf": "({0} > {1})"},
    "greater_equal": {"biuf": "({0} >= {1})"},
    "logical_and": {"biuf": "({0} != 0 && {1} != 0)"},
    "logical_or": {"biuf": "({0} != 0 || {1} != 0)"},
    "logical_xor": {"biuf": "(({0} != 0) != ({1} != 0))"},
    "logical_not": {"biuf": "({0} == 0)"},
    "bitwise_and": {"biu": "({0} & {1})"},
    "bitwise_or": {"biu": "({0} | {1})"},
    "bitwise_xor": {"biu": "({0} ^ {1})"},
    "invert": {"b": "(!{0})", "iu": "(~{0})"},
    "left_shift": {"iu": _h("lshift")},
    "right_shift": {"iu": _h("rshift")},
    "gcd": {"iu": _h("gcd")},
    "lcm": {"iu": _h("lcm")},
    "bitwise_count": {"iu": _h("popcount", "{0}")},
    "isnan": {"biu": "0", "f": "isnan({0})"},
    "isinf": {"biu": "0", "f": "isinf({0})"},
    "isfinite": {"biu": "1", "f": "isfinite({0})"},
    "signbit": {"f": "signbit({0})"},
    "copysign": {"f": "copysign({0}, {1})"},
    "nextafter": {"f": "nextafter({0}, {1})"},
    "spacing": {"f": _h("spacing", "{0}")},
    # NumPy clamps a 64-bit exponent to int's range
    "ldexp": {"f": "ldexp({0}, (int)({1} > 2147483647 ? 2147483647 : ({1} < -2147483647 ? -2147483647 : {1})))"},
    "frexp": {"f": (_h("frexp_mantissa", "{0}"), _h("frexp_exponent", "{0}"))},
    # the fractional part keeps the sign of x (modf(-2.0) is (-0.0, -2.0)); inf's is a signed 0
    "modf": {"f": ("copysign(isinf({0}) ? ({T})0 : {0} - trunc({0}), {0})", "trunc({0})")},
    "heaviside": {"f": "(isnan({0}) ? {0} : ({0} == 0 ? {1} : ({0} < 0 ? ({T})0 : ({T})1)))"},
    "arctan2": {"f": "atan2({0}, {1})"},
    "hypot": {"f": "hypot({0}, {1})"},
    "logaddexp": {"f": _h("logaddexp")},
    "logaddexp2": {"f": _h("logaddexp2")},
    "sqrt": {"f": "sqrt({0})"},
    "cbrt": {"f": "cbrt({0})"},
    "exp": {"f": "exp({0})"},
    "exp2": {"f": "exp2({0})"},
    "expm1": {"f": "expm1({0})"},
    "log": {"f": "log({0})"},
    "log2": {"f": "log2({0})"},
    "log10": {"f": "log10({0})"},
    "log1p": {"f": "log1p({0})"},
    "sin": {"f": "sin({0})"},
    "cos": {"f": "cos({0})"},
    "tan": {"f": "tan({0})"},
    "arcsin": {"f": "asin({0})"},
    "arccos": {"f": "acos({0})"},
    "arctan": {"f": "atan({0})"},
    "sinh": {"f": "sinh({0})"},
    "cosh": {"f": "cosh({0})"},
    "tanh": {"f": "tanh({0})"},
    "arcsinh": {"f": "asinh({0})"},
    "arccosh": {"f": "acosh({0})"},
    "arctanh": {"f": "atanh({0})"},
    "floor": {"f": "floor({0})"},
    "ceil": {"f": "ceil({0})"},
    "trunc": {"f": "trunc({0})"},
    "rint": {"f": "rint({0})"},
    "deg2rad": {"f": "({0} * ({T})0.017453292519943295769)"},
    "radians": {"f": "({0} * ({T})0.017453292519943295769)"},
    "rad2deg": {"f": "({0} * ({T})57.295779513082320877)"},
    "degrees": {"f": "({0} * ({T})57.295779513082320877)"},
}

# Templates for a ufunc whose operand 1 is a kernel scalar (NumPy's loop sees a constant, stride 0,
# and special-cases its value: numpy.power(x, 0.5) is sqrt(x), -1 is 1/x, 2 is x*x, 1 is x, where
# pow differs in signed zeros, infinities or the last bit). The condition is on a kernel argument,
# the same for every element; in vector code it selects lanes, and every lane agrees.
CONSTANT_OPERAND: dict[str, dict[str, str]] = {
    "power": {"f": "({1} == ({T})0.5 ? sqrt({0}) : ({1} == ({T})-1 ? ({T})1 / {0} : ({1} == ({T})2 ? {0} * {0} "
                   ": ({1} == ({T})1 ? {0} : pow({0}, {1})))))"},
}

# Results NumPy computes with correctly rounded or exactly specified operations: these
# match NumPy bit for bit on IEEE devices with FP_CONTRACT OFF.  Others are libm-grade.
EXACT = frozenset(
    "add subtract multiply true_divide negative positive square absolute fabs sign maximum minimum fmax fmin "
    "sqrt floor ceil trunc rint copysign".split()
)


def _lookup(ufunc_name: str, kind: str, constant: bool = False) -> str | tuple[str, ...] | None:
    entry = CONSTANT_OPERAND.get(ufunc_name) if constant else None
    if entry is not None and any(kind in kinds for kinds in entry):
        return next(template for kinds, template in entry.items() if kind in kinds)
    entry = TABLE.get(ufunc_name)
    if entry is None:
        return None
    for kinds, template in entry.items():
        if kind in kinds:
            return template
    return None


def _name(ufunc: numpy.ufunc) -> str:
    return ufunc.__name__


def supports_loop(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> bool:
    """True when the table has a template for this ufunc and resolved loop dtypes."""
    if not all(is_supported_dtype(dt) for dt in loop):
        return False
    template = _lookup(_name(ufunc), loop[0].kind)
    if template is None:
        return False
    return (len(template) if isinstance(template, tuple) else 1) == ufunc.nout


def float_suffix_needed(dialect: Dialect, loop: tuple[numpy.dtype, ...]) -> bool:
    return dialect.float_suffix and any(dt == numpy.float32 for dt in loop[: max(1, len(loop))])


def _dialectize(text: str, dialect: Dialect, compute_dtype: numpy.dtype) -> str:
    if dialect.float_suffix and compute_dtype == numpy.float32:
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
    CONSTANT_OPERAND).
    """
    d = DIALECTS[dialect]
    nin = ufunc.nin
    out_dt = loop[nin + out_index]
    in_dt = loop[0]
    template = _lookup(_name(ufunc), in_dt.kind, constant_second and nin == 2)
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
        fname = f"npg_{key.rsplit('_', 1)[0] if key.endswith(('_s', '_u', '_f', '_i')) else key}_{suffix}"
        src = _HELPERS[key].format(inline=d.inline, T=t_in, U=_wide_unsigned(in_dt), S=suffix)
        helpers[fname] = _dialectize(src, d, in_dt)
        return fname + "("

    text = re.sub(r"@(\w+)\(", use_helper, template)
    text = text.format(*operands, T=ctype(out_dt), U=_wide_unsigned(out_dt) if out_dt.kind in "iu" else "u32_t")
    text = _dialectize(text, d, in_dt)
    return f"(({ctype(out_dt)}){text})", helpers


# -- reductions -------------------------------------------------------------------------------
#: Reduction operators whose start value doesn't depend on the data (the others start from inf,
#: the dtype's limits, or NaN for fmax/fmin: fmax(nan, x) == x, and an all-NaN slice stays NaN).
CONSTANT_IDENTITY = frozenset({"add", "multiply", "logical_or", "logical_and", "bitwise_or", "bitwise_xor",
                               "bitwise_and"})


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
    """``reduction_identity`` as C text, for the operators in CONSTANT_IDENTITY (else None)."""
    if op not in CONSTANT_IDENTITY:
        return None
    value = reduction_identity(op, dtype)
    if numpy.dtype(dtype).kind == "f":
        return "-0.0" if value == 0 else repr(float(value))
    return f"(({ctype(numpy.dtype(dtype))}){int(value)})"


# -- casts ------------------------------------------------------------------------------------
# C leaves a float -> integer conversion undefined when the value doesn't fit (devices saturate:
# CUDA, and PoCL for narrow types); NumPy on x86-64 converts through the processor's truncating
# instruction, whose out-of-range and NaN result is the most negative int32 (or int64), and
# converts to 8- and 16-bit types through int32, wrapping: 130.0 -> int8 is -126. Generated casts
# spell that rule out, where the host's NumPy follows it (probed once).
_FLOAT_TO_INT_VIA = {"i1": "i4", "i2": "i4", "u1": "i4", "u2": "i4", "i4": "i4", "i8": "i8"}
_LIMITS = {"i4": ("2147483648.0", "(-2147483647 - 1)"), "i8": ("9223372036854775808.0", "(-9223372036854775807L - 1)")}
_x86_casts: list[bool] = []


def numpy_casts_like_x86() -> bool:
    """Whether the host NumPy's out-of-range float -> int casts give x86-64's results."""
    if not _x86_casts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            probe = numpy.array([130.0, 1e10, numpy.nan, -3e9])
            narrow = probe.astype(numpy.int8).tolist() == [-126, 0, 0, 0]
            wide = probe.astype(numpy.int32).tolist() == [130, -(2**31), -(2**31), -(2**31)]
        _x86_casts.append(narrow and wide)
    return _x86_casts[0]


def cast(expression: str, source: numpy.dtype, target: numpy.dtype, dialect: str) -> str:
    """C for ``expression`` (of dtype ``source``) converted as NumPy converts it to ``target``."""
    ct = ctype(target)
    if target.kind == "b":
        return f"(({ct})({expression} != 0))"  # C truncates 0.5 to 0; NumPy's bool is "nonzero"
    via = _FLOAT_TO_INT_VIA.get(target.str[1:]) if source.kind == "f" else None
    if via is None or not numpy_casts_like_x86():
        return f"(({ct}){expression})"
    limit, smallest = _LIMITS[via]
    if dialect == "cuda" and via == "i8":
        smallest = "(-9223372036854775807LL - 1)"
    vt = CTYPES[via]
    fits = f"({expression} >= -{limit} && {expression} < {limit})"
    return f"(({ct})({fits} ? ({vt}){expression} : ({vt}){smallest}))"


def typedefs(dialect: str) -> str:
    """The typedef block every generated kernel starts with."""
    return "\n".join(f"typedef {c} {alias};" for alias, c in DIALECTS[dialect].typedefs.items())


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
_QUOTIENT_OVER = "(isinf({r}) && isfinite({0}) && {1} != 0)"
_ARITHMETIC = {OVER: _INF_2, INVALID: _NAN_2}
_DIVISION = {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER, INVALID: _NAN_2}
# NumPy's float floor division also raises invalid where the quotient overflows (floor(inf) - inf)
_FLOOR_INVALID = "(!isnan({0}) && !isnan({1}) && (isnan({r}) || (isinf({r}) && isfinite({0}) && {1} != 0)))"
_POWER = {DIVIDE: "(isinf({r}) && {0} == 0)", OVER: "(isinf({r}) && isfinite({0}) && {0} != 0 && isfinite({1}))",
          INVALID: _NAN_2}
_FLOAT_POWER = {**_POWER, DIVIDE: "(isinf({r}) && {0} == 0 && isfinite({1}))"}
_INT_DIVISION = {DIVIDE: "({1} == 0)", OVER: "({1} == -1 && {0} == {MIN})"}
_LOG = {DIVIDE: "({0} == 0)", INVALID: "({0} < 0)"}

#: ufunc name -> {kinds of the loop's first input: {category: condition}}
ERRORS: dict[str, dict[str, dict[int, str]]] = {
    "add": {"f": _ARITHMETIC},
    "subtract": {"f": _ARITHMETIC},
    "multiply": {"f": _ARITHMETIC},
    "divide": {"f": _DIVISION},
    "true_divide": {"f": _DIVISION},
    "floor_divide": {"i": _INT_DIVISION, "u": {DIVIDE: "({1} == 0)"},
                     "f": {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER, INVALID: _FLOOR_INVALID}},
    "remainder": {"iu": {DIVIDE: "({1} == 0)"}, "f": {INVALID: _NAN_2}},
    "fmod": {"iu": {DIVIDE: "({1} == 0)"}, "f": {INVALID: _NAN_2}},
    "divmod": {"i": _INT_DIVISION, "u": {DIVIDE: "({1} == 0)"},
               "f": {DIVIDE: _BY_ZERO, OVER: _QUOTIENT_OVER,
                     INVALID: "(" + _FLOOR_INVALID + " || (isnan({r1}) && !isnan({0}) && !isnan({1})))"}},
    "power": {"f": _POWER},
    "float_power": {"f": _FLOAT_POWER},
    "square": {"f": {OVER: _INF_1}},
    "reciprocal": {"f": {DIVIDE: "({0} == 0)", OVER: "(isinf({r}) && isfinite({0}) && {0} != 0)"}},
    "exp": {"f": {OVER: _INF_1}},
    "exp2": {"f": {OVER: _INF_1}},
    "expm1": {"f": {OVER: _INF_1}},
    "sinh": {"f": {OVER: _INF_1}},
    "cosh": {"f": {OVER: _INF_1}},
    "rad2deg": {"f": {OVER: _INF_1}},
    "degrees": {"f": {OVER: _INF_1}},
    "log": {"f": _LOG},
    "log2": {"f": _LOG},
    "log10": {"f": _LOG},
    "log1p": {"f": {DIVIDE: "({0} == -1)", INVALID: "({0} < -1)"}},
    "sqrt": {"f": {INVALID: "({0} < 0)"}},
    "sin": {"f": {INVALID: "isinf({0})"}},
    "cos": {"f": {INVALID: "isinf({0})"}},
    "tan": {"f": {INVALID: "isinf({0})"}},
    "arcsin": {"f": {INVALID: "(fabs({0}) > 1)"}},
    "arccos": {"f": {INVALID: "(fabs({0}) > 1)"}},
    "arccosh": {"f": {INVALID: "({0} < 1)"}},
    "arctanh": {"f": {DIVIDE: "(fabs({0}) == 1)", INVALID: "(fabs({0}) > 1)"}},
    "hypot": {"f": {OVER: _INF_2}},
    "nextafter": {"f": {OVER: _INF_2}},
    "spacing": {"f": {OVER: _INF_1}},
    "ldexp": {"f": {OVER: _INF_1}},
}

#: A float cast to a narrower float overflows where a finite value becomes infinite.
NARROWING_CAST_ERRORS = {OVER: _INF_1}

#: Float loops whose result is never finite when operand i is not (inf or NaN in, inf or NaN
#: out): an error upstream of such an operand shows in the result, so kernels test the final
#: value's finiteness first and look at each operation only when that test fails.
PROPAGATES_NONFINITE: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(("add", "subtract", "multiply", "hypot"), (0, 1)),
    **dict.fromkeys(("divide", "true_divide", "floor_divide", "remainder", "fmod", "copysign", "negative",
                     "positive", "absolute", "fabs", "square", "sqrt", "cbrt", "sin", "cos", "tan", "log", "log2",
                     "log10", "log1p", "floor", "ceil", "trunc", "rint", "deg2rad", "radians", "rad2deg",
                     "degrees", "sinh", "cosh", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh"), (0,)),
}


def error_table(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> dict[int, str]:
    """{category: condition template} for ``ufunc``'s ``loop``: where NumPy raises which flag."""
    entry = ERRORS.get(ufunc.__name__)
    if entry is not None:
        kind = loop[0].kind
        for kinds, conditions in entry.items():
            if kind in kinds:
                return conditions
    return {}


def error_categories(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> int:
    """The categories (bits) ``ufunc``'s ``loop`` can raise."""
    mask = 0
    for category in error_table(ufunc, loop):
        mask |= category
    return mask


def cast_error_categories(src: numpy.dtype, dst: numpy.dtype) -> int:
    """The categories a cast from ``src`` to ``dst`` can raise (a narrowing float cast overflows)."""
    return OVER if src.kind == "f" and dst.kind == "f" and dst.itemsize < src.itemsize else 0


def render_condition(template: str, operands: list[str], results: list[str], in_dtype: numpy.dtype,
                     dialect: str) -> str:
    """C text of an error condition of ERRORS over operand and result expressions."""
    minimum = ""
    if in_dtype.kind == "i":
        minimum = f"(({ctype(in_dtype)})({int(numpy.iinfo(in_dtype).min) + 1}) - 1)"
    text = template.format(*operands, r=results[0], r1=results[-1], MIN=minimum)
    return _dialectize(text, DIALECTS[dialect], in_dtype)
