"""Linear algebra: matmul (a tiled kernel in local memory), dot, tensordot."""

from __future__ import annotations

import math
from typing import Any

import numpy

from ... import _fperr
from ...kernels import codegen
from ..base import Backend
from .array import CLArray, _broadcast_strides, _collapse
from .routing import implements

#: functions a CPU device runs slower than NumPy (see OpenCLBackend.prefers_host)
_HOST_ON_CPU = frozenset({numpy.matmul, numpy.dot, numpy.tensordot})

_TILE = 16


def _matmul_source(dt: numpy.dtype) -> codegen.KernelSource:
    """C[b] = A[b] @ B[b] with TILE x TILE tiles in local memory (element strides, batch in dim 2)."""
    t = "double" if dt == numpy.float64 else "float"
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dt == numpy.float64 else ""
    src = f"""#pragma OPENCL FP_CONTRACT OFF
{pragma}#define TS {_TILE}
__kernel void npg_matmul(__global const {t}* A, long ao, long ab, long a0, long a1,
                         __global const {t}* B, long bo, long bb, long b0, long b1,
                         __global {t}* C, long co, long cb, long c0, int M, int N, int K) {{
  __local {t} As[TS][TS];
  __local {t} Bs[TS][TS + 1];
  int lx = get_local_id(0), ly = get_local_id(1);
  int col = get_group_id(0) * TS + lx, row = get_group_id(1) * TS + ly;
  long z = get_global_id(2);
  A += ao + z * ab; B += bo + z * bb; C += co + z * cb;
  {t} acc = 0;
  for (int t0 = 0; t0 < K; t0 += TS) {{
    As[ly][lx] = (row < M && t0 + lx < K) ? A[row * a0 + (t0 + lx) * a1] : 0;
    Bs[ly][lx] = (t0 + ly < K && col < N) ? B[(t0 + ly) * b0 + col * b1] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int q = 0; q < TS; q++) acc += As[ly][q] * Bs[q][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (row < M && col < N) C[row * c0 + col] = acc;
}}
"""
    return codegen.KernelSource(src, "npg_matmul", "opencl", (), dt == numpy.float64)



class Linalg(Backend):
    """matmul, dot and tensordot through one tiled kernel."""

    @implements(numpy.outer, kwargs=("out",))
    def outer(self, a: CLArray, b: CLArray, out: CLArray | None = None) -> CLArray:
        """NumPy's outer: ravel(a)[:, None] * ravel(b)[None, :] (one elementwise kernel)."""
        a, b = (x if isinstance(x, CLArray) else self.from_host(numpy.asarray(x)) for x in (a, b))
        column = self.reshape(self.ravel(a), (a.size, 1))
        row = self.reshape(self.ravel(b), (1, b.size))
        return self.ufunc_call(numpy.multiply, (column, row), out=None if out is None else (out,),
                               errstate=_fperr.current())

    @implements(numpy.matmul, kwargs=("out",))
    def matmul(self, a: CLArray, b: CLArray, out: Any = None, **kwargs: Any) -> Any:
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul: Input operand does not have enough dimensions")
        dt = numpy.result_type(a.dtype, b.dtype)
        ka, kb = a.shape[-1], (b.shape[-2] if b.ndim > 1 else b.shape[0])
        if ka != kb:
            raise ValueError(
                f"matmul: Input operand 1 has a mismatch in its core dimension 0 ({kb} is different from {ka})"
            )
        pshape = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + a.shape[-2:-1] + b.shape[-1:] * (b.ndim > 1)
        a2 = a if a.ndim > 1 else a.view((1,) + a.shape, (0,) + a.strides, a.offset)
        b2 = b if b.ndim > 1 else b.view(b.shape + (1,), b.strides + (0,), b.offset)
        if a2.dtype != dt:
            a2 = self.copy(a2, dt)
        if b2.dtype != dt:
            b2 = self.copy(b2, dt)
        batch = numpy.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        m, k = a2.shape[-2:]
        n = b2.shape[-1]
        result = self.empty(batch + (m, n), dt)
        if result.size:
            sa = _broadcast_strides(a2.view(a2.shape[:-2], a2.strides[:-2], 0), batch) if batch else ()
            sb = _broadcast_strides(b2.view(b2.shape[:-2], b2.strides[:-2], 0), batch) if batch else ()
            sc = result.strides[:-2]
            bshape, (bsa, bsb, bsc) = _collapse(batch, [sa, sb, sc]) if batch else ((), [(), (), ()])
            kernel = self._build(("matmul", dt), lambda: _matmul_source(dt))
            isz = dt.itemsize
            outer = bshape[:-1]
            nb = bshape[-1] if bshape else 1
            for idx in numpy.ndindex(*outer):
                oa = a2.offset + sum(i * s for i, s in zip(idx, bsa, strict=False))
                ob = b2.offset + sum(i * s for i, s in zip(idx, bsb, strict=False))
                oc = result.offset + sum(i * s for i, s in zip(idx, bsc, strict=False))
                ba = bsa[-1] if bshape else 0
                bb = bsb[-1] if bshape else 0
                bc = bsc[-1] if bshape else 0
                args = [
                    a2.data,
                    numpy.int64(oa // isz),
                    numpy.int64(ba // isz),
                    numpy.int64(a2.strides[-2] // isz),
                    numpy.int64(a2.strides[-1] // isz),
                    b2.data,
                    numpy.int64(ob // isz),
                    numpy.int64(bb // isz),
                    numpy.int64(b2.strides[-2] // isz),
                    numpy.int64(b2.strides[-1] // isz),
                    result.data,
                    numpy.int64(oc // isz),
                    numpy.int64(bc // isz),
                    numpy.int64(result.strides[-2] // isz),
                    numpy.int32(m),
                    numpy.int32(n),
                    numpy.int32(k),
                ]
                gs = (-(-n // _TILE) * _TILE, -(-m // _TILE) * _TILE, nb)
                self._enqueue(kernel, gs, (_TILE, _TILE, 1), args)
        res = self.reshape(result, pshape)
        if out is not None:
            self.copy_into(out, res)
            return out
        return res

    @implements(numpy.dot, kwargs=("out",))
    def dot(self, a: CLArray, b: CLArray, out: Any = None) -> Any:
        if a.ndim <= 2 and b.ndim <= 2:
            return self.matmul(a, b, out=out)
        if b.ndim == 1:
            return self.matmul(a, b, out=out)
        return self.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]), out=out)

    @implements(numpy.tensordot, kwargs=("axes",))
    def tensordot(self, a: CLArray, b: CLArray, axes: Any = 2, out: Any = None) -> Any:
        if isinstance(axes, (int, numpy.integer)):
            ax_a = list(range(a.ndim - int(axes), a.ndim))
            ax_b = list(range(int(axes)))
        else:
            ax_a, ax_b = ([x] if isinstance(x, (int, numpy.integer)) else list(x) for x in axes)
        ax_a = [x % a.ndim for x in ax_a]
        ax_b = [x % b.ndim for x in ax_b]
        if [a.shape[x] for x in ax_a] != [b.shape[x] for x in ax_b]:
            raise ValueError("shape-mismatch for sum")
        free_a = [d for d in range(a.ndim) if d not in ax_a]
        free_b = [d for d in range(b.ndim) if d not in ax_b]
        k = math.prod(a.shape[d] for d in ax_a)
        at = self.reshape(self.transpose(a, free_a + ax_a), (math.prod(a.shape[d] for d in free_a), k))
        bt = self.reshape(self.transpose(b, ax_b + free_b), (k, math.prod(b.shape[d] for d in free_b)))
        res = self.reshape(self.matmul(at, bt), tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))
        if out is not None:
            self.copy_into(out, res)
            return out
        return res
