"""Random NumPy programs run by NumPy and by npgpu, compared value for value.

``python tools/fuzz_programs.py --backend cupy --seeds 0:200 [--statements 12] [--fusion off]``

Each seed makes one program of a few statements over small arrays of mixed dtypes: ufuncs with
arrays and Python scalars, reductions, views (transposes, slices, reversals), casts, in-place
operators (also onto an overlapping view of the operand), writes by slices, masks and index arrays
(repeated indices: the last write wins), reads by index arrays and masks, ``where``,
``clip``, ``concatenate``, ``sort``, ``dot``, ``matmul``, NaN-ignoring and statistical reductions,
``round``, comparisons, element reads, ``fill`` and shape functions (reshape, flip, roll, repeat,
tile, swapaxes, expand_dims, squeeze, diff, stack, stable argsort, unique, nonzero, full_like),
and loops: a name rebound to an operation of itself, an in-place operator, an element-by-element
recurrence along the last axis and a stencil of views written back, 3 to 40 passes each.
The program is written while NumPy runs it (so that every statement is one NumPy accepts or
rejects for a reason of its own), then run again by npgpu under ``--backend`` with
placement from the first byte. Every array the program made, every element it read and the type
of every exception it raised must be NumPy's: dtypes, shapes and memory layouts (C- and
F-contiguity) exactly; integers, bools and the
results of correctly rounded float operations bit for bit (NaN where NumPy has NaN, the sign of
zero included); anything computed by a transcendental function (exp, log, sin, power, ...) within
a few units in the last place, as the README documents (and integers or bools computed from such a
value only in dtype and shape: an ulp moves a cast or a comparison; so are casts of floats C leaves
undefined, NaN or out of the integer type's range, where NumPy's own loops disagree; and so are
copysign and signbit reading a NaN's sign, which IEEE 754 leaves to the machine). A mismatch prints the
program and the
first difference; the exit status is 1 if any seed mismatched.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import npgpu  # noqa: E402

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float32", "float64")
#: ``--complex``: these too (stored and moved on OpenCL, computed on CuPy)
COMPLEX = ("complex64", "complex128")
SHAPES = ((4, 6), (6,), (4, 1), (1, 6), (), (4, 6), (4, 6))
#: ``--scale k``: each extent of SHAPES times k (and one more where k > 1, so that vector kernels
#: run their remainder and reductions their partial work-groups)
#: correctly rounded (exact) ufuncs: their results must be NumPy's bits
EXACT2 = ("add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "maximum", "minimum", "fmax",
          "fmin", "greater", "less_equal", "equal", "not_equal", "logical_and", "logical_xor", "copysign", "fmod",
          "less", "greater_equal", "logical_or", "heaviside", "nextafter")
INT2 = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd")
EXACT1 = ("negative", "absolute", "sqrt", "floor", "ceil", "rint", "trunc", "sign", "isnan", "isfinite", "square",
          "logical_not", "signbit", "positive", "fabs", "reciprocal", "invert", "isinf", "spacing")
#: exact but for the sign of a zero on a tie, which NumPy's own loops don't agree on (fmax(-0.0,
#: 0.0) is -0.0 in its scalar loop and 0.0 in its SIMD one): compared as INEXACT values are
ZERO_SIGN_FREE = ("fmax", "fmin")
#: computed by libraries that may differ from NumPy's in the last place
INEXACT1 = ("exp", "log", "sin", "cos", "tanh", "arctan", "log1p", "expm1", "cbrt", "sinh", "cosh", "tan", "arcsin",
            "arccos", "arcsinh", "arctanh", "log2", "log10", "exp2", "deg2rad")
INEXACT2 = ("power", "arctan2", "hypot", "logaddexp", "float_power")
#: not correctly rounded in complex dtypes, and NumPy's own loops round them differently: its AVX-512
#: loops fuse the multiply-adds of a complex product, its scalar loop (an operand that overlaps the
#: output, a[:-1] *= a[1:]) does not, an ulp apart; its AVX-512 complex64 absolute scales in
#: float32 (abs(3+0.001j) is 3.0, the correctly rounded 3.0000002 elsewhere): complex operands'
#: results compared as INEXACT values are
COMPLEX_ROUNDED = ("multiply", "true_divide", "square", "reciprocal", "absolute", "sqrt", "sign")
#: how far a value is compared: bit for bit; within a few ulp (a transcendental's, or an order of
#: additions of its own made it); not at all (it comes from a conversion C leaves undefined)
EXACT, INEXACT, UNDEFINED = 0, 1, 2
REDUCTIONS = ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all", "cumsum", "cumprod", "ptp",
              "count_nonzero", "median")
#: reductions whose float results depend on an order of operations (or a mean of two, median's)
ORDERED = ("sum", "mean", "cumsum", "prod", "cumprod", "median")
#: shape functions of one array and an axis: (name, how it is called)
RESHAPES = ("reshape", "flip", "roll", "repeat", "tile", "swapaxes", "expand_dims", "squeeze", "diff", "stack",
            "argsort", "unique", "nonzero", "cumsum_keep", "sum_keepdims", "like")
SCALARS = (0, 1, 2, -1, 3, 7, 255, -128, 1000, 2.5, -0.5, 0.0, -0.0, 1e10, 0.1, True, False)


def _value_array(rng: numpy.random.Generator, shape: tuple[int, ...], dtype: str) -> numpy.ndarray:
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "fc":
        floats = numpy.array([0.0, -0.0, 1.5, -2.25, 3.0, 1e-3, 7.75, -100.5, 1e6, 255.0, 0.5, numpy.nan, numpy.inf,
                              -numpy.inf, 65504.0, 1e-40])
        if dt.kind == "f":
            return rng.choice(floats, shape).astype(dt)
        values = numpy.empty(shape, dt)  # (parts set apart: 1j * inf would make a NaN real part)
        values.real, values.imag = rng.choice(floats, shape), rng.choice(floats, shape)
        return values
    info = numpy.iinfo(dt)
    special = numpy.array([info.min, info.max, 0, 1, 2, 3, 7, 100], dtype=object)
    values = rng.integers(max(info.min, -50), min(info.max, 50), shape, endpoint=True).astype(object)
    mask = rng.random(shape) < 0.2
    values[mask] = rng.choice(special, int(mask.sum()))
    return numpy.array(values.tolist() if shape else values[()], dtype=dt)


class Program:
    """A program of statements, written while NumPy runs it."""

    def __init__(self, seed: int, statements: int, scale: int = 1, complex_values: bool = False) -> None:
        self.rng = numpy.random.default_rng(seed)
        self.dtypes = DTYPES + COMPLEX if complex_values else DTYPES
        self.inputs: list[numpy.ndarray] = []
        self.statements: list[tuple[Any, ...]] = []
        env: list[Any] = []
        inexact: list[int] = []
        for _ in range(3):
            base = SHAPES[int(self.rng.integers(len(SHAPES)))]
            shape = tuple(n if n == 1 or scale == 1 else n * scale + 1 for n in base)
            a = _value_array(self.rng, shape, self.dtypes[int(self.rng.integers(len(self.dtypes)))])
            self.inputs.append(a)
            env.append(a.copy())
            inexact.append(EXACT)
        self.inexact = inexact
        tries = 0
        while len(self.statements) < statements and tries < statements * 20:
            tries += 1
            statement = self._statement(env)
            if statement is None:
                continue
            self.statements.append(statement)
            with numpy.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                execute(numpy, statement, env, inexact)

    def _pick(self, env: list[Any], ndarray: bool = True) -> int | None:
        slots = [i for i, a in enumerate(env) if isinstance(a, numpy.ndarray) or (not ndarray and a is not None)]
        return int(self.rng.choice(slots)) if slots else None

    def _scalar(self) -> Any:
        return SCALARS[int(self.rng.integers(len(SCALARS)))]

    def _statement(self, env: list[Any]) -> tuple[Any, ...] | None:
        rng = self.rng
        kind = rng.choice(["ufunc2", "ufunc2", "scalar2", "ufunc1", "reduce", "view", "astype", "inplace",
                           "write_basic", "write_mask", "write_index", "where", "clip", "concat", "read",
                           "take", "select", "sort", "dot", "nanreduce", "round", "compare", "overlap",
                           "write_values", "reshape", "reshape", "matmul", "fill", "loop", "listed"])
        i = self._pick(env)
        if i is None:
            return None
        a = env[i]
        if kind in ("ufunc2", "inplace", "where"):
            j = self._pick(env)
            try:
                numpy.broadcast_shapes(a.shape, env[j].shape)
            except ValueError:
                return None
            if kind == "where":
                k = self._pick(env)
                try:
                    numpy.broadcast_shapes(a.shape, env[j].shape, env[k].shape)
                except ValueError:
                    return None
                return ("where", i, j, k)
            names = EXACT2 + INT2 + INEXACT2 if kind == "ufunc2" else ("add", "subtract", "multiply", "true_divide",
                                                                          "floor_divide", "bitwise_and", "maximum")
            return (kind, str(rng.choice(names)), i, j)
        if kind == "scalar2":
            name = str(rng.choice(EXACT2 + INT2 + INEXACT2))
            return ("scalar2", name, i, self._scalar(), bool(rng.random() < 0.3))
        if kind == "ufunc1":
            return ("ufunc1", str(rng.choice(EXACT1 + INEXACT1)), i)
        if kind == "reduce":
            axis = None if a.ndim == 0 or rng.random() < 0.4 else int(rng.integers(a.ndim))
            return ("reduce", str(rng.choice(REDUCTIONS)), i, axis)
        if kind == "view":
            if a.ndim == 0:
                return None
            choice = str(rng.choice(["T", "reverse", "slice", "step", "ravel", "newaxis"]))
            return ("view", choice, i, int(rng.integers(a.ndim)))
        if kind == "astype":
            return ("astype", i, str(rng.choice(self.dtypes)))
        if kind == "write_basic":
            if a.ndim == 0:
                return None
            axis = int(rng.integers(a.ndim))
            n = a.shape[axis]
            start = int(rng.integers(n + 1))
            key = tuple(slice(start, None, 1 + int(rng.integers(2))) if d == axis else slice(None)
                        for d in range(a.ndim))
            source = self._pick(env) if rng.random() < 0.5 else None
            value = self._scalar() if source is None else source
            return ("write_basic", i, key, value, source is not None)
        if kind == "write_mask":
            return ("write_mask", i, self._scalar(), self._scalar())
        if kind == "write_index":
            if a.ndim == 0 or a.shape[0] == 0:
                return None
            index = rng.integers(-a.shape[0], a.shape[0], int(rng.integers(1, 4))).tolist()
            return ("write_index", i, index, self._scalar())
        if kind == "clip":
            return ("clip", i, self._scalar(), self._scalar())
        if kind == "concat":
            j = self._pick(env)
            return ("concat", i, j)
        if kind == "listed":  # (a list of arrays NumPy takes as one array: np.max([a, b], axis=0))
            return ("listed", str(rng.choice(["sum", "max", "min", "where", "transpose"])), i, self._pick(env))
        if kind == "read":
            if a.size == 0:
                return None
            return ("read", i, tuple(int(rng.integers(n)) for n in a.shape))
        if kind == "take":
            if a.ndim == 0 or a.shape[0] == 0:
                return None
            return ("take", i, rng.integers(-a.shape[0], a.shape[0], int(rng.integers(1, 5))).tolist())
        if kind in ("select", "sort", "nanreduce", "round"):
            axis = -1 if a.ndim else None
            name = str(rng.choice(["nansum", "nanmax", "nanmin", "nanmean", "nanargmax", "std", "var"])) \
                if kind == "nanreduce" else str(rng.choice([-1, 0, 1, 2])) if kind == "round" else ""
            return (kind, i, axis, name)
        if kind == "dot":
            j = self._pick(env)
            return ("dot", i, j)
        if kind == "overlap":  # (an in-place operator whose operand overlaps its target: a[1:] += a[:-1])
            if a.ndim == 0 or a.shape[-1] < 2:
                return None
            return ("overlap", i, str(rng.choice(["add", "multiply", "subtract", "maximum"])), bool(rng.random() < 0.5))
        if kind == "write_values":  # (index arrays with repeats and an array of values: the last write wins)
            if a.ndim == 0 or a.shape[0] == 0:
                return None
            index = rng.integers(-a.shape[0], a.shape[0], int(rng.integers(1, 6))).tolist()
            return ("write_values", i, index, self._pick(env))
        if kind == "reshape":
            axis = int(rng.integers(a.ndim)) if a.ndim else None
            return ("reshape", str(rng.choice(RESHAPES)), i, axis, self._scalar())
        if kind == "matmul":
            return ("matmul", i, self._pick(env))
        if kind == "loop":  # (loops of the kinds programs run: recorded work replayed, arrays moved)
            how = str(rng.choice(["rebind", "recurrence", "stencil", "accumulate"]))
            if how in ("recurrence", "stencil") and (a.ndim == 0 or a.shape[-1] < 3):
                return None
            name = str(rng.choice(["add", "subtract", "multiply", "maximum", "true_divide"]))
            return ("loop", how, name, i, self._pick(env), int(rng.choice([3, 10, 40])))
        if kind == "fill":
            return ("fill", i, self._scalar())
        if kind == "compare":
            j = self._pick(env)
            return ("compare", str(rng.choice(["less", "greater_equal", "equal", "array_equal", "allclose"])), i, j)
        return None


def execute(xp: Any, statement: tuple[Any, ...], env: list[Any], inexact: list[int]) -> None:
    """Run one statement with ``xp`` (numpy or npgpu), appending what it made (None where it raised;
    the exception type where it raised, as env's record of it)."""
    kind = statement[0]
    result: Any = None
    taint = EXACT
    try:
        if kind == "ufunc2":
            name, i, j = statement[1:]
            result = getattr(xp, name)(env[i], env[j])
            taint = max(INEXACT * (name in INEXACT2 + ZERO_SIGN_FREE), inexact[i], inexact[j],
                        _complex_rounding(name, env[i], env[j]),
                        xp is numpy and _amplified(name, env[i], env[j], inexact[i], inexact[j]),
                        xp is numpy and max(_reads_zero_signs(name, env[i], inexact[i]),
                                            _reads_zero_signs(name, env[j], inexact[j])),
                        UNDEFINED * (xp is numpy and name == "copysign" and _has_nan(env[j])))
        elif kind == "scalar2":
            name, i, s, flipped = statement[1:]
            result = getattr(xp, name)(s, env[i]) if flipped else getattr(xp, name)(env[i], s)
            taint = max(INEXACT * (name in INEXACT2 + ZERO_SIGN_FREE), inexact[i], _complex_rounding(name, env[i], s),
                        xp is numpy and (_amplified(name, s, env[i], EXACT, inexact[i]) if flipped
                                         else _amplified(name, env[i], s, inexact[i], EXACT)),
                        xp is numpy and _reads_zero_signs(name, env[i], inexact[i]),
                        UNDEFINED * (xp is numpy and name == "copysign" and flipped and _has_nan(env[i])))
        elif kind == "ufunc1":
            name, i = statement[1:]
            result = getattr(xp, name)(env[i])
            taint = max(INEXACT * (name in INEXACT1), inexact[i], _complex_rounding(name, env[i]),
                        xp is numpy and _reads_zero_signs(name, env[i], inexact[i]),
                        UNDEFINED * (xp is numpy and name == "signbit" and _has_nan(env[i])))
        elif kind == "reduce":
            name, i, axis = statement[1:]
            result = getattr(xp, name)(env[i], axis=axis)
            taint = max(inexact[i], INEXACT * (name in ORDERED  # (orders of addition; and which zero a tie keeps)
                                               or (name in ("max", "min", "ptp") and _both_zeros(env[i]))))
        elif kind == "view":
            how, i, axis = statement[1:]
            a = env[i]
            if how == "T":
                result = a.T
            elif how == "reverse":
                result = a[(slice(None),) * axis + (slice(None, None, -1),)]
            elif how == "slice":
                result = a[(slice(None),) * axis + (slice(1, None),)]
            elif how == "step":
                result = a[(slice(None),) * axis + (slice(None, None, 2),)]
            elif how == "ravel":
                result = a.ravel()
            else:
                result = a[None]
            taint = inexact[i]
        elif kind == "astype":
            i, dtype = statement[1:]
            result = env[i].astype(dtype)
            taint = max(inexact[i], UNDEFINED * (xp is numpy and _undefined_conversion(env[i], numpy.dtype(dtype))))
        elif kind == "inplace":
            name, i, j = statement[1:]
            a = env[i]
            signs = xp is numpy and _reads_zero_signs(name, env[j], inexact[j])
            if name == "add":
                a += env[j]
            elif name == "subtract":
                a -= env[j]
            elif name == "multiply":
                a *= env[j]
            elif name == "true_divide":
                a /= env[j]
            elif name == "floor_divide":
                a //= env[j]
            elif name == "bitwise_and":
                a &= env[j]
            else:
                xp.maximum(a, env[j], out=a)
            inexact[i] = max(inexact[i], inexact[j], _complex_rounding(name, a, env[j]), signs)
        elif kind == "write_basic":
            i, key, value, is_slot = statement[1:]
            env[i][key] = env[value] if is_slot else value
            inexact[i] = max(inexact[i], inexact[value] if is_slot else EXACT,
                             UNDEFINED * (xp is numpy and is_slot and _undefined_conversion(env[value], env[i].dtype)))
        elif kind == "write_mask":
            i, bound, value = statement[1:]
            a = env[i]
            a[a > bound] = value
        elif kind == "write_index":
            i, index, value = statement[1:]
            env[i][xp.asarray(numpy.array(index))] = value
        elif kind == "where":
            i, j, k = statement[1:]
            result = xp.where(env[i], env[j], env[k])
            taint = max(inexact[i], inexact[j], inexact[k])
        elif kind == "clip":
            i, lo, hi = statement[1:]
            # (the spelling by the slot, so a seed's program stays what it was: the function,
            # NumPy 2's names, the method)
            result = _clip(xp, env[i], lo, hi, i % 3)
            taint = inexact[i]
        elif kind == "concat":
            i, j = statement[1:]
            result = xp.concatenate([env[i].ravel(), env[j].ravel()])
            taint = max(inexact[i], inexact[j])
        elif kind == "listed":
            name, i, j = statement[1:]
            items = [env[i], env[j]]
            if name == "where":
                result = xp.where([env[i] > 0, env[j] > 0], 1, 0)
            elif name == "transpose":
                result = xp.transpose(items)
            else:  # (two values a slot: no order to differ in, but which zero a sum or a tie keeps)
                result = getattr(xp, name)(items, axis=0)
            ties = name in ("max", "min") and xp is numpy and all(isinstance(v, numpy.ndarray) for v in items) \
                and _both_zeros(numpy.concatenate([numpy.ravel(v) for v in items]).astype(numpy.float64))
            taint = max(inexact[i], inexact[j], INEXACT * (name == "sum" or bool(ties)))
        elif kind == "take":
            i, index = statement[1:]
            result = env[i][xp.asarray(numpy.array(index))]
            taint = inexact[i]
        elif kind == "select":
            i, axis, _ = statement[1:]
            a = env[i]
            result = a[a > 1] if a.dtype.kind != "b" else a[a]
            taint = inexact[i]
        elif kind == "sort":
            i, axis, _ = statement[1:]
            result = xp.sort(env[i], axis=axis) if axis is not None else xp.sort(env[i].ravel())
            taint = max(inexact[i], INEXACT * _both_zeros(env[i]))  # (0.0 and -0.0 are ties: either order)
        elif kind == "nanreduce":
            i, axis, name = statement[1:]
            result = getattr(xp, name)(env[i], axis=axis)
            taint = max(INEXACT, inexact[i])  # (sums and square roots in an order of their own; zero ties)
        elif kind == "round":
            i, _, decimals = statement[1:]
            result = xp.round(env[i], int(decimals))
            taint = max(inexact[i], INEXACT * (env[i].dtype.kind == "f" and int(decimals) > 0))  # (a decimal scale)
        elif kind == "dot":
            i, j = statement[1:]
            result = xp.dot(env[i], env[j])
            taint = max(INEXACT, inexact[i], inexact[j])  # (products summed in the device's order)
        elif kind == "compare":
            name, i, j = statement[1:]
            result = getattr(xp, name)(env[i], env[j])
            taint = max(inexact[i], inexact[j], INEXACT * (name == "allclose"))
        elif kind == "overlap":
            i, name, forward = statement[1:]
            a = env[i]
            target, source = (a[..., 1:], a[..., :-1]) if forward else (a[..., :-1], a[..., 1:])
            getattr(xp, name)(target, source, out=target)  # (NumPy reads the source as it was: a copy)
            inexact[i] = max(inexact[i], _complex_rounding(name, a))
        elif kind == "write_values":
            i, index, j = statement[1:]
            a, v = env[i], env[j]
            a[xp.asarray(numpy.array(index))] = v.ravel()[: len(index)] if v.ndim else v
            inexact[i] = max(inexact[i], inexact[j], UNDEFINED * (xp is numpy and _undefined_conversion(v, a.dtype)))
        elif kind == "reshape":
            name, i, axis, s = statement[1:]
            result = _reshaped(xp, name, env[i], axis, s)
            taint = max(inexact[i], INEXACT * (name in ("cumsum_keep", "sum_keepdims")),
                        UNDEFINED * (name == "like" and xp is numpy
                                                 and _undefined_conversion(numpy.asarray(s), env[i].dtype)))
        elif kind == "matmul":
            i, j = statement[1:]
            result = xp.matmul(env[i], env[j])
            taint = max(INEXACT, inexact[i], inexact[j])
        elif kind == "loop":
            how, name, i, j, reps = statement[1:]
            a, b, f = env[i], env[j], getattr(xp, name)
            signs = xp is numpy and max(_reads_zero_signs(name, a, inexact[i]), _reads_zero_signs(name, b, inexact[j]))
            if how == "rebind":  # x = f(x, b), each pass a new array
                for _ in range(reps):
                    a = f(a, b)
                result, taint = a, max(inexact[i], inexact[j], _complex_rounding(name, a, b), signs)
            elif how == "accumulate":  # a = f(a, b) in place, as a += b is
                for _ in range(reps):
                    f(a, b, out=a)
                inexact[i] = max(inexact[i], inexact[j], _complex_rounding(name, a, b), signs)
            elif how == "recurrence":  # element by element along the last axis, as a row loop writes
                inexact[i] = max(inexact[i], _complex_rounding(name, a), signs)
                for k in range(1, min(reps, a.shape[-1])):
                    a[..., k] = value = f(a[..., k - 1], a[..., k])
                    if xp is numpy and _undefined_conversion(value, a.dtype):  # (x / 0 into integers)
                        inexact[i] = UNDEFINED
            else:  # a stencil of views written back
                inexact[i] = max(inexact[i], _complex_rounding(name, a), signs)
                for _ in range(reps):
                    a[..., 1:-1] = value = f(a[..., :-2], a[..., 2:])
                    if xp is numpy and _undefined_conversion(value, a.dtype):
                        inexact[i] = UNDEFINED
        elif kind == "fill":
            i, s = statement[1:]
            env[i].fill(s)
            inexact[i] = max(inexact[i], UNDEFINED * (xp is numpy and _undefined_conversion(numpy.asarray(s),
                                                                                         env[i].dtype)))
        elif kind == "read":
            i, index = statement[1:]
            result = env[i][index].item() if env[i].ndim else env[i].item()
            taint = inexact[i]
    except Exception as exc:  # the fuzz compares exception types; it runs no device call of its own
        result = type(exc)
    env.append(result)
    inexact.append(taint)


def _amplified(name: str, base: Any, exponent: Any, base_taint: int, exponent_taint: int) -> int:
    """UNDEFINED where a power's result is compared though its error may pass the INEXACT bound:
    a base a few ulp off raised to an exponent beyond 8 (NumPy: 7.1951876 ** 166, npgpu's base an
    ulp of float32 lower, 1.1e-5 apart), or an exponent a few ulp off. A power of exact operands,
    or an inexact base to a small exact exponent, is still compared."""
    if name not in ("power", "float_power") or not (base_taint or exponent_taint):
        return EXACT
    with numpy.errstate(all="ignore"):
        small = numpy.all(numpy.abs(numpy.asarray(exponent, dtype=float)) <= 8)
    return UNDEFINED if exponent_taint or not small else EXACT


#: functions whose result follows the sign of a zero operand (x / -0.0 is -inf): where that
#: operand is INEXACT (a sort's or a sum's ±0 ties, whose signs are not compared) and holds a zero,
#: their results are not compared (UNDEFINED)
ZERO_SIGN_READERS = ("true_divide", "floor_divide", "remainder", "fmod", "reciprocal", "arctan2", "power",
                     "float_power", "copysign")


def _reads_zero_signs(name: str, operand: Any, taint: int) -> int:
    """UNDEFINED where ``name`` reads the sign of an INEXACT ``operand``'s zeros (ZERO_SIGN_READERS)."""
    if name not in ZERO_SIGN_READERS or taint != INEXACT:
        return EXACT
    with numpy.errstate(all="ignore"):
        return UNDEFINED if numpy.any(numpy.asarray(operand) == 0) else EXACT


def _complex_rounding(name: str, *operands: Any) -> int:
    """INEXACT where ``name`` computes complex values NumPy rounds by loop (COMPLEX_ROUNDED)."""
    return INEXACT * (name in COMPLEX_ROUNDED and any(numpy.iscomplexobj(x) for x in operands))


def _reshaped(xp: Any, name: str, a: Any, axis: int | None, s: Any) -> Any:
    """One of RESHAPES applied to ``a`` (``axis`` None for a 0-d array; ``s`` a scalar of SCALARS)."""
    ax = 0 if axis is None else axis
    if name == "reshape":
        return a.reshape(-1, 2) if a.size % 2 == 0 else a.reshape(-1)
    if name == "flip":
        return xp.flip(a, axis)
    if name == "roll":
        return xp.roll(a, 1 + ax, axis)
    if name == "repeat":
        return xp.repeat(a, 2, axis)
    if name == "tile":
        return xp.tile(a, (2, 1))
    if name == "swapaxes":
        return xp.swapaxes(a, 0, -1)
    if name == "expand_dims":
        return xp.expand_dims(a, ax)
    if name == "squeeze":
        return xp.squeeze(a)
    if name == "diff":
        return xp.diff(a, axis=-1)
    if name == "stack":
        return xp.stack([a, a], axis=ax)
    if name == "argsort":
        return xp.argsort(a, axis=axis, kind="stable")
    if name == "unique":
        return xp.unique(a)
    if name == "nonzero":
        return xp.stack(xp.nonzero(a)) if a.ndim else xp.nonzero(a)
    if name == "cumsum_keep":
        return xp.cumsum(a, axis=axis, dtype=a.dtype)
    if name == "sum_keepdims":
        return a.sum(axis=axis, keepdims=True)
    return xp.full_like(a, s)


def _both_zeros(a: Any) -> bool:
    """Whether float array ``a`` holds 0.0 and -0.0: which of them a max or min keeps is its loop's
    order (NumPy's SIMD and scalar reductions differ), as fmax's and fmin's ties are."""
    if not isinstance(a, (numpy.ndarray, numpy.generic)) or a.dtype.kind != "f":
        return False
    zeros = numpy.signbit(a[a == 0])
    return bool(zeros.any() and not zeros.all())


def _has_nan(a: Any) -> bool:
    """Whether ``a`` holds a NaN, whose sign copysign and signbit read: IEEE 754 leaves the sign of
    an invalid operation's NaN to the machine (x86's is negative, PoCL's log1p(-2.25) positive)."""
    return isinstance(a, (numpy.ndarray, numpy.generic)) and a.dtype.kind in "fc" and bool(numpy.isnan(a).any())


def _undefined_conversion(a: numpy.ndarray, dtype: numpy.dtype) -> bool:
    """Whether converting float array ``a`` into integer ``dtype`` meets a value C leaves undefined
    (NaN, infinities, values beyond the type): NumPy's own SIMD and scalar loops give different
    values for those (1e10 into uint32 is 0 in an array of ten, 1410065408 in an array of one)."""
    if a.dtype.kind != "f" or dtype.kind not in "iu" or not a.size:
        return False
    info = numpy.iinfo(dtype)
    with numpy.errstate(all="ignore"):  # (the harness's own comparisons: float16 against 2**64 overflows)
        return not bool(numpy.all(numpy.isfinite(a) & (a > info.min - 1.0) & (a < info.max + 1.0)))


def _taint_views(env: list[Any], inexact: list[int], before: set[int]) -> None:
    """Slots that share memory with one a statement made UNDEFINED are undefined too (a write
    through a view changes its base)."""
    for k in [k for k, t in enumerate(inexact) if t == UNDEFINED and k not in before]:
        if isinstance(env[k], numpy.ndarray):
            for other, x in enumerate(env):
                if isinstance(x, numpy.ndarray) and numpy.may_share_memory(x, env[k]):
                    inexact[other] = UNDEFINED


def _finite(a: Any) -> bool:
    return not isinstance(a, numpy.ndarray) or a.dtype.kind not in "fc" or bool(numpy.isfinite(a).all())


def _errors_compared(statement: tuple[Any, ...], env: list[Any]) -> bool:
    """Whether ``statement``'s floating-point errors are compared (--errors): not a sum's or
    product's over infinities or NaN, whose flags depend on the order the values meet in (the
    device infers them from the result; accumulations and variances have NumPy's order)."""
    kind = statement[0]
    if kind == "nanreduce":  # (var's mean is a sum too: order decides only where NaN meets infinities)
        a = env[statement[1]]
        if statement[3] in ("std", "var"):
            return _finite(a) or not (_has_nan(a) and bool(numpy.isinf(a).any()))
        return _finite(a)
    if kind == "reduce":
        name, i = statement[1], statement[2]
        return name in ("cumsum", "cumprod") or name not in ORDERED or _finite(env[i])
    if kind == "reshape" and statement[1] == "sum_keepdims":
        return _finite(env[statement[2]])
    return kind not in ("dot", "matmul")  # (a BLAS's flags: NumPy reports its library's invalid inf * 0)


def _layout(x: Any) -> tuple[bool, bool] | None:
    """Whether an array of two or more dimensions is C- and F-contiguous (NumPy lays results out in
    their operands' memory order; flags, strides and ravel(order="K") show it), else None."""
    if not isinstance(x, (numpy.ndarray, npgpu.DeviceArray)) or x.ndim < 2:
        return None
    return bool(x.flags.c_contiguous), bool(x.flags.f_contiguous)


def _host(x: Any) -> Any:
    return npgpu.asnumpy(x) if isinstance(x, npgpu.DeviceArray) else x


def difference(expected: Any, got: Any, inexact: int) -> str | None:
    """Why ``got`` is not NumPy's ``expected`` (compared as far as ``inexact`` says: EXACT,
    INEXACT or UNDEFINED), or None."""
    got = _host(got)
    if isinstance(expected, type):
        return None if isinstance(got, type) and issubclass(got, expected) else f"NumPy raised {expected.__name__}, " \
            f"npgpu gave {got if isinstance(got, type) else type(got).__name__}"
    if isinstance(got, type):
        return f"npgpu raised {got.__name__}"
    if isinstance(expected, (numpy.ndarray, numpy.generic)):
        got = numpy.asarray(got) if isinstance(got, numpy.generic) else got
        expected = numpy.asarray(expected)
        if not isinstance(got, numpy.ndarray):
            return f"expected an array, got {type(got).__name__}"
        if got.dtype != expected.dtype or (got.shape != expected.shape if inexact < UNDEFINED else
                                           got.ndim != expected.ndim):  # (a[a > 1] of undefined values)
            return f"dtype/shape {got.dtype}{got.shape} != {expected.dtype}{expected.shape}"
        return _values(expected, got, inexact)
    if type(got) is not type(expected):
        return f"type {type(got).__name__} != {type(expected).__name__}"
    return _values(numpy.asarray(expected), numpy.asarray(got), inexact)


def _values(expected: numpy.ndarray, got: numpy.ndarray, inexact: int) -> str | None:
    if inexact >= UNDEFINED:
        return None
    if expected.dtype.kind == "c":  # (each part as a float: a NaN part is NaN where NumPy's is)
        return _values(expected.real, got.real, inexact) or _values(expected.imag, got.imag, inexact)
    if expected.dtype.kind in "fc":
        nan = numpy.isnan(expected)
        if not numpy.array_equal(nan, numpy.isnan(got)):
            return f"NaN where NumPy has none (or the reverse): {got!r} != {expected!r}"
        if inexact:  # (at float32's precision: the transcendental may have run in float32, then widened)
            tol = 64 * numpy.finfo(numpy.float32).eps
            # (and subnormal results by a margin of float32's smallest normal: libraries lose their digits)
            close = numpy.isclose(got, expected, rtol=tol, atol=64 * numpy.finfo(numpy.float32).tiny, equal_nan=True)
            return None if close.all() else f"values {got!r} != {expected!r}"
        same = (got == expected) | nan
        same &= (numpy.signbit(got) == numpy.signbit(expected)) | nan  # (a NaN's sign is no value)
        return None if same.all() else f"values {got!r} != {expected!r} (bits)"
    if inexact:  # (integers and bools computed from a transcendental's value: an ulp can move them)
        return None
    return None if numpy.array_equal(got, expected) else f"values {got!r} != {expected!r}"


def _clip(xp: Any, a: Any, lo: Any, hi: Any, spelling: int) -> Any:
    if spelling == 1:
        return xp.clip(a, min=lo, max=hi)
    if spelling == 2:
        return a.clip(lo, hi)
    return xp.clip(a, lo, hi)


def run_seed(seed: int, backend: str, statements: int, fusion: bool, scale: int = 1,
             errors: bool = False, complex_values: bool = False) -> str | None:
    program = Program(seed, statements, scale, complex_values)
    expected_env = [a.copy() for a in program.inputs]
    expected_inexact = [EXACT] * len(expected_env)
    got_env: list[Any] = []
    got_inexact = [EXACT] * len(program.inputs)
    # (errors: each statement's floating-point errors, reported to a callback, against NumPy's)
    expected_errors: list[tuple[int, str]] = []
    got_errors: list[tuple[int, str]] = []
    at = [0]
    unchecked: set[int] = set()  # (statements whose errors are not compared: _errors_compared)

    def state(seen: list[tuple[int, str]]) -> Any:
        if not errors:
            return numpy.errstate(all="ignore")
        return numpy.errstate(all="call", under="ignore", call=lambda kind, flag: seen.append((at[0], kind)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with state(expected_errors):
            for at[0], s in enumerate(program.statements):
                if errors and not _errors_compared(s, expected_env):
                    unchecked.add(at[0])
                undefined = {k for k, t in enumerate(expected_inexact) if t == UNDEFINED}
                execute(numpy, s, expected_env, expected_inexact)
                _taint_views(expected_env, expected_inexact, undefined)
                # (values C leaves undefined, read or made here: the errors that follow from them too)
                if any(t == UNDEFINED and k not in undefined for k, t in enumerate(expected_inexact)) or \
                        any(type(x) is int and x in undefined for x in s[1:]):
                    unchecked.add(at[0])
        with npgpu.enable(backend, threshold=0, fusion=fusion):
            got_env = [npgpu.asarray(a.copy()) for a in program.inputs]
            with state(got_errors):
                for at[0], s in enumerate(program.statements):
                    execute(npgpu, s, got_env, got_inexact)
            got_layouts = [_layout(x) for x in got_env]
            got_env = [_host(x) for x in got_env]
    got_errors = [e for e in got_errors if e[0] not in unchecked]
    expected_errors = [e for e in expected_errors if e[0] not in unchecked]
    if errors and sorted(got_errors) != sorted(expected_errors):
        extra = sorted(set(got_errors) - set(expected_errors))
        missing = sorted(set(expected_errors) - set(got_errors))
        why = f"errors: npgpu's {sorted(got_errors)} != NumPy's {sorted(expected_errors)}"
        return _report(seed, program, f"{why} (extra {extra}, missing {missing})")
    for slot, (e, g, inexact) in enumerate(zip(expected_env, got_env, expected_inexact, strict=True)):
        why = difference(e, g, inexact)
        if why is None and isinstance(e, numpy.ndarray) and got_layouts[slot] not in (None, _layout(e)):
            why = f"layout (C, F contiguous) {got_layouts[slot]} != NumPy's {_layout(e)}"
        if why is not None:
            return _report(seed, program, f"slot {slot}: {why}")
    return None


def _report(seed: int, program: Program, why: str) -> str:
    lines = [f"seed {seed}: {why}", "inputs:"]
    lines += [f"  [{k}] {a.dtype}{a.shape} {a.tolist()!r}" if a.size <= 48 else f"  [{k}] {a.dtype}{a.shape}"
              for k, a in enumerate(program.inputs)]
    lines += [f"  [{len(program.inputs) + k}] {s!r}" for k, s in enumerate(program.statements)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--backend", default="emulated")
    parser.add_argument("--seeds", default="0:100", help="start:stop")
    parser.add_argument("--statements", type=int, default=12)
    parser.add_argument("--fusion", choices=("on", "off"), default="on")
    parser.add_argument("--max-reports", type=int, default=10)
    parser.add_argument("--scale", type=int, default=1, help="arrays' extents times this (plus one)")
    parser.add_argument("--errors", action="store_true",
                        help="compare each statement's floating-point errors (errstate all='call') too")
    parser.add_argument("--complex", action="store_true", help="complex64 and complex128 arrays too")
    parser.add_argument("--seconds", type=float, default=0,
                        help="start no program after this many seconds, and say how many ran (a device call's limit)")
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    bad = 0
    ran = 0
    ends = time.monotonic() + args.seconds if args.seconds else None
    for seed in range(start, stop):
        if ends is not None and time.monotonic() > ends:
            break
        why = run_seed(seed, args.backend, args.statements, args.fusion == "on", args.scale, args.errors, args.complex)
        ran += 1
        if why is not None:
            bad += 1
            if bad <= args.max_reports:
                print(why, flush=True)
    seeds = f" (seeds {start}:{start + ran}, stopped at --seconds)" if ran < stop - start else ""
    print(f"{args.backend} fusion {args.fusion}: {ran} programs{seeds}, {bad} differ from NumPy")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
