"""NumPy's complex loops as C helper functions: one text for OpenCL C and CUDA C.

A complex value in generated code is a struct of two reals, ``{re, im}`` (``c64_t``, ``c128_t``:
NumPy's memory layout and alignment), built with ``npg_c64(re, im)`` / ``npg_c128(re, im)``.
Each helper follows the operations of NumPy's own loop (numpy/_core/src/umath/loops.c.src and
npymath), in the same order, each rounded as NumPy rounds it (kernels compile without
contraction). Helper bodies are written once over primitive operations (``MUL(x, y)``,
``ADD``, ``SUB``, ``DIV``, ``FMA``, the comparisons ``LT``, ``LE``, ``GT``, ``GE``): a value form
computes the result; a flag form also ORs into ``*fl`` the floating-point flags IEEE arithmetic
raises at each step (NumPy's errstate categories: divide 1, overflow 2, invalid 8; underflow is
not detected), so a kernel reports exactly the errors NumPy's loop raises. NumPy's complex
comparison loops compare with the signaling relations (a NaN operand of <, <=, >, >= raises
invalid; == and != don't). tests/test_opencl_complex.py checks values and errors on special values.
"""

from __future__ import annotations

#: Real type alias and constructor of each complex type alias.
COMPLEX_TYPES: dict[str, tuple[str, str]] = {"c64_t": ("f32_t", "npg_c64"), "c128_t": ("f64_t", "npg_c128")}

_ARITH = "((isinf(r) && isfinite(x) && isfinite(y)) ? 2 : 0) | ((isnan(r) && !isnan(x) && !isnan(y)) ? 8 : 0)"
_DIVISION = ("((isinf(r) && isfinite(x) && y == 0) ? 1 : 0) | ((isinf(r) && isfinite(x) && isfinite(y) && y != 0) "
             "? 2 : 0) | ((isnan(r) && !isnan(x) && !isnan(y)) ? 8 : 0)")
_FUSED = ("((isinf(r) && isfinite(x) && isfinite(y) && isfinite(z)) ? 2 : 0) | "
          "((isnan(r) && !isnan(x) && !isnan(y) && !isnan(z)) ? 8 : 0)")
_UNORDERED = "((isnan(x) || isnan(y)) ? 8 : 0)"

#: primitive -> (parameters, value expression, flags of the result r)
_PRIMITIVES: dict[str, tuple[str, str, str]] = {
    "ADD": ("R x, R y", "x + y", _ARITH),
    "SUB": ("R x, R y", "x - y", _ARITH),
    "MUL": ("R x, R y", "x * y", _ARITH),
    "DIV": ("R x, R y", "x / y", _DIVISION),
    "FMA": ("R x, R y, R z", "fma(x, y, z)", _FUSED),
    "LT": ("R x, R y", "x < y", _UNORDERED),
    "LE": ("R x, R y", "x <= y", _UNORDERED),
    "GT": ("R x, R y", "x > y", _UNORDERED),
    "GE": ("R x, R y", "x >= y", _UNORDERED),
}
_COMPARISON_PRIMITIVES = frozenset({"LT", "LE", "GT", "GE"})


def _lexicographic(op: str, strict: bool) -> str:
    """NumPy's complex ordering (CLT, CLE, CGT, CGE of loops.c.src) of a and b, as C."""
    real = "LT" if op == "<" else "GT"
    imag = real if strict else real[0] + "E"
    return f"(({real}(a.re, b.re) && !isnan(a.im) && !isnan(b.im)) || (a.re == b.re && {imag}(a.im, b.im)))"


# helper -> (return type, parameters, body). R is the real type, T the complex type, MK its constructor.
_BODIES: dict[str, tuple[str, str, str]] = {
    "cadd": ("T", "T a, T b", "return MK(ADD(a.re, b.re), ADD(a.im, b.im));"),
    "csub": ("T", "T a, T b", "return MK(SUB(a.re, b.re), SUB(a.im, b.im));"),
    # NumPy's multiply and square loops without FMA, and with it (the SIMD loops of hosts that have
    # it): ufuncs.numpy_complex_product_fuses says which one the host's NumPy rounds like.
    "cmul": ("T", "T a, T b",
             "return MK(SUB(MUL(a.re, b.re), MUL(a.im, b.im)), ADD(MUL(a.re, b.im), MUL(a.im, b.re)));"),
    "cmul_fma": ("T", "T a, T b", "return MK(FMA(a.re, b.re, -MUL(a.im, b.im)), FMA(a.re, b.im, MUL(a.im, b.re)));"),
    # Smith's algorithm, as NumPy's divide loop; a zero divisor divides each part by zero
    "cdiv": ("T", "T a, T b", """const R abs_br = fabs(b.re), abs_bi = fabs(b.im);
  if (GE(abs_br, abs_bi)) {
    if (abs_br == 0 && abs_bi == 0) return MK(DIV(a.re, abs_br), DIV(a.im, abs_bi));
    const R rat = DIV(b.im, b.re);
    const R scl = DIV((R)1, ADD(b.re, MUL(b.im, rat)));
    return MK(MUL(ADD(a.re, MUL(a.im, rat)), scl), MUL(SUB(a.im, MUL(a.re, rat)), scl));
  }
  const R rat = DIV(b.re, b.im);
  const R scl = DIV((R)1, ADD(b.im, MUL(b.re, rat)));
  return MK(MUL(ADD(MUL(a.re, rat), a.im), scl), MUL(SUB(MUL(a.im, rat), a.re), scl));"""),
    # NumPy's reciprocal loop (Smith's division of 1)
    "crecip": ("T", "T a", """if (LE(fabs(a.im), fabs(a.re))) {
    const R r = DIV(a.im, a.re), d = ADD(a.re, MUL(a.im, r));
    return MK(DIV((R)1, d), DIV(-r, d));
  }
  const R r = DIV(a.re, a.im), d = ADD(MUL(a.re, r), a.im);
  return MK(DIV(r, d), DIV((R)-1, d));"""),
    "clt": ("int", "T a, T b", "return " + _lexicographic("<", True) + ";"),
    "cle": ("int", "T a, T b", "return " + _lexicographic("<", False) + ";"),
    "cgt": ("int", "T a, T b", "return " + _lexicographic(">", True) + ";"),
    "cge": ("int", "T a, T b", "return " + _lexicographic(">", False) + ";"),
    # maximum/minimum keep a NaN of either operand (the first's first); fmax/fmin the other one.
    # (NumPy's loops raise nothing here: the table gives them no errors, their flag forms go unused)
    "cmax": ("T", "T a, T b", "return (isnan(a.re) || isnan(a.im) || " + _lexicographic(">", False) + ") ? a : b;"),
    "cmin": ("T", "T a, T b", "return (isnan(a.re) || isnan(a.im) || " + _lexicographic("<", False) + ") ? a : b;"),
    "cfmax": ("T", "T a, T b", "return (isnan(b.re) || isnan(b.im) || " + _lexicographic(">", False) + ") ? a : b;"),
    "cfmin": ("T", "T a, T b", "return (isnan(b.re) || isnan(b.im) || " + _lexicographic("<", False) + ") ? a : b;"),
}

# libm's csqrt, cexp and clog (NumPy calls the C library's), as C99 Annex G specifies their special
# values; finite values computed the way glibc does (scaled where an intermediate would overflow or
# lose digits), to a few ulp of it. These have a value form only; their errors are conditions on the
# operand (ufuncs.py).
_BODIES["csqrt"] = ("T", "T z", """const R x = z.re, y = z.im;
  if (isinf(y)) return MK(INFINITY, y);
  if (isnan(x)) return MK(x, y - y + x);
  if (isinf(x)) {
    if (isnan(y)) return x > 0 ? MK(x, y) : MK(y, copysign((R)INFINITY, y));
    return x > 0 ? MK(x, copysign((R)0, y)) : MK((R)0, copysign(-x, y));
  }
  if (isnan(y)) return MK(y, y);
  if (y == 0) {
    if (x < 0) return MK((R)0, copysign(sqrt(-x), y));
    return MK(fabs(sqrt(x)), copysign((R)0, y));
  }
  if (x == 0) {
    const R ay = fabs(y);
    const R r = ay >= 2 * R_MIN ? sqrt((R)0.5 * ay) : (R)0.5 * sqrt(2 * ay);
    return MK(r, copysign(r, y));
  }
  R ax = x, ay = y;
  int scale = 0;
  if (fabs(ax) > R_MAX / 4 || fabs(ay) > R_MAX / 4) {
    ax = ldexp(ax, -2); ay = ldexp(ay, -2); scale = 1;
  } else if (fabs(ax) < 4 * R_MIN && fabs(ay) < 4 * R_MIN) {
    ax = ldexp(ax, 2 * R_HALF_DIG); ay = ldexp(ay, 2 * R_HALF_DIG); scale = -R_HALF_DIG;
  }
  const R d = hypot(ax, ay);
  R r, s;
  if (ax > 0) {
    r = sqrt((R)0.5 * (d + ax));
    s = (R)0.5 * (ay / r);
  } else {
    s = sqrt((R)0.5 * (d - ax));
    r = fabs((R)0.5 * (ay / s));
  }
  if (scale) { r = ldexp(r, scale); s = ldexp(s, scale); }
  return MK(r, copysign(s, y));""")
_BODIES["cexp"] = ("T", "T z", """const R x = z.re, y = z.im;
  if (isfinite(x)) {
    if (!isfinite(y)) return MK(y - y, y - y);
    R c = 1, s = y;
    if (fabs(y) > R_MIN) { c = cos(y); s = sin(y); }
    R ex = x;
    if (ex > R_EXP_T) {  /* exp(x) = exp(t)^k exp(x - kt): no overflow before the last product */
      const R et = exp(R_EXP_T);
      ex -= R_EXP_T; c *= et; s *= et;
      if (ex > R_EXP_T) { ex -= R_EXP_T; c *= et; s *= et; }
    }
    if (ex > R_EXP_T) return MK(R_MAX * c, R_MAX * s);
    const R e = exp(ex);
    return MK(e * c, e * s);
  }
  if (isinf(x)) {
    if (isfinite(y)) {
      const R v = x > 0 ? x : (R)0;
      if (y == 0) return MK(v, y);
      return MK(copysign(v, cos(y)), copysign(v, sin(y)));
    }
    if (x > 0) return MK(x, y - y);
    return MK((R)0, copysign((R)0, y));
  }
  if (y == 0) return MK(x, y);
  return MK(x, x);""")
_BODIES["clog"] = ("T", "T z", """const R x = z.re, y = z.im;
  const R ax = fabs(x), ay = fabs(y);
  const R arg = atan2(y, x);
  if (isnan(x) || isnan(y)) return MK((isinf(x) || isinf(y)) ? (R)INFINITY : x + y, x + y);
  if (isinf(x) || isinf(y)) return MK((R)INFINITY, arg);
  if (ax == 0 && ay == 0) return MK((R)-1 / ax, arg);
  const R big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
  if (big > (R)0.5 && big < 2 && small < 1) {
    const R d = hypot(ax, ay);
    if (d > (R)0.7 && d < (R)1.5) {
      /* log|z| = log1p(x*x + y*y - 1) / 2, the sum kept exact to a few bits beyond R */
      const R bb = big * big, bl = fma(big, big, -bb);
      const R ss = small * small, sl = fma(small, small, -ss);
      const R t = bb - 1;  /* (exact: bb is in [0.25, 4]) */
      const R u = t + ss;
      const R ue = (t - (u - (u - t))) + (ss - (u - t));
      return MK((R)0.5 * log1p(u + (ue + bl + sl)), arg);
    }
    return MK(log(d), arg);
  }
  if (big > R_MAX / 4) return MK(log(hypot(ldexp(ax, -2), ldexp(ay, -2))) + 2 * R_LN2, arg);
  if (big < 4 * R_MIN) return MK(log(hypot(ldexp(ax, 2 * R_HALF_DIG), ldexp(ay, 2 * R_HALF_DIG)))
                                 - 2 * R_HALF_DIG * R_LN2, arg);
  return MK(log(hypot(ax, ay)), arg);""")

HELPERS = frozenset(_BODIES) | frozenset(name + "_flags" for name in _BODIES)

#: The constants the bodies name, per real type: the largest finite value, the smallest normal
#: one, ln 2, half the digits (for scaling tiny values), the step t = (max exponent - 1) * ln 2 by
#: which cexp splits a large real part.
_CONSTANTS = {
    "f32_t": {"R_MAX": "3.4028234663852886e+38f", "R_MIN": "1.1754943508222875e-38f", "R_LN2": "0.6931471805599453f",
              "R_HALF_DIG": "12", "R_EXP_T": "88.02969193111305f"},
    "f64_t": {"R_MAX": "1.7976931348623157e+308", "R_MIN": "2.2250738585072014e-308", "R_LN2": "0.6931471805599453",
              "R_HALF_DIG": "27", "R_EXP_T": "709.0895657128241"},
}


def _subst(text: str, inline: str, t: str) -> str:
    real, make = COMPLEX_TYPES[t]
    for token, value in (("MK(", make + "("), ("{inline}", inline)):
        text = text.replace(token, value)
    # whole-word R and T
    out, word = [], ""
    for ch in text + "\0":
        if ch.isalnum() or ch == "_":
            word += ch
            continue
        out.append(real if word == "R" else t if word == "T" else _CONSTANTS[real].get(word, word))
        word = ""
        out.append(ch)
    return "".join(out)[:-1]


def _expand(body: str, suffix: str, flags: bool) -> str:
    for prim in _PRIMITIVES:
        target = f"npg_{prim.lower()}_fl_{suffix}(fl, " if flags else f"npg_{prim.lower()}_{suffix}("
        body = body.replace(prim + "(", target)
    return body


def sources(key: str, inline: str, t: str) -> dict[str, str]:
    """{function name: C source} of helper ``key`` for complex type alias ``t``, with what it calls
    first (``key`` ending in ``_flags``: an int function of the same operands returning the flags
    NumPy's loop raises)."""
    suffix = t[:-2]
    flags = key.endswith("_flags")
    name = key[: -len("_flags")] if flags else key
    ret, params, body = _BODIES[name]
    used = [p for p in _PRIMITIVES if p + "(" in body]
    out: dict[str, str] = {}
    for prim in used:
        args, value, flag = _PRIMITIVES[prim]
        ptype = "int" if prim in _COMPARISON_PRIMITIVES else "R"
        fname = f"npg_{prim.lower()}_{suffix}"
        out[fname] = _subst(f"{{inline}} {ptype} {fname}({args}) {{ return {value}; }}", inline, t)
        if flags:
            r_decl = f"const R r = {value};" if ptype == "R" else f"const int r = {value};"
            text = (f"{{inline}} {ptype} {fname[:-len(suffix)]}fl_{suffix}(int* fl, {args}) "
                    f"{{ {r_decl} *fl |= {flag}; return r; }}")
            out[f"{fname[:-len(suffix)]}fl_{suffix}"] = _subst(text, inline, t)
    value_name = f"npg_{name}_{suffix}"
    if not flags:
        out[value_name] = _subst(f"{{inline}} {ret} {value_name}({params}) {{\n  {_expand(body, suffix, False)}\n}}",
                                 inline, t)
        return out
    args = ", ".join(p.split()[-1] for p in params.split(", "))
    fl_name = f"npg_{name}_fl_{suffix}"
    out[fl_name] = _subst(f"{{inline}} {ret} {fl_name}(int* fl, {params}) {{\n  {_expand(body, suffix, True)}\n}}",
                          inline, t)
    out[f"npg_{key}_{suffix}"] = _subst(
        f"{{inline}} int npg_{key}_{suffix}({params}) {{ int fl = 0; (void){fl_name}(&fl, {args}); return fl; }}",
        inline, t)
    return out


def typedefs(dialect: str) -> str:
    """The complex struct types and their constructors (after the real typedefs)."""
    lines = []
    for t, (real, make) in COMPLEX_TYPES.items():
        lines.append(f"typedef struct {{ {real} re, im; }} {t};")
        if dialect == "opencl":  # (a C99 compound literal; C++ would refuse a narrowing one)
            lines.append(f"#define {make}(r, i) (({t}){{(r), (i)}})")
        else:
            lines.append(f"__device__ __forceinline__ {t} {make}({real} r, {real} i) {{ {t} z; z.re = r; z.im = i; "
                         "return z; }")
    return "\n".join(lines)
