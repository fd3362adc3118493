"""NumPy's definitions of functions whose CuPy versions answer otherwise, written over the array
module's primitives (mixin Compositions of ArrayModuleBackend: CuPy's and the emulated backend's).

Each says in its docstring where CuPy differs. Checks that need values read one small reduction back.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ... import _fperr, _ops
from ..._errors import NeedsNumpyError
from ...kernels import ir
from ...kernels import ufuncs as _table

#: NumPy's product gufuncs (NumPy 2.2+; CuPy has none), and their operands' core dimensions
PRODUCT_GUFUNCS = {getattr(numpy, n): dims for n, dims in (("vecdot", (1, 1)), ("matvec", (2, 1)),
                                                             ("vecmat", (1, 2))) if hasattr(numpy, n)}
_CLIP_MODES = ("clip", "raise", "wrap")
#: above this many index-times-position pairs put skips the step that makes the last of repeated
#: positions win (the sort key would overflow int64)
_PUT_KEY_LIMIT = 1 << 62
#: rows of correlation windows multiplied at once (bounds the windows' copy: rows x taps elements)
_WINDOW_ELEMENTS = 1 << 24


def _moment_graph(src: numpy.dtype, acc: numpy.dtype, skip_nan: bool, check: int) -> Any:
    """The values var's sums add: the data in ``acc`` (``check`` 0), or, with a second input (the
    mean), its squared deviations, the subtraction and the squaring checked for ``check`` (NaN
    values count as 0 with ``skip_nan``, as nanvar replaces them)."""
    b = ir.GraphBuilder()
    x = b.cast(b.input(src), acc)
    nan = b.apply(numpy.isnan, (acc, numpy.dtype(bool)), x)[0] if skip_nan else None
    if nan is not None:
        x = b.select(nan, b.scalar(acc), x, acc)
    if not check:
        return b.build([x])
    loop2, loop3 = (acc,) * 2, (acc,) * 3
    d = b.apply(numpy.subtract, loop3, x, b.input(acc),
                check=check & _table.error_categories(numpy.subtract, loop3))[0]
    if nan is None:  # (NumPy's var squares, nanvar multiplies: the names its messages give)
        square = b.apply(numpy.square, loop2, d, check=check & _table.error_categories(numpy.square, loop2))
    else:
        d = b.select(nan, b.scalar(acc), d, acc)
        square = b.apply(numpy.multiply, loop3, d, d, check=check & _table.error_categories(numpy.multiply, loop3))
    return b.build([square[0]])


def _tri_deprecates_non_integers() -> bool:
    """Whether the installed NumPy's tri warns for a non-integer N, M or k (NumPy 2.5 deprecates them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numpy.tri(1, 1, 0.5)
    return any(issubclass(w.category, DeprecationWarning) for w in caught)


_TRI_WARNS = _tri_deprecates_non_integers()


def _clip_mode(mode: Any) -> str:
    if mode not in _CLIP_MODES:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    return mode


def _cast_error(dtype: numpy.dtype) -> TypeError:
    return TypeError(f"Cannot cast array data from {dtype!r} to {numpy.dtype(numpy.intp)!r} according to the rule "
                     "'safe'")


def _nested_shape(obj: Any, is_native: Any, leaves: list[Any], depth: int = 0) -> tuple[int, ...]:
    """The shape NumPy gives a nested list/tuple of device arrays and scalars, its leaves appended
    to ``leaves`` in C order; NumPy's ValueError for an inhomogeneous nesting."""
    if is_native(obj):
        leaves.append(obj)
        return tuple(obj.shape)
    if not isinstance(obj, (list, tuple)):
        leaves.append(obj)
        return ()
    shapes = {_nested_shape(x, is_native, leaves, depth + 1) for x in obj}
    if len(shapes) > 1:
        raise ValueError("setting an array element with a sequence. The requested array has an inhomogeneous "
                         f"shape after {depth + 1} dimensions. The detected shape was ({len(obj)},) + "
                         "inhomogeneous part.")
    return (len(obj), *(shapes.pop() if shapes else ()))


def _leaves(obj: Any) -> Any:
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def _holds_native(obj: Any, is_native: Any) -> bool:
    return any(is_native(x) for x in _leaves(obj))


def numeric_sequence(obj: Any) -> bool:
    """Whether a list/tuple holds only arrays of numbers (the device's, as the dispatcher asks before
    it hands over natives) and numbers, nested (Compositions.array takes it)."""
    return all(type(x) in (int, float, complex, bool) or getattr(getattr(x, "dtype", None), "kind", "O") in "biufc"
               for x in _leaves(obj))


class Compositions:
    """NumPy's definitions over the array module ``xp``'s primitives (mixed into ArrayModuleBackend)."""

    xp: Any
    is_native: Any
    apply_ufunc: Any
    from_host: Any
    to_host: Any
    run_fused: Any
    _eager_graph: Any
    _method_astype: Any
    _converts_floats: Any
    reduce_fused: Any

    def _read(self, *values: Any) -> list[Any]:
        """Device scalars (0-d results of reductions) read back in one transfer."""
        return self.xp.stack(values).tolist()

    # -- take, put, take_along_axis: CuPy wraps out-of-range indices (cupy.take has no mode) ----------
    def _check_bounds(self, index: Any, size: int, axis: int) -> None:
        """NumPy's IndexError where an index lies outside ``-size <= i < size`` (one readback),
        naming the first such index in index order, as NumPy's loop does (a host index: no readback)."""
        if not index.size:
            return
        low, high = self._read(index.min(), index.max()) if self.is_native(index) else (index.min(), index.max())
        if low < -size or high >= size:
            flat = index.ravel()
            first = int(flat[int(((flat < -size) | (flat >= size)).argmax())])
            raise IndexError(f"index {first} is out of bounds for axis {axis} with size {size}")

    def _index_array(self, indices: Any, casting: str) -> Any:
        """Integer indices on the device: a device array as NumPy accepts it (``casting`` to intp,
        else NumPy's TypeError), anything else converted as NumPy converts it (force-cast)."""
        if self.is_native(indices):
            if not numpy.can_cast(indices.dtype, numpy.intp, casting):
                raise _cast_error(indices.dtype)
            # (as intp, as NumPy takes them: int8 indices + a size of 200 must not overflow)
            return indices.astype(numpy.intp, copy=False)
        return self.from_host(numpy.asarray(indices).astype(numpy.intp))

    def _adjusted(self, index: Any, size: int, axis: int, mode: str) -> Any:
        """Indices in ``range(size)`` by NumPy's ``mode``: raise (checked, negatives counted from the
        end), wrap (modulo) or clip (negatives to 0)."""
        if mode == "raise":
            self._check_bounds(index, size, axis)
            return self.xp.where(index < 0, index + size, index)
        if mode == "wrap":
            return self.xp.remainder(index, size)
        return self.xp.clip(index, 0, size - 1)

    def take(self, a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
        """NumPy's take: IndexError for out-of-range indices (mode 'raise', the default), 'wrap' and
        'clip' as NumPy's (CuPy's take has no mode and wraps every index)."""
        mode = _clip_mode(mode)
        xp = self.xp
        if out is not None and self.is_native(out) and out.dtype != a.dtype:
            # NumPy's warnings for an out= of another dtype (NumPy 2.5 deprecates another kind), from
            # its own take of stand-ins: they depend on the dtypes alone
            numpy.take(numpy.zeros(1, a.dtype), numpy.zeros(1, numpy.intp), out=numpy.zeros(1, out.dtype))
            if self._converts_floats(a, out.dtype):
                # (NumPy takes into a copy of a's dtype, then casts it into out)
                out[...] = self._method_astype(self.take(a, indices, axis, None, mode), out.dtype)
                return out
        if axis is None:
            size, position = a.size, 0
        else:
            position = normalize_axis_index(axis, max(a.ndim, 1))
            size = a.shape[position] if a.ndim else 1
        scalar = type(indices) in (int, bool) or isinstance(indices, numpy.integer)
        index = int(indices) if scalar else self._index_array(indices, "same_kind")
        others = 1 if axis is None or not a.ndim else math.prod(a.shape[:position] + a.shape[position + 1:])
        if not others * (1 if scalar else index.size):
            return xp.take(a, index, axis, out)  # (nothing is taken: NumPy checks no index)
        if size == 0:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        if not scalar:
            return xp.take(a, self._adjusted(index, size, position, mode), axis, out)
        if mode == "raise" and not -size <= index < size:
            raise IndexError(f"index {index} is out of bounds for axis {position} with size {size}")
        return xp.take(a, index % size if mode != "clip" else min(max(index, 0), size - 1), axis, out)

    def put(self, a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
        """NumPy's put: mode 'raise' by default (CuPy's default is 'wrap'), and the last of repeated
        positions wins (CuPy's kernel writes them in any order). In raise mode NumPy's loop writes a
        C-contiguous array in place, in index order, until the first bad index: the positions
        before it stay written; any other array is written through a copy that is then discarded."""
        mode = _clip_mode(mode)
        xp = self.xp
        positions = self._index_array(ind, "safe").ravel()  # (NumPy's order of checks and conversions)
        n, k = a.size, positions.size
        if k and n == 0:
            raise IndexError("cannot replace elements of an empty array")
        values = self._method_astype(v, a.dtype) if self.is_native(v) else self.from_host(numpy.asarray(v, a.dtype))
        values = values.ravel()
        if not values.size or not k:
            return
        if mode == "raise":
            outside = (positions < -n) | (positions >= n)
            first, bad = self._read(outside.argmax(), outside.any())  # (one readback)
            if bad:
                if first and a.flags.c_contiguous:
                    self.put(a, positions[:first], v, mode)
                raise IndexError(f"index {int(positions[first])} is out of bounds for axis 0 with size {n}")
            positions = xp.where(positions < 0, positions + n, positions)
        else:
            positions = self._adjusted(positions, n, 0, mode)
        positions = positions.astype(numpy.int64, copy=False)
        if values.size != k:
            values = values[xp.arange(k) % values.size] if values.size < k else values[:k]
        if k > 1 and n * k < _PUT_KEY_LIMIT:
            keys = xp.sort(positions * k + xp.arange(k))  # (unique keys: position-major, then call order)
            positions, order = keys // k, keys % k
            last = xp.concatenate((positions[1:] != positions[:-1], xp.ones(1, bool)))
            positions, values = positions[last], values[order[last]]
        if a.ndim == 0:
            a[...] = values[-1]
        else:
            a[xp.unravel_index(positions, a.shape)] = values

    def take_along_axis(self, arr: Any, indices: Any, axis: Any = -1) -> Any:
        """NumPy's take_along_axis: IndexError for out-of-range indices (CuPy's fancy index wraps them)."""
        if not self.is_native(indices) or indices.dtype.kind not in "iu":
            raise IndexError("`indices` must be an integer array")
        if axis is None:
            if indices.ndim != 1:
                raise ValueError("when axis=None, `indices` must have a single dimension.")
            arr, axis = arr.ravel(), 0
        if indices.ndim != arr.ndim:
            raise ValueError("`indices` and `arr` must have the same number of dimensions")
        axis = normalize_axis_index(axis, arr.ndim)
        # (NumPy's fancy index: arange grids along the other axes, broadcast with the indices first)
        shapes = [indices.shape if d == axis else tuple(n if k == d else 1 for k in range(arr.ndim))
                  for d, n in enumerate(arr.shape)]
        try:
            numpy.broadcast_shapes(*shapes)
        except ValueError:
            listed = "".join(f"({','.join(map(str, shape))}{',' if len(shape) == 1 else ''}) " for shape in shapes)
            raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes {listed}") \
                from None
        self._check_bounds(indices, arr.shape[axis], axis)
        return self.xp.take_along_axis(arr, indices, axis)

    # -- array/asarray of sequences holding device arrays ------------------------------------------------
    def array(self, obj: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K", subok: bool = False,
              ndmin: int = 0) -> Any:
        """NumPy's array; of a nested sequence of device arrays and numbers: NumPy's shape (its error
        for inhomogeneous ones), dtype (as NumPy discovers the leaves' types), casts and copy=False
        error (CuPy's concatenates only arrays of one shape and ignores copy=False there)."""
        if not isinstance(obj, (list, tuple)):
            if dtype is not None and copy is not False and self._converts_floats(obj, dtype):
                result = self._method_astype(obj, dtype, order=order if order in ("C", "F", "A") else "K")
                return result.reshape((1,) * (ndmin - result.ndim) + result.shape) if ndmin > result.ndim else result
            return self.xp.array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
        return self._from_sequence(obj, dtype, copy, order, ndmin)

    def asarray(self, a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None) -> Any:
        """NumPy's asarray (``array`` for sequences)."""
        if not isinstance(a, (list, tuple)):
            if dtype is not None and copy is not False and self._converts_floats(a, dtype):
                return self._method_astype(a, dtype, order=order if order in ("C", "F", "A") else "K")
            return self.xp.asarray(a, dtype, order, copy=copy)
        return self._from_sequence(a, dtype, copy, order, 0)

    def _from_sequence(self, obj: Any, dtype: Any, copy: Any, order: Any, ndmin: int) -> Any:
        xp = self.xp
        if not _holds_native(obj, self.is_native):  # (numbers only: NumPy makes it, uploaded)
            return self.from_host(numpy.array(obj, dtype, copy=copy, order=order or "K", ndmin=ndmin))
        leaves: list[Any] = []
        shape = _nested_shape(obj, self.is_native, leaves)
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        if dtype is None:  # (NumPy's discovery: each device array by its dtype, each number by its value)
            dtype = numpy.array([numpy.zeros((), x.dtype) if self.is_native(x) else x for x in leaves]).dtype \
                if leaves else numpy.dtype(float)
        dtype = numpy.dtype(dtype)
        parts: list[Any] = []
        numbers: list[Any] = []
        for x in leaves:
            if self.is_native(x):
                if numbers:
                    parts.append(self.from_host(numpy.array(numbers, dtype)))
                    numbers = []
                parts.append(self._method_astype(x, dtype).ravel())
            else:
                numbers.append(x)
        if numbers:
            parts.append(self.from_host(numpy.array(numbers, dtype)))
        flat = xp.concatenate(parts) if len(parts) > 1 else parts[0] if parts else xp.empty(0, dtype)
        shape = (1,) * (ndmin - len(shape)) + shape
        result = flat.reshape(shape)
        return xp.asfortranarray(result) if order in ("F", "f") and result.ndim > 1 else result

    # -- tri: NumPy 2.5 deprecates non-integer arguments (CuPy's kernel truncates them to int32) ---------
    def tri(self, N: Any, M: Any = None, k: Any = 0, dtype: Any = float) -> Any:
        """NumPy's tri; a non-integer ``k`` as NumPy takes it (its column bounds ``arange(-k, M - k)``
        in an integer dtype), with NumPy's DeprecationWarning where the installed NumPy gives it."""
        M = N if M is None else M
        try:
            k = operator.index(k)
        except TypeError:
            if _TRI_WARNS:
                warnings.warn(f"Cannot convert {type(k).__name__} safely to an integer.This will raise an error in "
                              "future versions (Deprecated NumPy 2.5)", DeprecationWarning, stacklevel=5)
            bounds = self.from_host(numpy.arange(-k, M - k, dtype=numpy.int64))
            rows = self.xp.arange(N, dtype=numpy.int64)
            return self._method_astype(self.xp.greater_equal(rows[:, None], bounds[None, :]), numpy.dtype(dtype))
        return self.xp.tri(N, M, k, dtype)

    # -- linspace, logspace and arange of non-integers: NumPy's digits -------------------------------
    # CuPy computes each element as start + i * step in one kernel, which its compiler contracts into
    # one rounding (FMA); NumPy rounds the product and then the sum (arange from the step its first
    # two elements give). Values differed in the last place: mandelbrot2's grid, and every point
    # iterated from it. NumPy computes these, and the device gets the array (as on OpenCL).
    def linspace(self, start: Any, stop: Any, num: Any = 50, endpoint: Any = True, retstep: Any = False,
                 dtype: Any = None, axis: Any = 0) -> Any:
        """NumPy's linspace, computed by NumPy (device array bounds read back), put on the device."""
        result = numpy.linspace(self._host_bound(start), self._host_bound(stop), num, endpoint=endpoint,
                                retstep=retstep, dtype=dtype, axis=axis)
        return (self.from_host(result[0]), result[1]) if retstep else self.from_host(result)

    def logspace(self, start: Any, stop: Any, num: Any = 50, endpoint: Any = True, base: Any = 10.0,
                 dtype: Any = None, axis: Any = 0) -> Any:
        """NumPy's logspace (its linspace, then its power), computed by NumPy, put on the device."""
        return self.from_host(numpy.logspace(self._host_bound(start), self._host_bound(stop), num, endpoint=endpoint,
                                             base=self._host_bound(base), dtype=dtype, axis=axis))

    def arange(self, *args: Any, dtype: Any = None, **named: Any) -> Any:
        """NumPy's arange: of integers CuPy's (exact), of anything else computed by NumPy."""
        if not named and args and all(type(a) is int or isinstance(a, numpy.integer) for a in args) and \
                (dtype is None or numpy.dtype(dtype).kind in "iu"):
            return self.xp.arange(*args, dtype=dtype)
        return self.from_host(numpy.arange(*args, dtype=dtype, **named))

    def _host_bound(self, value: Any) -> Any:
        return self.to_host(value) if self.is_native(value) else value

    # -- pad(mode="wrap"): NumPy's wrap is periodic (strict multiples of the data since NumPy 1.25) ---------
    def pad(self, array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
        """NumPy's pad: its widths read as NumPy reads them (an int, pairs, or a dict of axis ->
        width; NumPy's TypeError for widths that are not integers), a Fortran-ordered array padded
        into one, and mode 'wrap' as NumPy defines it (the periodic extension of each axis), which
        CuPy's differs from where a pad is wider than the axis."""
        pairs = _ops.pad_pairs(pad_width, array.ndim)
        if not array.ndim:
            numpy.pad(numpy.zeros((), array.dtype), 0, mode, **kwargs)  # (NumPy's errors for the mode and keywords)
            return array.copy()  # (nothing to pad: NumPy's is a copy)
        if mode != "wrap":
            result = self.xp.pad(array, pairs, mode, **kwargs)
        else:
            if kwargs:
                raise ValueError(f"unsupported keyword arguments for mode 'wrap': {set(kwargs)}")
            result = array
            for axis, (left, right) in enumerate(pairs):
                n = array.shape[axis]
                if n == 0 and (left or right):
                    raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
                if left or right:
                    result = self.xp.take(result, self.xp.arange(-left, n + right) % n, axis)
            if result is array:
                result = array.copy()
        fortran = array.flags.f_contiguous and not array.flags.c_contiguous
        return self.xp.asfortranarray(result) if fortran and not result.flags.f_contiguous else result

    # -- convolve/correlate of floats: CuPy's go through an FFT; NumPy's are direct sums ---------------
    def convolve(self, a: Any, v: Any, mode: Any = "full") -> Any:
        """NumPy's convolve: the direct correlation with the reversed (shorter) kernel (CuPy's floats: FFT)."""
        return self._correlate(a, v, mode, "convolve")

    def correlate(self, a: Any, v: Any, mode: Any = "valid") -> Any:
        """NumPy's correlate: c[k] = sum_n a[n + k] conj(v[n]), summed directly (CuPy's floats: FFT)."""
        return self._correlate(a, v, mode, "correlate")

    def _correlate(self, a: Any, v: Any, mode: Any, how: str) -> Any:
        xp = self.xp
        a, v = (x if self.is_native(x) else xp.asarray(x) for x in (a, v))
        dt = numpy.result_type(a.dtype, v.dtype)
        if dt.kind not in "fc":
            return getattr(xp, how)(a, v, mode)  # (integers: CuPy's direct sums, exact)
        getattr(numpy, how)(numpy.zeros((1,) * a.ndim if a.size else 0), numpy.zeros((1,) * v.ndim if v.size else 0),
                            mode)  # (NumPy's errors: empty or 2-d operands, unknown modes)
        mode = ("valid", "same", "full")[int(mode)] if isinstance(mode, (int, numpy.integer)) else \
            {"v": "valid", "s": "same", "f": "full"}[mode.lower()[:1]]
        a, v = (self._method_astype(x, dt) if x.dtype != dt else x for x in (a.ravel(), v.ravel()))
        inverted = False
        if how == "convolve":
            if v.size > a.size:
                a, v = v, a
            v = v[::-1]
        else:
            if v.size > a.size:
                a, v, inverted = v, a, True
            if dt.kind == "c":
                v = self.apply_ufunc(numpy.conjugate, v)
        v = xp.ascontiguousarray(v)  # (the reversed kernel as a plain vector for the matmul)
        n, m = a.size, v.size
        left, right = {"valid": (0, 0), "same": (m // 2, m - 1 - m // 2), "full": (m - 1, m - 1)}[mode]
        padded = xp.zeros(n + left + right, dt)
        padded[left:left + n] = a
        length = padded.size - m + 1
        rows = max(1, _WINDOW_ELEMENTS // m)
        step = padded.strides[0]
        pieces = []
        for start in range(0, length, rows):
            count = min(rows, length - start)
            windows = xp.lib.stride_tricks.as_strided(padded[start:], (count, m), (step, step))
            pieces.append(xp.matmul(windows, v))
        result = xp.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        if inverted:
            result = result[::-1]
            if dt.kind == "c":  # (NumPy: correlate(v, a) = conj(correlate(a, v))[::-1])
                result = self.apply_ufunc(numpy.conjugate, result)
        return xp.ascontiguousarray(result)

    # -- vecdot, matvec, vecmat (CuPy has none): NumPy's definitions as batched matmuls ---------------
    def product_gufunc(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...] | None,
                       out: Any = None) -> Any:
        """vecdot(x1, x2) = sum(conj(x1) * x2) over the last axis; matvec(A, v) = A @ v and
        vecmat(v, A) = conj(v) @ A over the last axes, broadcast over the others, in NumPy's loop dtype."""
        xp = self.xp
        x1, x2 = (x if self.is_native(x) else xp.asarray(x) for x in inputs)
        if loop is None:
            loop = tuple(ufunc.resolve_dtypes((x1.dtype, x2.dtype, None)))
        for k, (x, needed) in enumerate(zip((x1, x2), PRODUCT_GUFUNCS[ufunc], strict=True)):
            if x.ndim < needed:
                raise ValueError(f"{ufunc.__name__}: Input operand {k} does not have enough dimensions (has "
                                 f"{x.ndim}, gufunc core with signature {ufunc.signature} requires {needed})")
        name = ufunc.__name__
        core = 0 if name == "vecdot" else 1
        first, second = x1.shape[-1], x2.shape[-2 if name == "vecmat" else -1]
        if first != second:
            raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension {core}, with gufunc "
                             f"signature {ufunc.signature} (size {second} is different from {first})")
        x1, x2 = (x if x.dtype == dt else self._method_astype(x, dt) for x, dt in zip((x1, x2), loop[:2]))
        if loop[0].kind == "c" and name != "matvec":
            x1 = self.apply_ufunc(numpy.conjugate, x1)
        if name == "vecdot":
            result = xp.matmul(x1[..., None, :], x2[..., :, None])[..., 0, 0]
        elif name == "matvec":
            result = xp.matmul(x1, x2[..., :, None])[..., 0]
        else:
            result = xp.matmul(x1[..., None, :], x2)[..., 0, :]
        if result.dtype != loop[-1]:
            result = self._method_astype(result, loop[-1])
        target = out[0] if isinstance(out, tuple) else out
        if target is None:
            return xp.ascontiguousarray(result) if result.ndim else result  # (ascontiguousarray: 1-d at least)
        target[...] = result
        return target

    # -- var, std and their NaN-skipping forms: NumPy's steps and their reports ----------------------
    def _moments(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """NumPy's var, std, nanvar or nanstd of a real float array, step by step as NumPy
        computes them, where NumPy's errstate asks for errors (CuPy's report none): the mean's
        sum ("... encountered in reduce"), the deviations ("invalid value encountered in subtract"
        where the mean is an infinity of the values), their squares ("overflow encountered in
        square", nanvar's "... in multiply") and their sum; two fused reductions of the code
        generator, each reporting as it goes. None where CuPy's function runs it (no errors
        asked for, other arguments, an empty or non-float array, no degrees of freedom left)."""
        names = ("a", "axis", "dtype", "out", "ddof", "keepdims")
        given = dict(zip(names, args)) | kwargs
        if len(args) > len(names) or not set(given) <= set(names) or given.get("out") is not None:
            return None
        a = given.get("a")
        dtype = given.get("dtype")
        ddof = given.get("ddof", 0)
        if not (self.is_native(a) and a.dtype.kind == "f" and a.size and _table.is_supported_dtype(a.dtype)
                and type(ddof) is int):
            return None
        acc = a.dtype if dtype is None else numpy.dtype(dtype)
        state = _fperr.current()
        check = state.check & (_table.OVER | _table.INVALID)
        if acc.kind != "f" or not _table.is_supported_dtype(acc) or not check:
            return None
        axis = given.get("axis")
        axes = tuple(range(a.ndim)) if axis is None else normalize_axis_tuple(axis, a.ndim)
        count = math.prod(a.shape[d] for d in axes)
        skip_nan = func in (numpy.nanvar, numpy.nanstd)
        if not skip_nan and count - ddof <= 0:
            return None  # (NumPy's warning and division by zero: CuPy's function, as before)
        kept = tuple(1 if d in axes else n for d, n in enumerate(a.shape))
        sums = self._eager_graph(("moment sums", a.dtype, acc, skip_nan, check),
                                 lambda: _moment_graph(a.dtype, acc, skip_nan, 0))
        squares = self._eager_graph(("moment squares", a.dtype, acc, skip_nan, check),
                                    lambda: _moment_graph(a.dtype, acc, skip_nan, check))
        total = self._reduced_checked(sums, [a], a.shape, axes, state, check).reshape(kept)
        with numpy.errstate(divide="ignore", invalid="ignore"):  # (NumPy's divisions by the counts: unreported)
            if skip_nan:
                present = self.xp.sum(self.xp.logical_not(self.xp.isnan(a)), axis=axes, keepdims=True)
                mean = self.apply_ufunc(numpy.true_divide, total, present, out=total)
            else:
                mean = self.apply_ufunc(numpy.true_divide, total, numpy.intp(count), out=total)
            variance = self._reduced_checked(squares, [a, mean], a.shape, axes, state, check)
            if skip_nan:
                freedom = present.reshape(variance.shape) - ddof
                variance = self.apply_ufunc(numpy.true_divide, variance, freedom, out=variance)
            else:
                variance = self.apply_ufunc(numpy.true_divide, variance, numpy.intp(count - ddof), out=variance)
        if skip_nan:
            bad = freedom <= 0
            if bool(bad.any()):
                warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=5)
                variance = self.xp.where(bad, variance.dtype.type(numpy.nan), variance)
        if func in (numpy.std, numpy.nanstd):
            variance = self.apply_ufunc(numpy.sqrt, variance, out=variance)
        return variance.reshape(kept) if given.get("keepdims", False) else variance

    def _reduced_checked(self, graph: Any, inputs: list[Any], shape: tuple[int, ...], axes: tuple[int, ...],
                         state: Any, check: int) -> Any:
        """The sum of ``graph``'s values over ``axes``, its nodes' and its own errors reported."""
        launch = _fperr.call_launch(graph, state, ("reduce",))
        zeros = [graph.out_dtypes[0].type(0)] * len(graph.scalars)  # (what a NaN counts as)
        result = self.reduce_fused(graph, inputs, zeros, shape, "add", axes, launch, check)
        _fperr.launched(self, launch)
        return result

    # -- NaN-skipping statistics ---------------------------------------------------------------------
    def _nan_moment(self, func: str, a: Any, axis: Any, dtype: Any, out: Any, ddof: Any, keepdims: bool) -> Any:
        """CuPy's nanvar/nanstd with NumPy's RuntimeWarning and NaN where the degrees of freedom are
        not positive (CuPy divides by max(count - ddof, 0) and says nothing)."""
        xp = self.xp
        result = getattr(xp, func)(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
        if a.dtype.kind in "fc":
            count = xp.sum(xp.logical_not(xp.isnan(a)), axis=axis, keepdims=keepdims)
            bad = count <= ddof
            if bool(bad.any()):
                warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=5)
                result = xp.where(bad, result.dtype.type(numpy.nan), result)
        if out is None:
            return result
        out[...] = result
        return out

    def average(self, a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
                keepdims: bool = False) -> Any:
        """NumPy 2's average: weights of the shape of ``a`` along a tuple of axes, in that tuple's
        order (CuPy's takes only 1-d weights along one axis when the shapes differ: a TypeError),
        with NumPy's errors."""
        xp = self.xp
        if weights is None or not self.is_native(a):
            return xp.average(a, axis, weights, returned, keepdims=keepdims)
        wgt = weights if self.is_native(weights) else xp.asarray(weights)
        extra = ("f8",) if a.dtype.kind in "biu" else ()
        result_dtype = numpy.result_type(a.dtype, wgt.dtype, *extra)
        axes = None if axis is None else normalize_axis_tuple(axis, a.ndim, argname="axis")
        if a.shape != wgt.shape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if wgt.shape != tuple(a.shape[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wgt = wgt.transpose(tuple(numpy.argsort(axes).tolist()))  # (to a's order of those axes)
            wgt = wgt.reshape(tuple(n if d in axes else 1 for d, n in enumerate(a.shape)))
        total = wgt.sum(axis=axes, dtype=result_dtype, keepdims=keepdims)
        if bool((total == 0.0).any()):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        products = self.apply_ufunc(numpy.multiply, a.astype(result_dtype, copy=False),
                                    wgt.astype(result_dtype, copy=False))
        average = self.apply_ufunc(numpy.true_divide, products.sum(axis=axes, keepdims=keepdims), total)
        if not returned:
            return average
        if total.shape != average.shape:
            total = xp.broadcast_to(total, average.shape).copy()
        return average, total

    def broadcast_arrays(self, *args: Any, subok: bool = False) -> tuple[Any, ...]:
        """NumPy 2's broadcast_arrays: a tuple (CuPy's is a list), a number among the arguments
        taken as NumPy's 0-d array of it (``broadcast_arrays(0, a)``)."""
        return tuple(self.xp.broadcast_arrays(*(a if self.is_native(a) else self.xp.asarray(a) for a in args)))

    def interp(self, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
        """CuPy's interp where NumPy's answer is the one a bisection gives: sample points that are
        increasing. NumPy's search starts from its guess of the element before, so for points that
        are not (or hold NaN) only NumPy's own search gives its answer (a counted fallback)."""
        points = xp if self.is_native(xp) else self.xp.asarray(xp)
        if period is None and points.ndim == 1 and points.size > 1 and points.dtype.kind in "biuf":
            disorder = self.xp.logical_or(self.xp.isnan(points).any(), (points[1:] < points[:-1]).any())
            if bool(disorder):
                raise NeedsNumpyError("interp of sample points xp that are not increasing: NumPy's search, "
                                      "element by element")
        return self.xp.interp(x, xp, fp, left, right, period)

    def nanmean(self, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """NumPy's nanmean: CuPy's, with NumPy's "Mean of empty slice" RuntimeWarning where a slice
        holds no number (all NaN, or empty: CuPy's NaN comes silently); of float16 data NumPy's
        own steps, the sum of the numbers divided by their count (CuPy's nanmean adds halves in
        half precision, NumPy's sum in float)."""
        xp = self.xp
        if not self.is_native(a) or a.dtype.kind not in "fc":
            return xp.nanmean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        count = None
        if a.dtype == numpy.float16:
            missing = xp.isnan(a)
            total = xp.sum(xp.where(missing, a.dtype.type(0), a), axis=axis, dtype=dtype, keepdims=keepdims)
            count = xp.sum(xp.logical_not(missing), axis=axis, dtype=numpy.intp, keepdims=keepdims)
            with numpy.errstate(invalid="ignore", divide="ignore"):  # (NumPy's division: unreported)
                result = (total / count).astype(total.dtype)  # (into the sum's dtype, as NumPy's)
            if out is not None:
                out[...] = result
                result = out
        else:
            result = xp.nanmean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        if not a.size or bool(xp.isnan(result).any()):  # (a NaN mean: no numbers, or NaN from them)
            if count is None:
                count = xp.sum(xp.logical_not(xp.isnan(a)), axis=axis, keepdims=keepdims)
            if bool((count == 0).any()):
                warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=5)
        return result

    def nanvar(self, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
               keepdims: bool = False) -> Any:
        return self._nan_moment("nanvar", a, axis, dtype, out, ddof, keepdims)

    def nanstd(self, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
               keepdims: bool = False) -> Any:
        return self._nan_moment("nanstd", a, axis, dtype, out, ddof, keepdims)

    def _nan_arg(self, func: str, a: Any, axis: Any, out: Any, keepdims: bool) -> Any:
        """CuPy's nanargmax/nanargmin, with NumPy's ValueError for an all-NaN slice (CuPy answers one)."""
        xp = self.xp
        if a.dtype.kind in "fc" and a.size and bool(xp.isnan(a).all(axis=axis).any()):
            raise ValueError("All-NaN slice encountered")
        return getattr(xp, func)(a, axis=axis, out=out, keepdims=keepdims)

    def nanargmax(self, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        return self._nan_arg("nanargmax", a, axis, out, keepdims)

    def nanargmin(self, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        return self._nan_arg("nanargmin", a, axis, out, keepdims)

    # -- angle of real arrays, frexp and modf of float32 ------------------------------------------
    def angle(self, z: Any, deg: bool = False) -> Any:
        """NumPy's angle: arctan2(imag, real), of a real array arctan2(0, z) (pi for -0.0, -inf and
        negatives, NaN for NaN, in the loop's float dtype); CuPy's answers 0/pi by a comparison."""
        if not self.is_native(z) or z.dtype.kind == "c":
            return self.xp.angle(z, deg)
        result = self.apply_ufunc(numpy.arctan2, 0, z)
        return self.apply_ufunc(numpy.multiply, result, 180 / math.pi, out=result) if deg else result

    def frexp_float32(self, x: Any) -> tuple[Any, Any]:
        """NumPy's frexp of float32 (subnormals' true mantissa and exponent; CuPy's kernel flushes
        them): the frexp of the values widened to float64 (exact) by npgpu's own cast kernel, the
        mantissa narrowed back (exact: 24 bits)."""
        graph = self._eager_graph(("astype", x.dtype, numpy.dtype(numpy.float64)),
                                  lambda: ir.cast_graph(x.dtype, numpy.dtype(numpy.float64)))
        mantissa, exponent = self.xp.frexp(self.run_fused(graph, [x], [], x.shape))
        return mantissa.astype(numpy.float32), exponent

    def modf_float32(self, x: Any) -> tuple[Any, Any]:
        """NumPy's modf of float32 (a subnormal's fraction is itself; CuPy's kernel flushes it to
        zero: GPU run 15): CuPy's float64 modf of the widened values, both parts narrowed back by
        npgpu's own cast kernel (exact: the parts of a float32 are float32s; CuPy's astype would
        flush a subnormal fraction too, GPU run 16)."""
        f32, f64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)
        widen = self._eager_graph(("astype", f32, f64), lambda: ir.cast_graph(f32, f64))
        narrow = self._eager_graph(("astype", f64, f32), lambda: ir.cast_graph(f64, f32))
        fraction, whole = self.xp.modf(self.run_fused(widen, [x], [], x.shape))
        return (self.run_fused(narrow, [fraction], [], x.shape), self.run_fused(narrow, [whole], [], x.shape))

