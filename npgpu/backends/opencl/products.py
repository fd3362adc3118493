"""Products: inner, vdot, kron, cross, convolve/correlate, vecdot/matvec/vecmat, einsum,
linalg.norm and linalg.matrix_power, of real arrays. Float matrix products go through the tiled
matmul kernel (linalg.py); the others are sums of products: one map-reduce kernel over broadcast
views, with no temporary of the products.
"""

from __future__ import annotations

import math
import operator
import string
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_index

from ... import _fperr
from ...kernels import ir
from ..base import Backend
from .array import CLArray, _native_or_device, _norm_axes
from .routing import implements

#: NumPy's gufuncs of products this backend runs (the core asks supports_ufunc, then call_ufunc)
PRODUCT_GUFUNCS = frozenset(getattr(numpy, n) for n in ("vecdot", "matvec", "vecmat") if hasattr(numpy, n))
_LETTERS = frozenset(string.ascii_letters)
#: correlations with at most this many taps run as one elementwise kernel of shifted views
_SHORT_KERNEL = 16
#: the core dimensions of each product gufunc's operands
_CORE_DIMS = {"vecdot": (1, 1), "matvec": (2, 1), "vecmat": (1, 2)}


def _both_on_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return len(args) > 1 and all(_native_or_device(x) and x.dtype.kind in "biuf" for x in args[:2])


def _cross_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """cross of 3-vectors (NumPy deprecates 2-vectors, with a warning); bool is NumPy's TypeError."""
    if not _both_on_device(args, kwargs) or any(x.dtype.kind == "b" for x in args[:2]):
        return False
    axis = kwargs.get("axis")
    axes = (axis, axis) if axis is not None else (kwargs.get("axisa", -1), kwargs.get("axisb", -1))
    try:
        return all(x.shape[ax] == 3 for x, ax in zip(args[:2], axes, strict=True))
    except (IndexError, TypeError):
        return False  # (NumPy's AxisError)


def _parse_einsum(subscripts: str, count: int) -> tuple[list[str], str] | None:
    """Input and output subscripts of an einsum without ellipses or repeated letters in one operand
    (None: NumPy's to interpret); the implicit output is NumPy's (the letters seen once, sorted)."""
    text = subscripts.replace(" ", "")
    inputs_text, arrow, output = text.partition("->")
    inputs = inputs_text.split(",")
    if len(inputs) != count or "." in text or not set(text.replace(",", "").replace("->", "")) <= _LETTERS:
        return None
    if any(len(set(s)) != len(s) for s in inputs):
        return None
    if not arrow:
        letters = "".join(inputs)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or not set(output) <= set("".join(inputs)):
        return None
    return inputs, output


def _einsum_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    if not args or not isinstance(args[0], str) or len(args) < 2:
        return False
    if not all(_native_or_device(x) and x.dtype.kind in "biuf" for x in args[1:]):
        return False
    if kwargs.get("optimize", False) not in (False, True, "greedy", "optimal"):
        return False  # (an explicit path, or one NumPy rejects with its RuntimeError)
    return _parse_einsum(args[0], len(args) - 1) is not None


def _is_matrix_norm(x: Any, ord: Any, axis: Any) -> bool:  # noqa: A002  (NumPy's name)
    if isinstance(axis, tuple):
        return len(axis) == 2
    return axis is None and x.ndim == 2 and ord is not None


def _norm_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    if not args or not _native_or_device(args[0]):
        return False
    ord = args[1] if len(args) > 1 else kwargs.get("ord")  # noqa: A001
    axis = args[2] if len(args) > 2 else kwargs.get("axis")
    if _is_matrix_norm(args[0], ord, axis):
        return ord in (None, "fro", "f", 1, -1, numpy.inf, -numpy.inf)  # (2, -2 and 'nuc' need an SVD)
    return isinstance(ord, (int, float, numpy.integer, numpy.floating, type(None))) and not isinstance(ord, bool)


def _power_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    n = args[1] if len(args) > 1 else kwargs.get("n")
    return isinstance(n, (int, numpy.integer)) and not isinstance(n, bool) and n >= 0  # (negative: an inverse)


class Products(Backend):
    """Sums of products over broadcast views, and the functions made of them."""

    def sum_of_products(self, x: CLArray, y: CLArray, shape: tuple[int, ...], axes: tuple[int, ...],
                        dtype: numpy.dtype) -> CLArray:
        """sum(x * y) over ``axes`` of ``shape`` (x and y broadcast to it), computed in ``dtype``:
        one map-reduce kernel (the products are never stored)."""
        dtype = numpy.dtype(dtype)
        key = ("sum_of_products", x.dtype, y.dtype, dtype)
        graph = self._graphs.get(key)
        if graph is None:
            b = ir.GraphBuilder()
            product = b.apply(numpy.multiply, (dtype,) * 3, b.cast(b.input(x.dtype), dtype),
                              b.cast(b.input(y.dtype), dtype))[0]
            graph = self._graphs[key] = b.build([product])
        # (NumPy's products are BLAS's or einsum's loops, not its pairwise sum: the fastest order here)
        return self.map_reduce(graph, [x, y], [], "add", axes, dtype, None, shape, numpy_order=False)[0]

    def contract(self, a: CLArray, b: CLArray) -> CLArray:
        """``a @ b`` over the last axis of a and the second-to-last of b (batch axes broadcast):
        the tiled matmul for floats, a sum of products for integers and bools."""
        dt = numpy.result_type(a.dtype, b.dtype)
        if dt.kind == "f":
            return self.matmul(a, b)
        batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        x = self.reshape(a, a.shape + (1,))
        y = self.reshape(b, b.shape[:-2] + (1,) + b.shape[-2:])
        shape = batch + (m, k, n)
        return self.sum_of_products(x, y, shape, (len(shape) - 2,), dt)

    @implements(numpy.inner, kwargs=(), accepts=_both_on_device)
    def inner(self, a: CLArray, b: CLArray) -> CLArray:
        """NumPy's inner: sums of products over the last axes of a and b (a scalar of two scalars)."""
        if a.ndim == 0 or b.ndim == 0:
            return self.ufunc_call(numpy.multiply, (a, b), errstate=_fperr.current())
        if a.shape[-1] != b.shape[-1]:
            raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                             f"{b.shape[-1]} (dim {b.ndim - 1})")
        k = a.shape[-1]
        left = self.reshape(a, (math.prod(a.shape[:-1]), k))
        right = self.transpose(self.reshape(b, (math.prod(b.shape[:-1]), k)))
        return self.reshape(self.contract(left, right), a.shape[:-1] + b.shape[:-1])

    @implements(numpy.vdot, kwargs=(), accepts=_both_on_device)
    def vdot(self, a: CLArray, b: CLArray) -> CLArray:
        """NumPy's vdot of real arrays: the sum of products of the flattened arrays."""
        if a.size != b.size:
            raise ValueError("cannot reshape array: vdot's operands differ in size")
        x, y = self.ravel(a), self.ravel(b)
        return self.sum_of_products(x, y, x.shape, (0,), numpy.result_type(a.dtype, b.dtype))

    @implements(numpy.kron, kwargs=(), accepts=_both_on_device)
    def kron(self, a: CLArray, b: CLArray) -> CLArray:
        """NumPy's kron: the outer product with a's and b's axes interleaved, then merged."""
        nd = max(a.ndim, b.ndim)
        a = self.reshape(a, (1,) * (nd - a.ndim) + a.shape)
        b = self.reshape(b, (1,) * (nd - b.ndim) + b.shape)
        x = self.reshape(a, tuple(s for n in a.shape for s in (n, 1)))
        y = self.reshape(b, tuple(s for n in b.shape for s in (1, n)))
        product = self.ufunc_call(numpy.multiply, (x, y), errstate=_fperr.current())
        return self.reshape(product, tuple(p * q for p, q in zip(a.shape, b.shape, strict=True)))

    @implements(numpy.cross, kwargs=("axisa", "axisb", "axisc", "axis"), accepts=_cross_accepted)
    def cross(self, a: CLArray, b: CLArray, axisa: int = -1, axisb: int = -1, axisc: int = -1,
              axis: int | None = None) -> CLArray:
        """NumPy's cross of 3-vectors: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0), stacked on axisc."""
        if axis is not None:
            axisa = axisb = axisc = axis
        a = self.numpy_view(numpy.moveaxis, a, axisa, -1)
        b = self.numpy_view(numpy.moveaxis, b, axisb, -1)
        shape = numpy.broadcast_shapes(a.shape[:-1], b.shape[:-1])
        axisc = normalize_axis_index(axisc, len(shape) + 1)
        errstate = _fperr.current()

        def part(x: CLArray, i: int) -> CLArray:
            return x.view(x.shape[:-1], x.strides[:-1], x.offset + i * x.strides[-1])

        def minor(i: int, j: int) -> CLArray:
            first = self.ufunc_call(numpy.multiply, (part(a, i), part(b, j)), errstate=errstate)
            second = self.ufunc_call(numpy.multiply, (part(a, j), part(b, i)), errstate=errstate)
            return self.ufunc_call(numpy.subtract, (first, second), errstate=errstate)

        return self.stack([minor(1, 2), minor(2, 0), minor(0, 1)], axis=axisc)

    @implements(numpy.correlate, kwargs=("mode",), accepts=_both_on_device)
    def correlate(self, a: CLArray, v: CLArray, mode: str = "valid") -> CLArray:
        """NumPy's correlate of real 1-d arrays: c[k] = sum_n a[n + k] v[n] over a padded window view."""
        return self._correlate(a, v, mode, "correlate")

    @implements(numpy.convolve, kwargs=("mode",), accepts=_both_on_device)
    def convolve(self, a: CLArray, v: CLArray, mode: str = "full") -> CLArray:
        """NumPy's convolve: the correlation with the reversed (shorter) kernel."""
        return self._correlate(a, v, mode, "convolve")

    def _correlate(self, a: CLArray, v: CLArray, mode: str, how: str) -> CLArray:
        getattr(numpy, how)(numpy.zeros(min(a.size, 1)), numpy.zeros(min(v.size, 1)), mode)  # (NumPy's errors)
        a, v = self.ravel(a), self.ravel(v)
        if a.ndim != 1 or v.ndim != 1:
            raise ValueError("object too deep for desired array")
        inverted = False
        if how == "convolve":
            if v.size > a.size:
                a, v = v, a
            v = self.numpy_view(lambda x: x[::-1], v)
        elif v.size > a.size:
            a, v, inverted = v, a, True
        n, m = a.size, v.size
        if isinstance(mode, (int, numpy.integer)):  # (NumPy's integer modes, checked by the probe above)
            mode = ("valid", "same", "full")[int(mode)]
        mode = {"v": "valid", "s": "same", "f": "full"}.get(str(mode)[:1], mode)
        left, right = {"valid": (0, 0), "same": (m // 2, m - 1 - m // 2), "full": (m - 1, m - 1)}[mode]
        dt = numpy.result_type(a.dtype, v.dtype)
        padded = self.zeros((n + left + right,), dt)
        self.copy_into(padded.view((n,), padded.strides, padded.offset + left * dt.itemsize), a)
        length = padded.size - m + 1
        if m <= _SHORT_KERNEL:
            result = self._short_correlate(padded, self.to_host(v), length, dt)
        else:
            windows = padded.view((length, m), (dt.itemsize, dt.itemsize), padded.offset)
            kernel = v.view((1, m), (0, v.strides[0]), v.offset)
            result = self.sum_of_products(windows, kernel, (length, m), (1,), dt)
        return self.copy(self.numpy_view(lambda x: x[::-1], result)) if inverted else result

    def _short_correlate(self, padded: CLArray, taps: numpy.ndarray, length: int, dt: numpy.dtype) -> CLArray:
        """A correlation with a few taps as one elementwise kernel: sum_j taps[j] * padded[j:j + length],
        the taps as kernel arguments (contiguous inputs: vector code on CPU devices). Measured on PoCL
        (2 cores), 4e6 float64 with 16 taps: NumPy 51 ms; the window map-reduce 200-260 ms."""
        m = taps.size
        key = ("short_correlate", m, dt)
        graph = self._graphs.get(key)
        if graph is None:
            b = ir.GraphBuilder()
            total = None
            for _ in range(m):
                term = b.apply(numpy.multiply, (dt,) * 3, b.input(dt), b.scalar(dt))[0]
                total = term if total is None else b.apply(numpy.add, (dt,) * 3, total, term)[0]
            graph = self._graphs[key] = b.build([total])
        shifted = [padded.view((length,), padded.strides, padded.offset + j * dt.itemsize) for j in range(m)]
        result = self.empty((length,), dt)
        if length:
            self.run_elementwise(graph, shifted, [result], [dt.type(t) for t in taps.astype(dt)])
        return result

    # -- gufuncs: the core calls them through supports_ufunc / call_ufunc --------------------------
    def product_gufunc(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...],
                       out: Any = None) -> CLArray:
        """vecdot (sums over the last axes), matvec (A @ v) and vecmat (v @ A) of real arrays."""
        x1, x2 = (x if isinstance(x, CLArray) else self.from_host(numpy.asarray(x)) for x in inputs)
        dt = loop[-1]
        for k, (x, needed) in enumerate(zip((x1, x2), _CORE_DIMS[ufunc.__name__], strict=True)):
            if x.ndim < needed:
                raise ValueError(f"{ufunc.__name__}: Input operand {k} does not have enough dimensions (has "
                                 f"{x.ndim}, gufunc core with signature {ufunc.signature} requires {needed})")
        if ufunc is numpy.vecdot:
            _same_core(ufunc, x1.shape[-1], x2.shape[-1], 0)
            shape = numpy.broadcast_shapes(x1.shape, x2.shape)
            result = self.sum_of_products(x1, x2, shape, (len(shape) - 1,), dt)
        elif ufunc is numpy.matvec:  # (..., m, n) @ (..., n) -> (..., m)
            _same_core(ufunc, x1.shape[-1], x2.shape[-1], 1)
            v = self.reshape(x2, x2.shape[:-1] + (1,) + x2.shape[-1:])
            shape = numpy.broadcast_shapes(x1.shape, v.shape)
            result = self.sum_of_products(x1, v, shape, (len(shape) - 1,), dt)
        else:  # vecmat: (..., m) @ (..., m, n) -> (..., n)
            _same_core(ufunc, x1.shape[-1], x2.shape[-2], 1)
            v = self.reshape(x1, x1.shape + (1,))
            shape = numpy.broadcast_shapes(v.shape, x2.shape)
            result = self.sum_of_products(v, x2, shape, (len(shape) - 2,), dt)
        if out is not None:
            target = out[0] if isinstance(out, tuple) else out
            self.copy_into(target, result)
            return target
        return result

    @implements(numpy.einsum, kwargs=("optimize",), accepts=_einsum_accepted)
    def einsum(self, subscripts: str, *operands: CLArray, optimize: Any = False) -> CLArray:
        """NumPy's einsum without ellipses or repeated letters in an operand: operands contracted
        in pairs, left to right (letters no later operand or the output needs summed at once)."""
        parsed = _parse_einsum(subscripts, len(operands))
        assert parsed is not None  # (einsum's accepts predicate)
        inputs, output = parsed
        sizes: dict[str, int] = {}
        for letters, x in zip(inputs, operands, strict=True):
            if len(letters) != x.ndim:
                raise ValueError("operand has more dimensions than subscripts given in einstein sum, but no '...' "
                                 "ellipsis provided to broadcast the extra dimensions.")
            for c, n in zip(letters, x.shape, strict=True):
                if sizes.setdefault(c, n) != n:
                    if n == 1 or sizes[c] == 1:
                        sizes[c] = max(n, sizes[c])
                    else:
                        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                                         f"[original->remapped]: size of label '{c}' is {sizes[c]} and {n}")
        dt = numpy.result_type(*(x.dtype for x in operands))
        terms = list(zip(inputs, operands, strict=True))
        letters, current = terms[0]
        for k in range(1, len(terms)):
            other_letters, other = terms[k]
            later = set(output).union(*(t[0] for t in terms[k + 1:]))
            letters, current = self._pair(letters, current, other_letters, other, later, sizes, dt)
        # the last term: sum what the output doesn't keep, then order its axes as the output's
        drop = tuple(i for i, c in enumerate(letters) if c not in output)
        if drop:
            current = self.reduction("sum", current, axis=drop, dtype=dt)
            letters = "".join(c for c in letters if c in output)
        current = self.transpose(current, [letters.index(c) for c in output])
        current = self.numpy_view(numpy.broadcast_to, current, tuple(sizes[c] for c in output))
        return self.copy(current, dt)

    def _pair(self, la: str, a: CLArray, lb: str, b: CLArray, later: set[str], sizes: dict[str, int],
              dt: numpy.dtype) -> tuple[str, CLArray]:
        """Contract two einsum terms: letters of both that nothing later needs are summed."""
        union = la + "".join(c for c in lb if c not in la)
        summed = [c for c in union if c in la and c in lb and c not in later]
        kept = [c for c in union if c not in summed]
        order = kept + summed

        def aligned(letters: str, x: CLArray) -> CLArray:
            present = [c for c in order if c in letters]
            x = self.transpose(x, [letters.index(c) for c in present])
            shape = tuple(x.shape[present.index(c)] if c in present else 1 for c in order)
            return self.reshape(x, shape)

        shape = tuple(sizes[c] for c in order)
        axes = tuple(range(len(kept), len(order)))
        if axes:
            result = self.sum_of_products(aligned(la, a), aligned(lb, b), shape, axes, dt)
        else:
            result = self.ufunc_call(numpy.multiply, (aligned(la, a), aligned(lb, b)))
            result = self.copy(result, dt) if result.dtype != dt else result
        return "".join(kept), result

    @implements(numpy.linalg.norm, kwargs=("ord", "axis", "keepdims"), accepts=_norm_accepted)
    def norm(self, x: CLArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
        """NumPy's linalg.norm of real arrays: the vector norms and the matrix norms other than 2, -2
        and 'nuc' (those need an SVD: NumPy's)."""
        if x.dtype.kind != "f":
            x = self.copy(x, numpy.float64)
        errstate = _fperr.current()
        if axis is None and (ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1)):
            flat = self.ravel(x)
            total = self.sum_of_products(flat, flat, flat.shape, (0,), x.dtype)
            result = self.ufunc_call(numpy.sqrt, (total,), errstate=errstate)
            return self.reshape(result, (1,) * x.ndim) if keepdims else result
        axes = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (operator.index(axis),)
        if len(axes) == 1:
            return self._vector_norm(x, ord, axes, keepdims)
        if len(axes) != 2:
            raise ValueError("Improper number of dimensions to norm.")
        row, col = (normalize_axis_index(ax, x.ndim) for ax in axes)
        if row == col:
            raise ValueError("Duplicate axes given.")
        magnitude = self.ufunc_call(numpy.absolute, (x,))
        if ord in (None, "fro", "f"):
            result = self.ufunc_call(numpy.sqrt, (self.sum_of_products(x, x, x.shape, tuple(sorted((row, col))),
                                                                       x.dtype),), errstate=errstate)
        elif ord in (1, -1):  # the largest (smallest) column sum
            sums = self.reduction("sum", magnitude, axis=row)
            result = self.reduction("max" if ord == 1 else "min", sums, axis=col - (col > row))
        elif ord in (numpy.inf, -numpy.inf):  # the largest (smallest) row sum
            sums = self.reduction("sum", magnitude, axis=col)
            result = self.reduction("max" if ord > 0 else "min", sums, axis=row - (row > col))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            result = self.reshape(result, tuple(1 if d in (row, col) else n for d, n in enumerate(x.shape)))
        return result

    def _vector_norm(self, x: CLArray, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:  # noqa: A002
        axes = _norm_axes(axes, x.ndim)
        errstate = _fperr.current()
        if ord is None or ord == 2:
            total = self.sum_of_products(x, x, x.shape, axes, x.dtype)
            result = self.ufunc_call(numpy.sqrt, (total,), errstate=errstate)
            return self._finish(result, x.shape, axes, keepdims, None)
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        if ord == 0:
            nonzero = self.copy(self.ufunc_call(numpy.not_equal, (x, 0)), x.dtype)
            return self.reduction("sum", nonzero, axis=axes, keepdims=keepdims)
        magnitude = self.ufunc_call(numpy.absolute, (x,))
        if ord == numpy.inf:
            return self.reduction("max", magnitude, axis=axes, keepdims=keepdims)
        if ord == -numpy.inf:
            return self.reduction("min", magnitude, axis=axes, keepdims=keepdims)
        if ord == 1:
            return self.reduction("sum", magnitude, axis=axes, keepdims=keepdims)
        powered = self.ufunc_call(numpy.power, (magnitude, float(ord)), errstate=errstate)
        total = self.reduction("sum", powered, axis=axes, keepdims=keepdims)
        return self.ufunc_call(numpy.power, (total, total.dtype.type(1) / total.dtype.type(ord)), errstate=errstate)

    @implements(numpy.linalg.matrix_power, kwargs=("n",), accepts=_power_accepted)
    def matrix_power(self, a: CLArray, n: int) -> CLArray:
        """NumPy's matrix_power for n >= 0: binary powers by matrix products (n < 0 needs an inverse)."""
        if a.ndim < 2:
            raise numpy.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                                           "two-dimensional")
        if a.shape[-1] != a.shape[-2]:
            raise numpy.linalg.LinAlgError("Last 2 dimensions of the array must be square")
        n = operator.index(n)
        if n == 0:
            result = self.zeros(a.shape, a.dtype)
            self.fill(self.numpy_view(numpy.diagonal, result, 0, -2, -1), 1)
            return result
        square: CLArray | None = None
        result: CLArray | None = None
        while n > 0:
            square = a if square is None else self.contract(square, square)
            n, bit = divmod(n, 2)
            if bit:
                result = square if result is None else self.contract(result, square)
        assert result is not None
        return self.copy(result) if result is a else result


def _same_core(ufunc: numpy.ufunc, first: int, second: int, operand: int) -> None:
    if first != second:
        raise ValueError(f"{ufunc.__name__}: Input operand 1 has a mismatch in its core dimension {operand}, with "
                         f"gufunc signature {ufunc.signature} (size {second} is different from {first})")
