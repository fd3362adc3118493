"""Elementwise work: ufuncs with NumPy's loops and errors, casts and copies, where, clip."""

from __future__ import annotations

import math
from typing import Any

import numpy

from ... import _fperr, _ops
from ...kernels import codegen, ir
from ...kernels import ufuncs as _table
from ..base import Backend, clip_ufunc
from .array import CLArray, _array_operand, _broadcast_strides, _collapse, _pairs, _part, _span, _weak_type
from .launch import _scalar_value
from .products import PRODUCT_GUFUNCS
from .routing import implements


def _comparison_loop(
    ufunc: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...], types: tuple[Any, ...]
) -> tuple[tuple[numpy.dtype, ...], tuple[Any, ...]]:
    """NumPy compares out-of-range Python ints exactly (uint8 array < -1); widen the loop."""
    changed = list(types)
    widened = False
    for i, x in enumerate(inputs):
        if isinstance(x, int) and not isinstance(x, bool) and loop[i].kind in "iu":
            info = numpy.iinfo(loop[i])
            if not info.min <= x <= info.max:
                changed[i] = numpy.dtype(numpy.int64) if -(2**63) <= x < 2**63 else numpy.dtype(numpy.uint64)
                widened = True
    if not widened:  # (dtype == int is True in NumPy: compare by flag, not by value)
        return loop, types
    return tuple(ufunc.resolve_dtypes(tuple(changed) + (None,))), tuple(changed)



def _unwrap(x: Any) -> Any:
    """The native of an npgpu device array (the core hands ``where=`` of a ufunc over unconverted)."""
    native = getattr(x, "_native", None)
    return native if isinstance(native, CLArray) else x



def _outs(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    out = kwargs.get("out")
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)



#: elementwise launch geometries kept per backend (cleared when full: a loop's are made again at once)
_GEOMETRIES_MAX = 512


class Elementwise(Backend):
    """Elementwise kernels: ufunc calls, casts and copies, where, clip."""

    def run_elementwise(
        self,
        graph: ir.Graph,
        inputs: list[CLArray],
        outputs: list[CLArray],
        scalars: list[Any],
        where: CLArray | None = None,
        errors: _fperr.Launch | None = None,
    ) -> None:
        """Run ``graph`` over broadcast ``inputs`` into ``outputs`` (all of the outputs' shape).

        The entry point fusion uses too: inputs broadcast against outputs[0].shape. ``errors``:
        what the graph's floating-point error flags report (see npgpu/_fperr.py).
        """
        shape = outputs[0].shape
        arrays = list(inputs) + list(outputs) + ([where] if where is not None else [])
        # (a loop's statement launches the same layouts every iteration: their geometry is kept)
        key = (shape, len(inputs), self.is_cpu and self.chunk_local_size,  # (and what sets the chunks)
               *[(a.shape, a.strides, a.offset, a.dtype) for a in arrays])
        geometry = self._geometries.get(key)
        if geometry is None:
            geometry = self._geometry(shape, arrays, len(inputs))
            if len(self._geometries) >= _GEOMETRIES_MAX:
                self._geometries.clear()
            self._geometries[key] = geometry
        n, ndim, contiguous, chunk, big, offsets, tail = geometry
        if n == 0:
            return
        # CPUs: contiguous float graphs of plain arithmetic and math builtins run in vector types
        vector = codegen.vector_width(graph) if chunk and contiguous and where is None and self.vectorize else 0
        # a chunk whose output overwrites an input can't be computed again to look for its errors
        inline_errors = bool(graph.error_nodes) and any(a.data is o.data for a in inputs for o in outputs)
        layout = codegen.Layout(ndim, contiguous, index64=big, where=where is not None, chunked=chunk > 0,
                                vector=vector, inline_errors=inline_errors)
        kernel = self._build(("ew", ir.canonical(graph), layout), lambda: codegen.elementwise(graph, layout, "opencl"))
        args: list[Any] = []
        for a, offset in zip(arrays, offsets, strict=True):
            args.append(a.data)
            args.append(offset)
        for value, dt in zip(scalars, graph.scalars, strict=True):
            v = _scalar_value(value, dt) if dt.kind != "b" else numpy.uint8(bool(value))
            args.append(numpy.float32(v) if dt == numpy.float16 else v)  # (a float16 is computed on as a float)
        args += tail
        if graph.error_nodes:
            args += self._error_arguments(graph, errors, numpy.int64 if big else numpy.int32)
        if chunk:
            ls = self.chunk_local_size
            items = -(-n // chunk)
            self._enqueue(kernel, (-(-items // ls) * ls,), (ls,), args)
        else:
            self._launch(kernel, n, args)

    def _geometry(self, shape: tuple[int, ...], arrays: list[CLArray], n_inputs: int) -> tuple[Any, ...]:
        """(n, dimensions, contiguous, chunk, 64-bit indexing, each array's offset argument, the
        arguments after the scalars) of an elementwise launch over ``arrays`` (inputs, outputs, the
        where-mask) of the outputs' ``shape``: what depends on their layouts alone."""
        n = math.prod(shape)
        strides = [_broadcast_strides(a, shape) for a in arrays]
        if len(shape) > 1 and not arrays[n_inputs].c_contiguous:  # (walk the elements in the first
            # output's memory order: a.T * 2's result is laid out as a.T is, NumPy's order, and both
            # then read and write one contiguous run)
            written = strides[n_inputs]
            order = sorted(range(len(shape)), key=lambda d: -abs(written[d]))
            if order != list(range(len(shape))):
                shape = tuple(shape[d] for d in order)
                strides = [tuple(st[d] for d in order) for st in strides]
        cshape, cstrides = _collapse(shape, strides)
        contiguous = len(cshape) <= 1 and all(
            (len(st) == 0 or st[0] == a.itemsize) and a.offset % a.itemsize == 0
            for a, st in zip(arrays, cstrides, strict=True)
        )
        # CPUs (PoCL): a contiguous run of elements per work-item measured 2-3x faster than one
        # element per work-item; GPUs: one element per work-item.
        chunk = self._chunk(n) if self.is_cpu and self.chunk_local_size and n else 0
        big = n > 0 and max(n + chunk * self.chunk_local_size, max(_span(a)[1] for a in arrays)) >= 2**31 - 1
        it = numpy.int64 if big else numpy.int32
        offsets = tuple(it(a.offset // a.itemsize if contiguous else a.offset) for a in arrays)
        tail = [it(n)]
        if chunk:
            tail.append(it(chunk))
        if not contiguous:
            tail.extend(it(d) for d in cshape)
            for st in cstrides:
                tail.extend(it(s) for s in st)
        return n, len(cshape), contiguous, chunk, big, offsets, tuple(tail)


    # -- ufuncs ---------------------------------------------------------------
    def converts(self, source: numpy.dtype, target: numpy.dtype) -> bool:
        return _table.has_cast(source, target)  # (an integer wider than a byte into float16: NumPy's)

    def supports_ufunc(self, ufunc: numpy.ufunc, method: str, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if method == "__call__" and (ufunc in PRODUCT_GUFUNCS or ufunc is numpy.matmul):
            # (vecdot, matvec, vecmat of real dtypes; matmul of floats, by the tiled kernel)
            kinds = "f" if ufunc is numpy.matmul else "biuf"
            return (not set(kwargs) - {"out"} and all(isinstance(d, numpy.dtype) and d.kind in kinds for d in dtypes)
                    and self.supports_dtypes(dtypes) and all(map(_table.is_supported_dtype, dtypes)))
        if method == "__call__":
            if set(kwargs) - {"out", "where", "casting", "dtype", "signature"}:
                return False
            if kwargs.get("signature") is not None:
                return False
            if ufunc.signature is not None:
                return False
            where = kwargs.get("where", True)
            if not (where is True or _array_operand(where)):
                return False
            if _array_operand(where) and where.dtype != numpy.bool_:
                return False
            if len(dtypes) == ufunc.nin + ufunc.nout and all(isinstance(d, numpy.dtype) for d in dtypes):
                loop = tuple(dtypes)
            else:
                try:
                    loop = self._resolve(ufunc, dtypes, kwargs)
                except (TypeError, ValueError):
                    return False
            for k, o in enumerate(_outs(kwargs)):
                if o is not None and not (self.supports_dtypes((o.dtype,)) and _table.is_kernel_dtype(o.dtype)):
                    return False
                if o is not None and o.dtype.kind != "c" and k < ufunc.nout and loop[ufunc.nin + k].kind == "c":
                    return False  # (complex stored into a real array: NumPy's ComplexWarning and real part)
                if o is not None and k < ufunc.nout and not _table.has_cast(loop[ufunc.nin + k], o.dtype):
                    return False
            return self.supports_dtypes(loop) and _table.supports_loop(ufunc, loop, complex_values=True)
        if method == "reduce":
            if ufunc not in _ops.UFUNC_REDUCTIONS or set(kwargs) - {
                "axis",
                "dtype",
                "out",
                "keepdims",
                "initial",
                "where",
            }:
                return False
            dts = tuple(d for d in dtypes if isinstance(d, numpy.dtype))
            acc = numpy.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else None
            if acc is not None and (_table.is_half(acc) or not all(_table.has_cast(d, acc) for d in dts)):
                return False  # (float16 reductions are NumPy's, as sum's; so is int16 -> float16: it warns)
            for o in _outs(kwargs):
                if o is not None and dts and not _table.has_cast(acc or dts[0], o.dtype):
                    return False
            return self.supports_dtypes(dts) and all(_table.is_supported_dtype(d) for d in dts)
        return False

    @staticmethod
    def _resolve(ufunc: numpy.ufunc, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[numpy.dtype, ...]:
        extra: dict[str, Any] = {"casting": kwargs.get("casting", "same_kind")}
        if kwargs.get("dtype") is not None:
            extra["signature"] = (None,) * ufunc.nin + (numpy.dtype(kwargs["dtype"]),) * ufunc.nout
        loop = ufunc.resolve_dtypes(tuple(dtypes[: ufunc.nin]) + (None,) * ufunc.nout, **extra)
        return tuple(loop)

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        if method == "reduce":
            if "where" in kwargs:
                kwargs = {**kwargs, "where": _unwrap(kwargs["where"])}
            return self._ufunc_reduce(ufunc, inputs[0], **kwargs)
        if method != "__call__":
            raise NotImplementedError(f"opencl backend: {ufunc.__name__}.{method}")
        if ufunc in PRODUCT_GUFUNCS:
            return self.product_gufunc(ufunc, inputs, loop or self._resolve(ufunc, tuple(
                _weak_type(x) for x in inputs), {}), out=kwargs.get("out"))
        if ufunc is numpy.matmul:
            out = kwargs.get("out")
            return self.matmul(*inputs, out=out[0] if isinstance(out, tuple) else out)
        return self.ufunc_call(
            ufunc,
            inputs,
            out=kwargs.get("out"),
            where=_unwrap(kwargs.get("where", True)),
            casting=kwargs.get("casting", "same_kind"),
            dtype=kwargs.get("dtype"),
            errstate=_fperr.current(),
            loop=loop,
        )

    def ufunc_call(
        self,
        ufunc: numpy.ufunc,
        inputs: tuple[Any, ...],
        out: Any = None,
        where: Any = True,
        casting: str = "same_kind",
        dtype: Any = None,
        errstate: _fperr.ErrState | None = None,
        loop: tuple[numpy.dtype, ...] | None = None,
    ) -> Any:
        """``ufunc(*inputs, out=, where=, casting=, dtype=)`` with NumPy's result dtypes; with
        ``errstate`` (a user's call), its floating-point errors are reported as that state asks.
        ``loop``: the loop dtypes the core resolved for a user's call (else resolved here, with the
        exact comparison of out-of-range Python ints the backend's own callers need)."""
        if len(inputs) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__} takes {ufunc.nin} inputs, got {len(inputs)}")
        outs = (
            list(out)
            if isinstance(out, (tuple, list))
            else [out] * (1 if ufunc.nout == 1 else 0) or [None] * ufunc.nout
        )
        if len(outs) < ufunc.nout:
            outs += [None] * (ufunc.nout - len(outs))
        kinds = []
        for x in inputs:
            kinds.append("array" if isinstance(x, CLArray) else "scalar")
        if loop is None:
            types = tuple(_weak_type(x) for x in inputs)
            loop = self._resolve(ufunc, types, {"dtype": dtype, "casting": casting})
            if ufunc in _ops.COMPARISONS:
                loop, types = _comparison_loop(ufunc, inputs, loop, types)
        if int in map(type, inputs):  # (NumPy's OverflowError also when there are no elements to compute;
            # converted once: a huge int into float16 warns once, as NumPy's does)
            inputs = tuple(_scalar_value(x, dt) if type(x) is int else x for x, dt in zip(inputs, loop))
        nin = ufunc.nin
        for k, o in enumerate(outs):
            if o is not None and not numpy.can_cast(loop[nin + k], o.dtype, casting):
                raise numpy._core._exceptions._UFuncOutputCastingError(ufunc, casting, loop[nin + k], o.dtype, k)
        shapes = [x.shape for x in inputs if isinstance(x, CLArray)]
        shapes += [numpy.shape(x) for x in inputs if not isinstance(x, CLArray)]
        shape = numpy.broadcast_shapes(*shapes)
        if ufunc is numpy.power and loop[0].kind in "iu" and loop[1].kind == "i" and math.prod(shape):
            self._check_int_power(inputs[1])  # (NumPy raises only where it computes an element)
        for o in outs:
            if o is not None:
                if numpy.broadcast_shapes(shape, o.shape) != o.shape:
                    msg = f"non-broadcastable output operand with shape {o.shape} doesn't match the broadcast shape"
                    raise ValueError(f"{msg} {shape}")
                shape = o.shape
        if isinstance(where, CLArray):
            shape = numpy.broadcast_shapes(shape, where.shape) if all(o is None for o in outs) else shape
        arrays = [x for x in inputs if isinstance(x, CLArray)]
        results = [o if o is not None else self.empty_result(shape, loop[nin + k], arrays) for k, o in enumerate(outs)]
        # an output partially overlapping an input (a[1:] += a[:-1]) needs the input copied first
        for i, a in enumerate(arrays):
            for r in results:
                if self.shares_memory(a, r) and not (
                    a.offset == r.offset and _broadcast_strides(a, shape) == r.strides
                ):
                    arrays[i] = self.copy(a)
        scalars = [x for x in inputs if not isinstance(x, CLArray)]
        operand_dtypes = tuple(x.dtype if isinstance(x, CLArray) else loop[i] for i, x in enumerate(inputs))
        check = 0 if errstate is None else errstate.check
        key = ("ufunc", ufunc, loop, tuple(kinds), operand_dtypes, tuple(r.dtype for r in results), check)
        graph = self._graphs.get(key)
        if graph is None:
            graph = ir.ufunc_graph(ufunc, loop, tuple(kinds), operand_dtypes, tuple(r.dtype for r in results), check)
            self._graphs[key] = graph
        if where is False or (not isinstance(where, CLArray) and not where):
            return results[0] if ufunc.nout == 1 else tuple(results)
        mask = where if isinstance(where, CLArray) else None
        launch = _fperr.call_launch(graph, errstate) if graph.error_nodes and errstate is not None else None
        self.run_elementwise(graph, arrays, results, scalars, mask, launch)
        if launch is not None:
            _fperr.launched(self, launch)
        return results[0] if ufunc.nout == 1 else tuple(results)


    def copy(self, a: CLArray, dtype: Any = None) -> CLArray:
        """A new C-contiguous array with ``a``'s values (converted to ``dtype``)."""
        dtype = a.dtype if dtype is None else numpy.dtype(dtype)
        out = self.empty(a.shape, dtype)
        self.copy_into(out, a)
        return out

    def copy_into(self, dst: CLArray, src: CLArray) -> None:
        """``dst[...] = src`` (broadcast, C conversion; NumPy's unsafe astype for supported pairs,
        and its errors of the cast: cast_into)."""
        if dst.dtype.kind == "c" or src.dtype.kind == "c":
            self._copy_complex(dst, src)
            return
        if self.shares_memory(src, dst):
            src = self.copy(src)
        self.cast_into(dst, src)

    def _copy_complex(self, dst: CLArray, src: CLArray) -> None:
        # complex values are stored (not computed on): copies go through the (real, imag) parts
        if dst.dtype.kind != "c":
            raise NotImplementedError("opencl backend: complex to real conversion")
        if self.shares_memory(src, dst):
            src = self.copy(src)
        if src.dtype.kind == "c":
            self.copy_into(_pairs(dst), _pairs(src))
            return
        self.copy_into(_part(dst, 0), src)
        self.fill(_part(dst, 1), 0)

    def _check_int_power(self, exponent: Any) -> None:
        if isinstance(exponent, CLArray):
            if exponent.dtype.kind == "i" and exponent.size and self.to_host(self.reduce_op("minimum", exponent)) < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
        elif numpy.asarray(exponent) < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")


    @implements(numpy.where, kwargs=())
    def where(self, condition: Any, x: Any = None, y: Any = None) -> Any:
        if x is None and y is None:
            raise NotImplementedError("opencl backend: one-argument where (nonzero)")
        ops = [condition, x, y]
        kinds, dts, dt = ir.where_plan(condition, x, y, lambda o: isinstance(o, CLArray))
        key = ("where", kinds, dts, dt)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = ir.where_graph(kinds, dts, dt)
        shape = numpy.broadcast_shapes(*[numpy.shape(o) if not isinstance(o, CLArray) else o.shape for o in ops])
        arrays = [o for o in ops if isinstance(o, CLArray)]
        out = self.empty_result(shape, dt, arrays)
        self.run_elementwise(graph, arrays, [out], [o for o in ops if not isinstance(o, CLArray)])
        return out

    @implements(numpy.nan_to_num, kwargs=("copy", "nan", "posinf", "neginf"),
                accepts=lambda args, kwargs: (args[1] if len(args) > 1 else kwargs.get("copy", True)) is True
                and all(isinstance(v, (int, float, type(None))) and not isinstance(v, bool)
                        for v in (*args[2:], kwargs.get("nan", 0.0), kwargs.get("posinf"), kwargs.get("neginf"))))
    def nan_to_num(self, x: CLArray, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> CLArray:
        """NumPy's nan_to_num (a new array): NaN -> ``nan``, +inf -> ``posinf`` (default the dtype's
        largest), -inf -> ``neginf`` (its most negative); other dtypes are copied."""
        if x.dtype.kind != "f":
            return self.copy(x)
        info = numpy.finfo(x.dtype)
        scalar = x.dtype.type
        # (a replacement too large for the dtype warns "overflow encountered in cast", as NumPy's copyto does)
        nan_value, high, low = (scalar(nan), scalar(info.max if posinf is None else posinf),
                                scalar(info.min if neginf is None else neginf))
        inf = self.ufunc_call(numpy.isinf, (x,))
        result = self.where(self.ufunc_call(numpy.isnan, (x,)), nan_value, x)
        result = self.where(self.ufunc_call(numpy.logical_and, (inf, self.ufunc_call(numpy.greater, (x, 0)))),
                            high, result)
        return self.where(self.ufunc_call(numpy.logical_and, (inf, self.ufunc_call(numpy.less, (x, 0)))), low, result)

    @implements(numpy.round, numpy.around, kwargs=("decimals",),
                accepts=lambda args, kwargs: _round_accepts(args, kwargs))
    def around(self, a: CLArray, decimals: int = 0) -> CLArray:
        """NumPy's round: of floats Backend.numpy_round; integers are copied, laid out as ``a`` is
        (NumPy's copy keeps the operand's order: round(a.T, 1) of integers is F-ordered)."""
        if a.dtype.kind == "f":
            return self.numpy_round(a, decimals)
        out = self.empty_result(a.shape, a.dtype, [a])
        self.copy_into(out, a)
        return out

    @implements(numpy.clip, kwargs=("a_min", "a_max", "out", "min", "max"))
    def clip(self, a: CLArray, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> CLArray:
        plan = clip_ufunc(a.dtype, a_min, a_max)
        if plan is None:
            return self.ufunc_call(numpy.positive, (a,), out=out, **kwargs)
        return self.ufunc_call(plan[0], (a, *plan[1]), out=out, **kwargs)


def _round_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """round/around here: an int ``decimals``, of a float array, or of an integer one with decimals >= 0
    (NumPy rounds bools through float16: a float16 result, or its casting error; NumPy's)."""
    decimals = args[1] if len(args) > 1 else kwargs.get("decimals", 0)
    kind = getattr(getattr(args[0], "dtype", None), "kind", None) if args else None
    return type(decimals) is int and (kind == "f" or (kind in ("i", "u") and decimals >= 0))
