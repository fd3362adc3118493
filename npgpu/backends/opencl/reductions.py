"""Reductions: map-reduce kernels (one or two stages), NumPy's reduction functions, ufunc.reduce, cumsum/cumprod."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy

from ... import _fperr, _ops
from ...kernels import codegen, ir
from ...kernels import order as _order
from ...kernels import ufuncs as _table
from ..base import Backend
from .array import CLArray, _broadcast_strides, _collapse, _native_or_device, _norm_axes, _span
from .launch import _scalar_value
from .routing import implements


def _reduction_check(op: str, acc: numpy.dtype, state: Any) -> int:
    """What a user's sum or product checks under ``state`` (map_reduce's reduce_check): overflow
    and invalid values, as NumPy's reduce reports them ("overflow encountered in reduce")."""
    if op not in ("add", "multiply") or acc.kind not in "fc":
        return 0
    return state.check & (_table.OVER | _table.INVALID)


def _reduction_errors(op: str, acc: numpy.dtype) -> tuple[_fperr.Launch | None, int]:
    """The launch's report and map_reduce's reduce_check of a user's sum or product (_reduction_check)."""
    state = _fperr.current()
    check = _reduction_check(op, acc, state)
    return (_fperr.call_launch(None, state, ("reduce",)), check) if check else (None, 0)



# kind -> (combining op, value NaNs are replaced by (nan-variants) or None)
#: reduction name -> (the kernel's combining ufunc, what NaN becomes first or None): NumPy's own
#: reductions as the core's table has them (npgpu/_ops.py, REDUCTIONS), and the NaN-skipping ones,
#: which this backend computes as those with NaN replaced (nansum: add over NaN -> 0) or with
#: fmax/fmin (which skip NaN).
_REDUCTION_KINDS: dict[str, tuple[str, Any]] = {
    **{f.__name__: (r.ufunc.__name__, None) for f, r in _ops.REDUCTIONS.items() if not r.divides},
    "nansum": ("add", 0),
    "nanprod": ("multiply", 1),
    "nanmax": ("fmax", None),
    "nanmin": ("fmin", None),
}
_dtype_cache: dict[Any, numpy.dtype] = {}


def _result_dtype(kind: str, dt: numpy.dtype, dtype: Any) -> numpy.dtype:
    """NumPy's result dtype for a reduction, asked of NumPy itself on a one-element array."""
    key = (kind, dt, None if dtype is None else numpy.dtype(dtype))
    res = _dtype_cache.get(key)
    if res is None:
        kw = {} if dtype is None or kind in ("max", "min", "nanmax", "nanmin", "any", "all") else {"dtype": dtype}
        res = numpy.asarray(getattr(numpy, kind)(numpy.ones(1, dt), **kw)).dtype  # (NumPy's function of that name)
        if dtype is not None and kind in ("max", "min", "nanmax", "nanmin"):
            res = numpy.dtype(dtype)  # (maximum.reduce(int16s, dtype=float32): the maximum, converted)
        if kind in ("any", "all"):
            res = numpy.dtype(bool)
        _dtype_cache[key] = res
    return res


def _np_ufunc_reduce_dtype(ufunc: numpy.ufunc, dt: numpy.dtype, dtype: Any) -> numpy.dtype:
    key = ("ufunc.reduce", ufunc, dt, None if dtype is None else numpy.dtype(dtype))
    res = _dtype_cache.get(key)
    if res is None:
        res = _dtype_cache[key] = ufunc.reduce(numpy.ones(1, dt), dtype=dtype).dtype
    return res



def _reduce_arguments(graph: ir.Graph, inputs: list[CLArray], scalars: list[Any], acc_dtype: numpy.dtype, init: Any,
                      it: Any, counts: list[int], oshape: tuple[int, ...], ishape: tuple[int, ...],
                      ostrides: list[tuple[int, ...]], istrides: list[tuple[int, ...]]) -> list[Any]:
    """codegen.reduce_arguments for this backend's buffers and scalars (a bool as a byte)."""
    values = [_scalar_value(value, dt) if dt.kind != "b" else numpy.uint8(bool(value))
              for value, dt in zip(scalars, graph.scalars, strict=True)]
    first = _scalar_value(init, acc_dtype) if acc_dtype.kind != "b" else numpy.uint8(bool(init))
    return codegen.reduce_arguments([(a.data, a.offset) for a in inputs], values, first,
                                    codegen.reduce_geometry(counts, oshape, ishape, ostrides, istrides, it), it)


class Reductions(Backend):
    """Reductions (map-reduce kernels), NumPy's reduction functions and ufunc.reduce, scans."""

    def map_reduce(
        self,
        graph: ir.Graph,
        inputs: list[CLArray],
        scalars: list[Any],
        op: str,
        axes: tuple[int, ...],
        acc_dtype: numpy.dtype,
        initial: Any,
        shape: tuple[int, ...],
        errors: _fperr.Launch | None = None,
        reduce_check: int = 0,
        numpy_order: bool = True,
    ) -> tuple[CLArray, CLArray | None]:
        """Reduce ``graph`` (evaluated over ``inputs`` broadcast to ``shape``) along ``axes`` with ``op``.

        Float sums and products add in NumPy's order (kernels/order.py) unless ``numpy_order`` is
        off (sums of products, which NumPy computes by BLAS in BLAS's order: the device's fastest,
        compensated one).

        Returns the result (kept dims of ``shape``, C order, ``acc_dtype``) and, for
        argmax/argmin, the int64 positions (flat index within the reduced dims).
        The entry point fusion uses for a reduction of a pending graph. ``errors``: what the
        graph's error flags and, with ``reduce_check`` (codegen.map_reduce), the reduction's own
        report (in the slot after the graph's).
        """
        acc_dtype = numpy.dtype(acc_dtype)
        kept = [d for d in range(len(shape)) if d not in axes]
        out_shape = tuple(shape[d] for d in kept)
        m = math.prod(out_shape)
        k = math.prod(shape[d] for d in axes)
        if initial is None:  # the identity: a float sum starts from -0.0, which keeps the sign of
            # negative zeros, and a sum of nothing is NumPy's identity, +0.0
            initial = _table.reduction_identity(op, acc_dtype) if k or op != "add" else acc_dtype.type(0)
        result = self.empty(out_shape, acc_dtype)
        index = self.empty(out_shape, numpy.int64) if op in codegen.ARG_REDUCTIONS else None
        if m == 0:
            return result, index
        strides = [_broadcast_strides(a, shape) for a in inputs]
        ordered = numpy_order and op in ("add", "multiply") and acc_dtype.kind in "fc"
        chunk = 1
        if ordered:  # NumPy's order of additions (kernels/order.py): its bits
            plan = _order.fused_sum_order(graph, inputs, shape, axes)
            chunk = plan.chunk if op == "add" else 1
            axes = plan.axes + tuple(d for d in axes if shape[d] == 1)
        oshape, ostrides = _collapse(out_shape, [tuple(st[d] for d in kept) for st in strides])
        ishape, istrides = _collapse(tuple(shape[d] for d in axes), [tuple(st[d] for d in axes) for st in strides])
        flags = None
        if graph.error_nodes or reduce_check:
            if errors is None:
                errors = _fperr.call_launch(graph if graph.error_nodes else None, _fperr.current(),
                                            ("reduce",) if reduce_check else ())
            flags = _fperr.reserve(self, errors)
        if chunk > 1:
            self._pairwise(graph, inputs, scalars, acc_dtype, initial, m, k, chunk, oshape, ishape, ostrides,
                           istrides, result, flags, reduce_check, len(graph.error_nodes))
            return result, index
        min_chunk = 4096 if self.is_cpu else 64
        parts = 1 if m >= self.parallelism or ordered else max(1, min(-(-self.parallelism // m), -(-k // min_chunk)))
        init_final = initial
        init_first = initial if parts == 1 else _table.reduction_identity(op, acc_dtype)
        stage_out = result if parts == 1 else self.empty((m * parts,), acc_dtype)
        stage_idx = index if parts == 1 else (self.empty((m * parts,), numpy.int64) if index is not None else None)
        self._run_reduce(
            graph,
            inputs,
            scalars,
            op,
            acc_dtype,
            init_first,
            m,
            k,
            parts,
            oshape,
            ishape,
            ostrides,
            istrides,
            stage_out,
            stage_idx,
            index_input=False,
            flags=flags,
            reduce_check=reduce_check,
            ordered=ordered,
        )
        if parts > 1:
            g2 = self._graphs.get(("id", acc_dtype))
            if g2 is None:
                g2 = self._graphs[("id", acc_dtype)] = ir.cast_graph(acc_dtype, acc_dtype)
            ins = [stage_out] + ([stage_idx] if stage_idx is not None else [])
            st_o = [(parts * acc_dtype.itemsize,)] + ([(parts * 8,)] if stage_idx is not None else [])
            st_i = [(acc_dtype.itemsize,)] + ([(8,)] if stage_idx is not None else [])
            self._run_reduce(
                g2,
                ins,
                [],
                op,
                acc_dtype,
                init_final,
                m,
                parts,
                1,
                (m,),
                (parts,),
                st_o,
                st_i,
                result,
                index,
                index_input=stage_idx is not None,
                # (the second stage reports in the first's reduction slot)
                flags=None if flags is None or not reduce_check else
                (flags[0], flags[1] + _fperr.SLOT_BYTES * len(graph.error_nodes)),
                reduce_check=reduce_check,
            )
        return result, index

    def _run_reduce(
        self,
        graph,
        inputs,
        scalars,
        op,
        acc_dtype,
        init,
        m,
        k,
        parts,
        oshape,
        ishape,
        ostrides,
        istrides,
        out,
        idx_out,
        index_input,
        flags=None,
        reduce_check=0,
        ordered=False,
    ) -> None:  # noqa: ANN001
        big = max(m * parts, k, max(_span(a)[1] for a in inputs)) >= 2**31 - 1
        # GPUs: interleaved parts (coalesced loads).  CPUs (PoCL): each part one contiguous chunk,
        # several independent accumulators per work-item -- interleaved parts measured 20x slower there.
        interleaved = parts > 1 and not self.is_cpu
        unroll = (self.reduce_unroll if self.is_cpu and len(ishape) == 1 and op not in codegen.ARG_REDUCTIONS
                  and not ordered else 1)
        layout = codegen.ReduceLayout(
            len(oshape), len(ishape), interleaved=interleaved, index_input=index_input, index64=big, unroll=unroll,
            ordered=ordered,
        )
        kernel = self._build(
            ("mr", graph, op, acc_dtype, layout, reduce_check),
            lambda: codegen.map_reduce(graph, op, acc_dtype, layout, "opencl", reduce_check=reduce_check),
        )
        it = numpy.int64 if big else numpy.int32
        args = _reduce_arguments(graph, inputs, scalars, acc_dtype, init, it, [m, k, parts], oshape, ishape,
                                 ostrides, istrides)
        args += [out.data, it(out.offset // out.itemsize)]
        if idx_out is not None:
            args += [idx_out.data, it(idx_out.offset // 8)]
        if graph.error_nodes or reduce_check:
            args += [flags[0], it(flags[1])]
        self._launch(kernel, m * parts, args)

    def _pairwise(self, graph, inputs, scalars, acc_dtype, init, m, k, chunk, oshape, ishape, ostrides, istrides,
                  result, flags, reduce_check, error_slots) -> None:  # noqa: ANN001
        """A float sum in NumPy's order (kernels/order.py): each output's chunks summed pairwise
        and folded. Where outputs and chunks are fewer than the device's parallelism, each chunk's
        recursion is cut ``depth`` levels down into subtrees summed by separate work-items, which
        pairwise_combine joins 64 at a time as the recursion would, and pairwise_fold adds in order."""
        nch = -(-k // chunk)
        _, block, _ = _order.pairwise_shape(acc_dtype)
        depth = 0
        while m * nch << depth < self.parallelism and chunk >> (depth + 1) >= 2 * block and depth < 16:
            depth += 1
        big = max(m * nch << depth, k, max(_span(a)[1] for a in inputs)) >= 2**31 - 1
        it = numpy.int64 if big else numpy.int32
        split = depth > 0 or nch > 1 and m < self.parallelism
        check = reduce_check if not split else 0
        kernel = self._build(
            ("pw", graph, acc_dtype, len(oshape), len(ishape), split, big, reduce_check),
            lambda: codegen.pairwise_reduce(graph, acc_dtype, len(oshape), len(ishape), split, big, "opencl",
                                            reduce_check=reduce_check),
        )
        args = _reduce_arguments(graph, inputs, scalars, acc_dtype, init, it, [m, k, chunk, nch, 1 << depth, depth],
                                 oshape, ishape, ostrides, istrides)
        if not split:
            args += [result.data, it(result.offset // result.itemsize)]
            if graph.error_nodes or check:
                args += [flags[0], it(flags[1])]
            self._launch(kernel, m, args)
            return
        slots = m * nch << depth
        val = self.empty((slots,), acc_dtype)
        lengths = self.empty((slots,), numpy.int64)
        nf = self.empty((slots,), numpy.uint8) if reduce_check else None
        args += [val.data, it(0), lengths.data, it(0)] + ([nf.data, it(0)] if nf is not None else [])
        if graph.error_nodes:
            args += [flags[0], it(flags[1])]
        self._launch(kernel, slots, args)
        while depth:
            step, flagged = min(depth, 6), nf is not None
            combine = self._build(("pwc", acc_dtype, 1 << step, flagged),
                                  lambda s=step, f=flagged: codegen.pairwise_combine(acc_dtype, 1 << s, f))
            slots >>= step
            out = [self.empty((slots,), acc_dtype), self.empty((slots,), numpy.int64)]
            if nf is not None:
                out.append(self.empty((slots,), numpy.uint8))
            ins = [val, lengths] + ([nf] if nf is not None else [])
            cargs: list[Any] = []
            for arr in ins + out:
                cargs += [arr.data, numpy.int64(0)]
            self._launch(combine, slots, cargs + [numpy.int64(slots)])
            val, lengths = out[0], out[1]
            nf = out[2] if nf is not None else None
            depth -= step
        fold = self._build(("pwf", acc_dtype, reduce_check), lambda: codegen.pairwise_fold(acc_dtype, reduce_check))
        fargs: list[Any] = [val.data, numpy.int64(0)] + ([nf.data, numpy.int64(0)] if nf is not None else [])
        fargs += [_scalar_value(init, acc_dtype), numpy.int64(m), numpy.int64(nch), result.data,
                  numpy.int64(result.offset // result.itemsize)]
        if reduce_check:
            fargs += [flags[0], numpy.int64(flags[1] + _fperr.SLOT_BYTES * error_slots)]
        self._launch(fold, m, fargs)

    def reduce_op(self, op: str, a: CLArray, axis: Any = None, acc_dtype: Any = None) -> CLArray:
        """Plain reduction of one array (no keepdims): the building block of the functions."""
        axes = _norm_axes(axis, a.ndim)
        acc = numpy.dtype(acc_dtype) if acc_dtype is not None else a.dtype
        graph = self._graph_cast(a.dtype, acc)
        return self.map_reduce(graph, [a], [], op, axes, acc, None, a.shape)[0]

    def _converted_first(self, a: CLArray, acc: numpy.dtype, label: str = "reduce") -> CLArray:
        """``a`` converted first where its conversion into the reduction's dtype can raise (floats
        summed as integers, ``sum(dtype=int)``: NumPy's "invalid value encountered in reduce", its
        ``label``); unchanged otherwise, converted as the reduction reads it."""
        if not _fperr.current().check & _table.cast_error_categories(a.dtype, acc):
            return a
        return self.cast_into(None, a, acc, label=label)

    def _graph_cast(self, src: numpy.dtype, dst: numpy.dtype) -> ir.Graph:
        key = ("cast", src, dst)
        g = self._graphs.get(key)
        if g is None:
            g = self._graphs[key] = ir.cast_graph(src, dst)
        return g

    def reduction(
        self,
        kind: str,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        """sum/prod/max/min/any/all and nan-variants with NumPy's arguments and result dtype."""
        if not isinstance(a, CLArray):  # (a number, its out= a device array: NumPy's 0-d array of it)
            a = self.from_host(numpy.asarray(a))
        # (NumPy's ufunc reductions take axis 0 or -1 of a 0-d array: nothing to reduce)
        axes = () if a.ndim == 0 and type(axis) is int and axis in (0, -1) else _norm_axes(axis, a.ndim)
        op, nan_to = _REDUCTION_KINDS[kind]
        res_dt = _result_dtype(kind, a.dtype, dtype)
        acc = res_dt
        if op in ("maximum", "minimum", "fmax", "fmin"):
            acc = a.dtype
            k = math.prod(a.shape[d] for d in axes)
            if k == 0 and initial is None:
                raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
        if nan_to is not None and a.dtype.kind == "f" and _fperr.current().check & \
                _table.cast_error_categories(a.dtype, acc):  # (nansum(dtype=int): NaN counts as nan_to first)
            a, nan_to = self._nan_as(a, nan_to), None
        if nan_to is None:
            a = self._converted_first(a, acc)
        b = ir.GraphBuilder()
        x = b.input(a.dtype)
        val: ir.Node = b.cast(x, acc)
        if nan_to is not None and a.dtype.kind in "fc":
            # nansum/nanprod: NaN counts as the identity (a complex NaN: either part NaN)
            isn = b.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), x)[0]
            val = ir.Select(isn, b.scalar(acc), val)
        inputs = [a]
        scalars: list[Any] = [] if nan_to is None or a.dtype.kind not in "fc" else [_table.reduction_identity(op, acc)]
        shape = a.shape
        if isinstance(where, CLArray):
            mask = b.input(numpy.dtype(bool))
            val = ir.Select(mask, val, b.scalar(acc))
            inputs.append(where)
            scalars.append(_table.reduction_identity(op, acc))
            shape = numpy.broadcast_shapes(a.shape, where.shape)
            if shape != a.shape:
                raise ValueError("where= must broadcast to the reduced array's shape")
        graph = b.build([val])
        init = initial  # (None: the identity)
        launch, check = _reduction_errors(op, acc)
        result, _ = self.map_reduce(graph, inputs, scalars, op, axes, acc, init, shape, launch, check)
        if launch is not None:
            _fperr.launched(self, launch)
        if (
            kind in ("nanmax", "nanmin")
            and a.dtype.kind == "f"
            and bool(self.to_host(self.reduce_op("logical_or", self.ufunc_call(numpy.isnan, (result,)), None)))
        ):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        if result.dtype != res_dt:
            result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    def _finish(
        self, result: CLArray, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, out: CLArray | None
    ) -> Any:
        if keepdims:
            kshape = tuple(1 if d in axes else n for d, n in enumerate(shape))
            result = self.reshape(result, kshape)
        if out is not None:
            if out.shape != result.shape:
                raise ValueError(f"output parameter has shape {out.shape}, expected {result.shape}")
            self.copy_into(out, result)
            return out
        return result

    @implements(numpy.mean, kwargs=("axis", "dtype", "out", "keepdims", "where"), complex_values=True)
    def mean(
        self,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        keepdims: bool = False,
        where: Any = True,
        _nan: bool = False,
    ) -> Any:
        axes = _norm_axes(axis, a.ndim)
        res_dt = _result_dtype("mean", a.dtype, dtype)
        acc = res_dt
        if not _nan:
            a = self._converted_first(a, acc)
        b = ir.GraphBuilder()
        x = b.input(a.dtype)
        val: ir.Node = b.cast(x, acc)
        inputs = [a]
        scalars: list[Any] = []
        count_graph: ir.Graph | None = None
        if _nan:
            isn = b.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), x)[0]
            val = ir.Select(isn, b.scalar(acc), val)
            scalars.append(0)
            cb = ir.GraphBuilder()
            cx = cb.input(a.dtype)
            notnan = cb.apply(
                numpy.logical_not, (numpy.dtype(bool),) * 2, cb.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), cx)[0]
            )[0]
            count_graph = cb.build([notnan], [acc])
        graph = b.build([val])
        launch, check = _reduction_errors("add", acc)
        total, _ = self.map_reduce(graph, inputs, scalars, "add", axes, acc, 0, a.shape, launch, check)
        if launch is not None:
            _fperr.launched(self, launch)
        if count_graph is not None:
            count, _ = self.map_reduce(count_graph, [a], [], "add", axes, acc, 0, a.shape)
            result = self.ufunc_call(numpy.true_divide, (total, count))
            if bool(self.to_host(self.reduction("any", self.ufunc_call(numpy.equal, (count, 0))))):
                warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)  # (NumPy's nanmean's)
        else:
            n = math.prod(a.shape[d] for d in axes)
            # (NumPy divides by its count, an intp: float32 and complex64 sums divide in double)
            result = self.ufunc_call(numpy.true_divide, (total, numpy.intp(n)), out=None)
            if result.dtype != res_dt:
                result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    @implements(numpy.var, kwargs=("axis", "dtype", "out", "ddof", "keepdims"))
    def var(
        self,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        ddof: int = 0,
        keepdims: bool = False,
        _sqrt: bool = False,
    ) -> Any:
        axes = _norm_axes(axis, a.ndim)
        res_dt = _result_dtype("var", a.dtype, dtype)
        acc = res_dt
        mean = self.mean(a, axis=axes, dtype=acc, keepdims=True)
        if not isinstance(mean, CLArray):
            mean = self.from_host(numpy.asarray(mean, acc).reshape((1,) * a.ndim))
        # NumPy's steps, each reporting its errors as NumPy's does: the deviations ("invalid value
        # encountered in subtract" where the mean is an infinity of the values), their squares
        # ("overflow encountered in square"), and their sum ("... in reduce")
        state = _fperr.current()
        check = _reduction_check("add", acc, state)
        key = ("var", a.dtype, acc, check)
        graph = self._graphs.get(key)
        if graph is None:
            b = ir.GraphBuilder()
            x = b.input(a.dtype)
            mu = b.input(acc)
            d = b.apply(numpy.subtract, (acc,) * 3, b.cast(x, acc), mu,
                        check=check & _table.error_categories(numpy.subtract, (acc,) * 3))[0]
            squares = b.apply(numpy.square, (acc,) * 2, d, check=check & _table.error_categories(numpy.square,
                                                                                                (acc,) * 2))[0]
            graph = self._graphs[key] = b.build([squares])
        launch = (_fperr.call_launch(graph if graph.error_nodes else None, state, ("reduce",))
                  if graph.error_nodes or check else None)
        total, _ = self.map_reduce(graph, [a, mean], [], "add", axes, acc, 0, a.shape, launch, check)
        if launch is not None:
            _fperr.launched(self, launch)
        # (NumPy's count is an intp less ddof: a float ddof, 0.5, leaves a float64 count)
        n = max(math.prod(a.shape[d] for d in axes) - ddof, 0)
        count = numpy.intp(n) if isinstance(n, (int, numpy.integer)) else numpy.float64(n)
        result = self.ufunc_call(numpy.true_divide, (total, count))
        if _sqrt:
            result = self.ufunc_call(numpy.sqrt, (result,), out=result)
        if result.dtype != res_dt:
            result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    def argreduce(
        self, kind: str, a: CLArray, axis: Any = None, out: CLArray | None = None, keepdims: bool = False
    ) -> Any:
        if not isinstance(a, CLArray):  # (a number, its out= a device array: NumPy's 0-d array of it)
            a = self.from_host(numpy.asarray(a))
        whole = axis is None or (a.ndim == 0 and type(axis) is int and axis in (0, -1))  # (NumPy takes these of 0-d)
        axes: tuple[int, ...] = (0,) if whole else _norm_axes(axis, a.ndim)  # (its AxisError first)
        if (a.size if whole else math.prod(a.shape[d] for d in axes)) == 0:
            raise ValueError(f"attempt to get {kind} of an empty sequence")
        if whole:
            src = a if a.c_contiguous else self.copy(a)
            src = self.reshape(src, (a.size,))
        else:
            src = a
        graph = self._graph_cast(a.dtype, a.dtype)
        _, index = self.map_reduce(graph, [src], [], kind, axes, a.dtype, _table.reduction_identity("maximum", a.dtype),
                                   src.shape)
        if whole:
            index = self.reshape(index, ())
            if keepdims:
                index = self.reshape(index, (1,) * a.ndim)
            if out is not None:
                if out.shape != index.shape:  # (the dispatcher asks NumPy for its own words)
                    raise ValueError(f"output parameter has shape {out.shape}, expected {index.shape}")
                self.copy_into(out, index)
                return out
            return index
        return self._finish(index, a.shape, axes, keepdims, out)

    def _ufunc_reduce(
        self,
        ufunc: numpy.ufunc,
        a: CLArray,
        axis: Any = 0,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        kind = _ops.UFUNC_REDUCTIONS[ufunc].__name__  # (add -> sum, logical_or -> any, ...)
        if isinstance(out, tuple):
            out = out[0]
        if where is not True and initial is None and ufunc.identity is None:
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        if kind in ("all", "any"):
            # logical_and.reduce keeps a bool result only for bool input; NumPy's own rule
            res = _np_ufunc_reduce_dtype(ufunc, a.dtype, dtype)
            r = self.reduction(kind, a, axis=axis, out=None, keepdims=keepdims, initial=initial, where=where)
            r = self.copy(r, res) if r.dtype != res else r
            if out is None:
                return r
            self.copy_into(out, r)
            return out
        dtype = _np_ufunc_reduce_dtype(ufunc, a.dtype, dtype)
        return self.reduction(kind, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)

    def cumulative(self, kind: str, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None) -> CLArray:
        res_dt = _result_dtype(kind, a.dtype, dtype)
        a = self._converted_first(a, res_dt, "cast")  # (NumPy's accumulate casts first: "... in cast")
        if axis is None or (a.ndim == 0 and type(axis) is int and axis in (0, -1)):  # (NumPy takes these of 0-d)
            src = self.reshape(a if a.c_contiguous else self.copy(a), (a.size,))
            ax = 0
        else:
            src = a
            ax = _norm_axes(axis, a.ndim)[0]
        # (NumPy's accumulate lays its result out as its operand is: F-ordered for an F-ordered one)
        result = self.empty_result(src.shape, res_dt, [src]) if out is None else out
        op = "add" if kind == "cumsum" else "multiply"
        n = src.shape[ax] if src.ndim else 1
        outer = tuple(s for d, s in enumerate(src.shape) if d != ax)
        m = math.prod(outer)
        if m and n:
            ost = [tuple(st for d, st in enumerate(x.strides) if d != ax) for x in (src, result)]
            oshape, ostrides = _collapse(outer, ost)
            layout = (len(oshape), src.dtype, res_dt, op)
            kernel = self._build(("scan", layout), lambda: codegen.scan(len(oshape), src.dtype, res_dt, op, "opencl"))
            args: list[Any] = [
                src.data,
                numpy.int64(src.offset),
                result.data,
                numpy.int64(result.offset),
                numpy.int64(m),
                numpy.int64(n),
            ]
            args += [numpy.int64(d) for d in oshape]
            for st in ostrides:
                args += [numpy.int64(s) for s in st]
            args += [numpy.int64(src.strides[ax]), numpy.int64(result.strides[ax])]
            self._launch(kernel, m, args)
            if res_dt.kind == "f" and _fperr.current().check:  # (NumPy's "... encountered in accumulate")
                self.report_accumulate(getattr(numpy, op), src if src.dtype == res_dt else self.copy(src, res_dt),
                                       result, ax)
        return result


def _red(kind: str) -> Callable[..., Any]:
    def impl(
        self: Reductions,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        return self.reduction(kind, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)

    return impl


def _minmax(kind: str) -> Callable[..., Any]:
    def impl(
        self: Reductions,
        a: CLArray,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        return self.reduction(kind, a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    return impl


def _logical(kind: str) -> Callable[..., Any]:
    def impl(
        self: Reductions, a: CLArray, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = True
    ) -> Any:
        return self.reduction(kind, a, axis=axis, out=out, keepdims=keepdims, where=where)

    return impl


def _arg(kind: str) -> Callable[..., Any]:
    def impl(self: Reductions, a: CLArray, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return self.argreduce(kind, a, axis=axis, out=out, keepdims=keepdims)

    return impl


def _cum(kind: str) -> Callable[..., Any]:
    def impl(self: Reductions, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        return self.cumulative(kind, a, axis=axis, dtype=dtype, out=out)

    return impl



@implements(numpy.count_nonzero, kwargs=("axis", "keepdims"))
def _count_nonzero(self: Reductions, a: CLArray, axis: Any = None, *, keepdims: bool = False) -> Any:
    """NumPy's count_nonzero: a sum of a != 0 as intp (the core makes a whole-array count NumPy's scalar)."""
    nonzero = self.ufunc_call(numpy.not_equal, (a, a.dtype.type(0)))
    return self.reduction("sum", nonzero, axis=axis, dtype=numpy.intp, keepdims=keepdims)


@implements(numpy.array_equal, kwargs=("equal_nan",),
            accepts=lambda args, kwargs: len(args) > 1 and _native_or_device(args[1]))
def _array_equal(self: Reductions, a1: CLArray, a2: CLArray, equal_nan: bool = False) -> bool:
    """NumPy's array_equal (a Python bool): the same shape and every element equal (NaN to NaN
    with ``equal_nan``)."""
    if a1.shape != a2.shape:
        return False
    if not a1.size:
        return True
    same = self.ufunc_call(numpy.equal, (a1, a2))
    if equal_nan and (a1.dtype.kind == "f" or a2.dtype.kind == "f"):
        both_nan = self.ufunc_call(numpy.logical_and, (self.ufunc_call(numpy.isnan, (a1,)),
                                                       self.ufunc_call(numpy.isnan, (a2,))))
        same = self.ufunc_call(numpy.logical_or, (same, both_nan))
    return bool(self.to_host(self.reduction("all", same)))


@implements(numpy.ptp, kwargs=("axis", "out", "keepdims"))
def _ptp(self: Reductions, a: CLArray, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """NumPy's ptp: max - min over ``axis`` (subtract's wraparound for integers, as NumPy's)."""
    high = self.reduction("max", a, axis=axis, keepdims=keepdims)
    low = self.reduction("min", a, axis=axis, keepdims=keepdims)
    return self.ufunc_call(numpy.subtract, (high, low), out=None if out is None else (out,),
                           errstate=_fperr.current())


@implements(numpy.trace, kwargs=("offset", "axis1", "axis2", "dtype", "out"))
def _trace(self: Reductions, a: CLArray, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> Any:
    """NumPy's trace: the sum of the diagonal view over its last axis."""
    diagonal = self.numpy_view(numpy.diagonal, a, offset, axis1, axis2)
    return self.reduction("sum", diagonal, axis=-1, dtype=dtype, out=out)


# complex sums: the kernels' complex add (the order of the additions differs from NumPy's pairwise
# sum, as for floats). Complex products stay in NumPy: a product that overflows and then meets an
# infinity ends NaN, and the reduction's own check (an inf or NaN result from finite values) can't
# tell the overflow NumPy reports there.
implements(numpy.sum, complex_values=True)(_red("sum"))
implements(numpy.prod)(_red("prod"))
implements(numpy.nansum, complex_values=True)(_red("nansum"))
implements(numpy.nanprod)(_red("nanprod"))
implements(numpy.max, numpy.amax)(_minmax("max"))
implements(numpy.min, numpy.amin)(_minmax("min"))
implements(numpy.nanmax)(_minmax("nanmax"))
implements(numpy.nanmin)(_minmax("nanmin"))
implements(numpy.any)(_logical("any"))
implements(numpy.all)(_logical("all"))
implements(numpy.argmax)(_arg("argmax"))
implements(numpy.argmin)(_arg("argmin"))
implements(numpy.cumsum)(_cum("cumsum"))
implements(numpy.cumprod)(_cum("cumprod"))


@implements(numpy.std)
def _std(self: Reductions, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
         keepdims: bool = False) -> Any:
    return self.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, _sqrt=True)


@implements(numpy.nanmean)
def _nanmean(self: Reductions, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False) -> Any:
    return self.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, _nan=True)
