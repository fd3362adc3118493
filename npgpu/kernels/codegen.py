"""IR -> kernel source: strided N-d elementwise and map-reduce kernels in OpenCL C or CUDA C.

Source text comes only from the ufunc table and this module, never from user input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from . import order as _order
from . import ufuncs as _table
from .ir import Apply, Cast, Graph, Input, Node, Scalar, Select, walk

#: Reductions the map-reduce kernel knows: name -> ufunc whose table entry combines.
REDUCE_UFUNCS: dict[str, numpy.ufunc] = {
    "add": numpy.add,
    "multiply": numpy.multiply,
    "maximum": numpy.maximum,
    "minimum": numpy.minimum,
    "fmax": numpy.fmax,
    "fmin": numpy.fmin,
    "logical_and": numpy.logical_and,
    "logical_or": numpy.logical_or,
    "bitwise_and": numpy.bitwise_and,
    "bitwise_or": numpy.bitwise_or,
    "bitwise_xor": numpy.bitwise_xor,
}
ARG_REDUCTIONS = ("argmax", "argmin")
#: values loaded ahead in an ordered fold (ReduceLayout.ordered)
ORDERED_UNROLL = 16


@dataclass(frozen=True)
class Layout:
    """The launch-shape part of a cache key.

    contiguous: every operand is 1-d contiguous (elements addressed as p[off + i]);
    otherwise ``ndim`` collapsed dimensions with per-operand byte strides.
    index64: index arithmetic in 64 bits (needed past 2**31 elements or bytes).
    where: a bool mask operand follows the outputs; outputs are written where it is true.
    chunked: each work-item loops over ``chunk`` consecutive elements (an extra index
    argument right after n) instead of one: what CPUs (PoCL) run fastest.
    vector: with ``chunked`` and ``contiguous``, compute ``vector`` elements at once in
    OpenCL vector types (then the chunk's remainder one by one); see ``vector_width``.
    inline_errors: a chunked kernel whose output may overwrite an input checks floating-point
    errors element by element (others check a chunk again where its finiteness test failed).
    packed: the operands' offsets, n, the extents and the strides come in one argument, a struct
    of 64-bit integers (``pack_geometry``), after the scalars: a launcher that converts each
    argument in Python (CuPy) pays per argument, and a strided launch of five 2-d operands has
    twenty-six such integers.
    """

    ndim: int
    contiguous: bool
    index64: bool = True
    where: bool = False
    chunked: bool = False
    vector: int = 0
    inline_errors: bool = False
    packed: bool = False


@dataclass(frozen=True)
class KernelSource:
    """Generated source plus what the launcher needs to know about its arguments."""

    source: str
    name: str
    dialect: str
    #: argument kinds in order: ("array", dtype) | ("scalar", dtype) | ("index", None)
    args: tuple[tuple[str, numpy.dtype | None], ...]
    needs_fp64: bool


#: Elements per vector: 32 bytes (AVX2), for float32 and float64 graphs.
_VECTOR_WIDTH = {numpy.dtype(numpy.float32): 8, numpy.dtype(numpy.float64): 4}


def _vectorizes(ufunc: numpy.ufunc) -> bool:
    facts = _table.facts(ufunc.__name__)
    return facts is not None and facts.vectorizes


def vector_width(graph: Graph) -> int:
    """How many elements an OpenCL vector kernel of ``graph`` computes at once; 0 when it can't.

    A graph qualifies when every value in it has one float dtype and every operation is in
    vectorizing (UfuncFacts.vectorizes). PoCL then runs explicitly vectorized code far faster than the scalar
    loop: E8 at 10^7 float64 elements took 17 ms against 74 ms (NumPy: 118 ms) on a 2-core CPU.
    Kept on the graph (graphs are frozen): it was worked out at every launch, two walks of the graph.
    """
    width = graph.__dict__.get("_vector_width")
    if width is None:
        width = graph.__dict__["_vector_width"] = _vector_width(graph)
    return width


def _vector_width(graph: Graph) -> int:
    dtypes = graph.dtypes()
    if len(dtypes) != 1 or len(graph.outputs) != 1:
        return 0
    width = _VECTOR_WIDTH.get(next(iter(dtypes)), 0)
    for node in walk(graph.outputs):
        if isinstance(node, (Input, Scalar)):
            continue
        if not (isinstance(node, Apply) and node.ufunc.nout == 1 and _vectorizes(node.ufunc)):
            return 0
    return width


def _idx(layout_index64: bool, dialect: str) -> str:
    if dialect == "opencl":
        return "long" if layout_index64 else "int"
    return "long long" if layout_index64 else "int"


def _needs_fp64(dtypes: set[numpy.dtype]) -> bool:
    return any(numpy.dtype(dt) in (numpy.float64, numpy.complex128) for dt in dtypes)


def _preamble(dialect: str, fp64: bool, complex_values: bool = False, half: bool = False) -> list[str]:
    lines = []
    if dialect == "opencl":
        # FP_CONTRACT OFF: no fused multiply-add, so a*b+c rounds like NumPy.
        lines.append("#pragma OPENCL FP_CONTRACT OFF")
        if fp64:
            lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    else:
        lines.append("#pragma nv_diag_suppress 177")
    lines.append(_table.typedefs(dialect, complex_values, half, fp64))
    return lines


def _has_half(dtypes: set[numpy.dtype]) -> bool:
    return any(_table.is_half(dt) for dt in dtypes)


def _has_complex(dtypes: set[numpy.dtype]) -> bool:
    return any(numpy.dtype(dt).kind == "c" for dt in dtypes)


def emit_body(
    graph: Graph, dialect: str, load: dict[int, str], scalar_names: list[str], names: dict[Node, str] | None = None
) -> tuple[list[str], list[str], dict[str, str]]:
    """Statements computing every graph output.

    ``load[i]`` is the C expression reading input ``i``.  Returns (statements, names of the
    output values, helper functions).  Each node is computed once (shared subexpressions).
    ``names``: filled with each node's C variable name (for emit_checks).
    """
    if names is None:
        names = {}
    stmts: list[str] = []
    helpers: dict[str, str] = {}
    for node in walk(graph.outputs):
        ct = _table.ctype(node.dtype)
        if isinstance(node, Input):
            expr = load[node.index]
        elif isinstance(node, Scalar):
            expr = scalar_names[node.index]
        elif isinstance(node, Cast):
            expr = _table.cast(names[node.operand], node.operand.dtype, node.dtype, dialect)
        elif isinstance(node, Apply):
            constant = len(node.operands) == 2 and isinstance(node.operands[1], Scalar)
            expr, needed = _table.render(
                node.ufunc, node.loop, [names[o] for o in node.operands], node.out_index, dialect, constant
            )
            helpers.update(needed)
        elif isinstance(node, Select):
            expr = f"({names[node.cond]} ? {names[node.a]} : {names[node.b]})"
        else:  # pragma: no cover - the IR is closed
            raise TypeError(f"unknown IR node {node!r}")
        name = f"t{len(names)}"
        names[node] = name
        stmts.append(f"{ct} {name} = {expr};")
    return stmts, [names[o] for o in graph.outputs], helpers


def _covered(graph: Graph) -> set[Node]:
    """The float nodes whose inf or NaN always reaches a float output of ``graph`` (through
    operations that keep non-finite values non-finite: UfuncFacts.propagates_nonfinite)."""
    covered: set[Node] = {o for o in graph.outputs if o.dtype.kind == "f"}
    for node in reversed(walk(graph.outputs)):  # (every user of a node comes before it)
        if node not in covered:
            continue
        if isinstance(node, Apply) and node.loop[0].kind == "f" and node.ufunc.nout == 1:
            facts = _table.facts(node.ufunc.__name__)
            for i in facts.propagates_nonfinite if facts is not None else ():
                covered.add(node.operands[i])
        elif isinstance(node, Cast) and node.operand.dtype.kind == "f":
            covered.add(node.operand)
    return covered


def error_conditions(node: Node, names: dict[Node, str], dialect: str,
                     helpers: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(category, C condition) for each category ``node`` checks, over the names of its values
    (``helpers``: gets the helper functions the conditions call)."""
    if isinstance(node, Apply):
        table = _table.error_table(node.ufunc, node.loop)
        results = [names[node]]
        if node.ufunc.nout == 2:
            sibling = Apply(node.ufunc, node.loop, node.operands, 1)
            results.append(names.get(sibling, results[0]))
        operands = [names[o] for o in node.operands]
        in_dtype = node.loop[0]
    elif isinstance(node, Cast):
        table = _table.cast_error_table(node.operand.dtype, node.dtype)
        results, operands = [names[node]], [names[node.operand]]
        in_dtype = node.operand.dtype
    else:  # pragma: no cover - only Apply and Cast carry checks
        return []
    return [(category, _table.render_condition(template, operands, results, in_dtype, dialect, helpers))
            for category, template in table.items() if node.check & category]


_FLAG_BITS = re.compile(r"\((.+) & \d+\)")


def _one_test(found: list[tuple[int, str]]) -> list[str]:
    """A node's conditions as the per-element test: one call where each category is a bit of the
    same flags function (a complex loop's flag form, kernels/complexmath.py), else each condition."""
    calls = {m.group(1) for _, c in found if (m := _FLAG_BITS.fullmatch(c))}
    if len(found) > 1 and len(calls) == 1 and all(_FLAG_BITS.fullmatch(c) for _, c in found):
        return [f"({calls.pop()} != 0)"]
    return [c for _, c in found]


def _flags_show(node: Node) -> bool:
    facts = _table.facts(node.ufunc.__name__) if isinstance(node, Apply) else None
    return facts is not None and node.loop[0].kind in facts.flagged_result_nonfinite


class Checks:
    """The error checks of a graph's kernel for one element (or one OpenCL vector of them).

    Flag byte ``4k + b`` is set where error node k raised category ``1 << b`` (npgpu/_fperr.py
    reads them). Each check's condition (``details``) runs only where a cheap test fails: a float
    value is not finite (each float output, and each checked value whose inf or NaN could vanish
    before an output, like ``x / (y * z)``'s denominator: ``tests``, name -> dtype), or an integer
    condition holds. ``inline``: test and details per element. ``accumulate``/``pending``: only
    the test per element, folded into ``acc`` (a chunk's loop), and the details over the chunk
    again where it failed: no branch in the loop, but only for kernels whose outputs don't
    overwrite their inputs. On PoCL (2026-12-01) E8 at 1e7 float64 ran 6% slower checked so,
    ``a + b`` as fast as unchecked; checked inline, 57% and 2x slower.
    """

    def __init__(self, tests: dict[str, numpy.dtype], conditions: list[str], details: list[str], vector: str,
                 dialect: str) -> None:
        self.tests, self.conditions, self.details = tests, conditions, details
        self.vector, self.dialect = vector, dialect

    def __bool__(self) -> bool:
        return bool(self.details)

    def _parts(self, names: list[str]) -> list[str]:
        """The real values of ``names`` (a complex value's two parts)."""
        return [p for t in names for p in ((f"{t}.re", f"{t}.im") if self.tests[t].kind == "c" else (t,))]

    def _nonfinite(self, names: list[str]) -> str:
        # x - x is +0 for finite x, NaN for inf and NaN: two instructions, in vectors too (OpenCL's
        # isfinite measured slower on PoCL); its bits are 0 exactly where every x is finite
        return " + ".join(f"({t} - {t})" for t in self._parts(names))

    def _test(self) -> str:
        if self.vector:
            return f"({self._nonfinite(list(self.tests))}) != 0"
        return " || ".join([f"!isfinite({t})" for t in self._parts(list(self.tests))] + self.conditions)

    def inline(self) -> list[str]:
        if not self.details:
            return []
        any_ = "any" if self.vector else ""
        return [f"if ({any_}({self._test()})) {{", *("  " + d for d in self.details), "}"]

    def declare(self, acc: str) -> str:
        """The accumulator's declaration (a vector kernel's: the integer vector ``vector``)."""
        if self.vector:
            return f"{self.vector} {acc} = ({self.vector})(0);"
        return fold_declaration(acc, self.dialect)

    def accumulate(self, acc: str, implied: tuple[str, ...] = ()) -> str:
        """Fold this element's test into ``acc``: an OR, no dependent chain of additions; tests of
        the ``implied`` values (checked another way) left out; "" when nothing is left."""
        if self.vector:
            return f"{acc} |= as_{self.vector}({self._nonfinite(list(self.tests))});"
        names = [t for t in self.tests if t not in implied]
        terms = list(self.conditions)
        if names and self.dialect == "opencl":
            wide = any(self.tests[t].itemsize == (16 if self.tests[t].kind == "c" else 8) for t in names)
            terms.insert(0, f"as_{'ulong' if wide else 'uint'}({self._nonfinite(names)})")
        else:
            terms[:0] = [f"!isfinite({t})" for t in self._parts(names)]
        return f"{acc} |= " + " | ".join(terms) + ";" if terms else ""

    def pending(self, acc: str) -> str:
        return f"any({acc} != 0)" if self.vector else acc


def fold_declaration(acc: str, dialect: str) -> str:
    """The declaration of a scalar accumulator of Checks.accumulate."""
    return f"{'ulong' if dialect == 'opencl' else 'int'} {acc} = 0;"


def emit_checks(graph: Graph, names: dict[Node, str], dialect: str, flag: str, vector: str = "",
                helpers: dict[str, str] | None = None) -> Checks:
    """The error checks of ``graph``'s checked nodes over the C names of its values (``flag``:
    the flag byte's lvalue with ``{}`` for its index). ``vector``: the names are OpenCL vectors,
    this the integer vector type of their size (``long4``); a condition holds where it holds in
    any lane."""
    tests: dict[str, numpy.dtype] = {}
    conditions: list[str] = []
    details: list[str] = []
    if not graph.error_nodes:
        return Checks(tests, conditions, details, vector, dialect)
    covered = _covered(graph)
    any_ = "any" if vector else ""
    floats = False
    for k, node in enumerate(graph.error_nodes):
        # (a complex result is tested like a float one where its loop's flags always leave it inf or NaN)
        float_result = node.dtype.kind == "f" or (node.dtype.kind == "c" and _flags_show(node))
        found = error_conditions(node, names, dialect, helpers)
        for category, condition in found:
            details.append(f"if ({any_}({condition})) {set_flag(flag, 4 * k + category.bit_length() - 1)}")
        if not float_result:
            conditions.extend(_one_test(found))
        floats = floats or float_result
        if float_result and node not in covered:
            tests[names[node]] = node.dtype
    if floats:
        tests.update((names[o], o.dtype) for o in graph.outputs if o.dtype.kind == "f")
    return Checks(tests, conditions, details, vector, dialect)


class _Sig:
    """Collects kernel parameters for one dialect."""

    def __init__(self, dialect: str, idx: str):
        self.dialect = dialect
        self.idx = idx
        self.params: list[str] = []
        self.args: list[tuple[str, numpy.dtype | None]] = []

    def pointer(self, name: str, ctype: str | None, const: bool) -> None:
        space = "__global " if self.dialect == "opencl" else ""
        c = "const " if const else ""
        self.params.append(f"{space}{c}{ctype or 'char'}* {name}")

    def array(self, pname: str, oname: str | None, dtype: numpy.dtype, typed: bool, const: bool) -> None:
        """A pointer parameter and its offset's (``oname``; None: the offset comes packed)."""
        self.pointer(pname, _table.storage_ctype(dtype) if typed else None, const)
        if oname is not None:
            self.params.append(f"{self.idx} {oname}")
        self.args.append(("array", numpy.dtype(dtype)))

    def scalar(self, name: str, dtype: numpy.dtype) -> None:
        self.params.append(f"{_table.ctype(dtype)} {name}")
        self.args.append(("scalar", numpy.dtype(dtype)))

    def index(self, name: str) -> None:
        self.params.append(f"{self.idx} {name}")
        self.args.append(("index", None))

    def header(self, name: str) -> str:
        q = "__kernel void" if self.dialect == "opencl" else 'extern "C" __global__ void'
        return f"{q} {name}(" + ", ".join(self.params) + ")"

    def gid(self) -> str:
        if self.dialect == "opencl":
            return f"({self.idx})get_global_id(0)"
        return f"(({self.idx})blockIdx.x * ({self.idx})blockDim.x + ({self.idx})threadIdx.x)"


def _error_parameters(sig: _Sig, graph: Graph, reduce_check: int = 0) -> None:
    """The flag buffer's parameters, last, when the kernel reports floating-point errors: a byte
    pointer and the byte offset of this launch's flags (npgpu/_fperr.py)."""
    if graph.error_nodes or reduce_check:
        sig.pointer("npg_err", "uchar" if sig.dialect == "opencl" else "unsigned char", const=False)
        sig.params.append(f"{sig.idx} npg_err_off")
        sig.args.append(("errors", None))


def error_flag(dialect: str) -> str:
    """The C lvalue of flag byte ``{}`` of this launch (emit_checks' ``flag``)."""
    return "npg_err[npg_err_off + {}]"


def set_flag(flag: str, index: int) -> str:
    """A statement setting flag byte ``index`` (read first: a flag set already costs no write)."""
    target = flag.format(index)
    return f"{{ if (!{target}) {target} = 1; }}"


def _ptr_cast(dialect: str, ctype: str, const: bool) -> str:
    space = "__global " if dialect == "opencl" else ""
    return f"({space}{'const ' if const else ''}{ctype}*)"


def elementwise(graph: Graph, layout: Layout, dialect: str = "opencl", name: str = "npg_elementwise") -> KernelSource:
    """An elementwise kernel: one work-item (thread) per element of the broadcast shape.

    Arguments, in order: for each input, then each output, then the where-mask:
    (pointer, offset) -- offset in elements when ``layout.contiguous``, else in bytes;
    then each scalar by value; then n (element count); then, unless contiguous,
    the ndim extents and, per array operand in the same order, ndim byte strides.
    """
    idx = _idx(layout.index64, dialect)
    sig = _Sig(dialect, idx)
    contiguous = layout.contiguous
    operands: list[tuple[str, numpy.dtype, bool]] = []  # (name, dtype, is_output)
    for i, dt in enumerate(graph.inputs):
        operands.append((f"in{i}", dt, False))
    for k, dt in enumerate(graph.out_dtypes):
        operands.append((f"out{k}", dt, True))
    if layout.where:
        operands.append(("mask", numpy.dtype(bool), False))
    packed: list[str] = []  # (layout.packed: the integers' names, in the struct's order)
    for pname, dt, is_out in operands:
        sig.array(pname, None if layout.packed else f"{pname}_off", dt, typed=contiguous, const=not is_out)
        if layout.packed:
            packed.append(f"{pname}_off")
    scalar_names = [f"s{j}" for j in range(len(graph.scalars))]
    for sname, dt in zip(scalar_names, graph.scalars, strict=True):
        sig.scalar(sname, dt)
    indices = ["n", *(["chunk"] if layout.chunked else [])]
    nd = layout.ndim
    if not contiguous:
        indices += [f"dim{d}" for d in range(nd)]
        indices += [f"{pname}_st{d}" for pname, _, _ in operands for d in range(nd)]
    if layout.packed:
        packed += indices
        sig.params.append("const npg_geom_t npg_geom")
        sig.args.append(("geometry", None))
    else:
        for index_name in indices:
            sig.index(index_name)
    _error_parameters(sig, graph)

    if layout.vector:
        if layout.packed:
            raise ValueError("a vector layout takes its integers one by one")
        return _vector_elementwise(graph, layout, sig, scalar_names, name)
    # (packed: the struct's integers as the locals the unpacked kernel has as parameters)
    unpack = [f"const {idx} {v} = ({idx})npg_geom.v[{k}];" for k, v in enumerate(packed)]
    index: list[str] = []  # (strided: the element's coordinates, unravelled from i)
    start: list[str] = []  # (strided and chunked: the chunk's first coordinates, before its loop)
    step: list[str] = []  # (strided and chunked: the next element's, at the end of each turn)
    addr: dict[str, str] = {}
    if contiguous:
        for pname, _, _ in operands:
            addr[pname] = f"{pname}[{pname}_off + i]"
    else:
        # i unravelled over the C-order extents, innermost first. A chunk unravels its first
        # element only and steps the coordinates as an odometer: a division and a remainder per
        # dimension and element took most of a strided kernel's time on PoCL (heat_3d's stencil).
        unravel = [*(f"c{d} = r % dim{d}; r /= dim{d};" for d in range(nd - 1, 0, -1)), "c0 = r;"]
        if layout.chunked:
            start = [f"{idx} {', '.join(f'c{d}' for d in range(nd))};",
                     "{", f"  {idx} r = i0;", *("  " + u for u in unravel), "}"]
            carry = "++c0;"
            for d in range(1, nd):
                carry = f"if (++c{d} == dim{d}) {{ c{d} = 0; {carry} }}"
            step = [carry]
        else:
            index = [f"{idx} r = i;", *(f"{idx} {u}" for u in unravel)]
        for pname, dt, is_out in operands:
            terms = " + ".join([f"{pname}_off"] + [f"c{d} * {pname}_st{d}" for d in range(nd)])
            ct = _table.storage_ctype(dt)
            addr[pname] = f"(*{_ptr_cast(dialect, ct, not is_out)}({pname} + ({terms})))"
    load = {i: _table.load(addr[f"in{i}"], dt) for i, dt in enumerate(graph.inputs)}
    stmts, results, helpers = emit_body(graph, dialect, load, scalar_names, names := {})
    stores = [f"{addr[f'out{k}']} = {_table.stored(res, dt)};"
              for k, (res, dt) in enumerate(zip(results, graph.out_dtypes, strict=True))]
    checks = emit_checks(graph, names, dialect, error_flag(dialect), helpers=helpers)
    # chunks fold their tests into one flag and check again where it is set (see Checks)
    deferred = bool(checks) and layout.chunked and not layout.inline_errors

    def element(tail: list[str]) -> list[str]:
        if layout.where:
            tail = ["if (" + addr["mask"] + ") {", *("  " + t for t in tail), "}"]
        return index + stmts + tail + step

    if not layout.chunked:
        body = [f"{idx} i = {sig.gid()};", "if (i >= n) return;", *element(stores + checks.inline())]
    else:
        body = [f"{idx} i0 = {sig.gid()} * chunk;", f"{idx} i1 = n - i0 < chunk ? n : i0 + chunk;"]
        loop = f"for ({idx} i = i0; i < i1; i++) {{"
        if deferred:
            tested = element(stores + [checks.accumulate("npg_nf")])
            body += [checks.declare("npg_nf"), *start, loop, *("  " + b for b in tested), "}",
                     f"if ({checks.pending('npg_nf')}) {{", *("  " + b for b in start), "  " + loop,
                     *("    " + b for b in element(checks.inline())), "  }", "}"]
        else:
            body += [*start, loop, *("  " + b for b in element(stores + checks.inline())), "}"]
    dts = graph.dtypes()
    fp64 = _needs_fp64(dts)
    body = unpack + body
    geometry = [f"typedef struct {{ {_idx(True, dialect)} v[{len(packed)}]; }} npg_geom_t;"] if packed else []
    src = (_preamble(dialect, fp64, _has_complex(dts), _has_half(dts)) + list(helpers.values()) + geometry
           + [sig.header(name) + " {"] + ["  " + b for b in body] + ["}"])
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)


def pack_geometry(integers: Sequence[int]) -> numpy.void:
    """A ``Layout.packed`` kernel's struct argument holding ``integers``, in the struct's order: a
    NumPy structured scalar, which CuPy and PyOpenCL pass by value as the struct's bytes."""
    values = numpy.array(integers, numpy.int64)
    return values.view(numpy.dtype([("v", numpy.int64, (len(values),))]))[0]


def _vector_elementwise(graph: Graph, layout: Layout, sig: _Sig, scalar_names: list[str], name: str) -> KernelSource:
    """The chunked contiguous OpenCL kernel computing ``layout.vector`` elements at a time.

    The vector body is ``emit_body``'s own text with the element type's alias renamed to a
    vector alias (``f64_t`` -> ``v_f64_t``, a ``double4``): the templates allowed here are the
    same expressions for vectors. Scalars are widened explicitly; the remainder of a chunk
    (fewer than ``vector`` elements) runs the scalar body.
    """
    width = layout.vector
    dtype = graph.inputs[0] if graph.inputs else graph.out_dtypes[0]
    ct = _table.ctype(dtype)
    vt = f"v_{ct}"
    idx = _idx(layout.index64, "opencl")
    n_in = len(graph.inputs)
    vload = {i: f"vload{width}(0, in{i} + in{i}_off + i)" for i in range(n_in)}
    stmts_v, results_v, _ = emit_body(graph, "opencl", vload, [f"(({ct})({s}))" for s in scalar_names],
                                      names_v := {})
    lanes = f"{'long' if dtype.itemsize == 8 else 'int'}{width}"
    checks_v = emit_checks(graph, names_v, "opencl", error_flag("opencl"), vector=lanes)
    rename = re.compile(rf"\b{ct}\b")
    stmts_v = [rename.sub(vt, st) for st in stmts_v]
    guarded = _guarded_builtins(graph) if dtype == numpy.float32 else []
    for c in guarded:  # (UfuncFacts.guard_float8: infinite lanes made NaN before the builtin)
        stmts_v = [re.sub(rf"\b{c}\(", f"npg_v{c}(", st) for st in stmts_v]
    scalar_load = {i: f"in{i}[in{i}_off + i]" for i in range(n_in)}
    stmts_s, results_s, _ = emit_body(graph, "opencl", scalar_load, scalar_names, names_s := {})
    checks_s = emit_checks(graph, names_s, "opencl", error_flag("opencl"))
    # (a remainder checked inline slowed a whole 1e7 add 2x on PoCL: it too folds its tests)
    deferred = bool(checks_v) and not layout.inline_errors
    tail_v = [checks_v.accumulate("npg_nf")] if deferred else checks_v.inline()
    tail_s = [checks_s.accumulate("npg_nr")] if deferred else checks_s.inline()
    vector_loop = f"for (; i + {width} <= i1; i += {width}) {{"
    body = [
        f"{idx} i0 = {sig.gid()} * chunk;",
        f"{idx} i1 = n - i0 < chunk ? n : i0 + chunk;",
        f"{idx} i = i0;",
        *([checks_v.declare("npg_nf"), checks_s.declare("npg_nr")] if deferred else []),
        vector_loop,
        *("  " + st for st in stmts_v),
        f"  vstore{width}({results_v[0]}, 0, out0 + out0_off + i);",
        *("  " + st for st in tail_v),
        "}",
        "for (; i < i1; i++) {",
        *("  " + st for st in stmts_s),
        f"  out0[out0_off + i] = {results_s[0]};",
        *("  " + st for st in tail_s),
        "}",
    ]
    if deferred:  # the chunk again, checked, where a value was not finite (see Checks)
        body += [f"if ({checks_v.pending('npg_nf')} || {checks_s.pending('npg_nr')}) {{", "  i = i0;",
                 "  " + vector_loop, *("    " + st for st in stmts_v + checks_v.inline()), "  }",
                 "  for (; i < i1; i++) {", *("    " + st for st in stmts_s + checks_s.inline()), "  }", "}"]
    fp64 = _needs_fp64(graph.dtypes())
    base = "double" if dtype == numpy.float64 else "float"
    src = _preamble("opencl", fp64) + [f"typedef {base}{width} {vt};"]
    src += [f"inline {vt} npg_v{c}({vt} x) {{ return {c}(select(x, x - x, isinf(x))); }}" for c in guarded]
    src += [sig.header(name) + " {"] + ["  " + b for b in body] + ["}"]
    return KernelSource("\n".join(src) + "\n", name, "opencl", tuple(sig.args), fp64)


def _guarded_builtins(graph: Graph) -> list[str]:
    """The OpenCL builtins of ``graph`` whose float8 forms take no infinite lane (UfuncFacts.guard_float8)."""
    names = set()
    for node in walk(graph.outputs):
        facts = _table.facts(node.ufunc.__name__) if isinstance(node, Apply) else None
        if facts is not None and facts.guard_float8:
            names.add(facts.expressions["f"].split("(")[0])
    return sorted(names)


@dataclass(frozen=True)
class ReduceLayout:
    """Map-reduce launch shape: ``outer_ndim`` kept dims, ``inner_ndim`` reduced dims.

    Work-item g handles output m = g / parts and part p = g % parts of the reduced
    range; ``interleaved`` parts step by ``parts`` (coalesced on GPUs), otherwise each
    part is one contiguous chunk (cache-friendly on CPUs).  ``index_input``: for arg
    reductions, the candidate index is read from an extra int64 input (second stage)
    rather than the position.  ``unroll`` > 1 (chunked parts, one reduced dimension, not
    an arg reduction): each work-item keeps ``unroll`` independent accumulators over
    consecutive elements -- no dependent chain of additions, so CPUs (PoCL) run at memory
    speed; float sums fold them pairwise every ``unroll * 16`` elements into a compensated
    (Kahan) total, as accurate as NumPy's pairwise sum.
    """

    outer_ndim: int
    inner_ndim: int
    interleaved: bool = False
    index_input: bool = False
    index64: bool = True
    unroll: int = 1
    ordered: bool = False  # the reduced values in the flat order given, one plain fold (NumPy's, kernels/order.py)


def reduce_arguments(operands: list[tuple[Any, int]], scalars: list[Any], init: Any, geometry: list[Any],
                     it: Callable[[int], Any]) -> list[Any]:
    """The arguments map_reduce and pairwise_reduce kernels take, up to their outputs: each input's
    (buffer, byte offset) of ``operands``, the graph's ``scalars`` and the initial value ``init``
    (as the launcher passes them), then ``geometry`` (``reduce_geometry``); offsets made by ``it``
    (the kernel's index type)."""
    args: list[Any] = []
    for buffer, offset in operands:
        args += [buffer, it(offset)]
    args += scalars
    args.append(init)
    args += geometry
    return args


def reduce_geometry(counts: list[int], oshape: tuple[int, ...], ishape: tuple[int, ...], ostrides: list[Sequence[int]],
                    istrides: list[Sequence[int]], it: Callable[[int], Any]) -> list[Any]:
    """The integer arguments of a map_reduce or pairwise_reduce kernel after its initial value:
    ``counts`` (the kernel's own: m, k, parts for map_reduce), the outer and inner extents, each
    input's outer and inner byte strides, made by ``it`` (the kernel's index type). The same for
    every launch over arrays of the same layouts: a launcher may keep them."""
    args = [it(c) for c in counts] + [it(d) for d in oshape] + [it(d) for d in ishape]
    for outer, inner in zip(ostrides, istrides, strict=True):
        args += [it(s) for s in outer] + [it(s) for s in inner]
    return args


def map_reduce(
    graph: Graph,
    op: str,
    acc_dtype: numpy.dtype,
    layout: ReduceLayout,
    dialect: str = "opencl",
    name: str = "npg_map_reduce",
    reduce_check: int = 0,
) -> KernelSource:
    """A map-reduce kernel: evaluate ``graph`` (one output) and reduce it with ``op``.

    ``reduce_check``: the error categories (overflow, invalid) the reduction itself reports, in
    the flag slot after the graph's error nodes: an infinite partial result of finite values
    overflowed, a NaN one of non-NaN values is invalid (inf - inf, inf * 0). The graph's own
    error nodes report as in elementwise kernels; the flag parameters come last.

    Arguments: for each input, (char pointer, byte offset); scalars by value; then
    m (outputs), k (reduced length), parts; outer extents, inner extents; per input,
    outer byte strides then inner byte strides; then the partial-result array
    (acc_dtype, m*parts, contiguous) and its element offset; for arg reductions also
    an int64 index array of the same length and offset; with ``index_input`` the
    last input is that int64 index array of the previous stage (read like the others).
    The identity (initial value) is a scalar argument ``init`` of acc_dtype, right after
    the graph's scalars.
    """
    if len(graph.outputs) != 1:
        raise ValueError("map_reduce takes a graph of one output")
    acc_dtype = numpy.dtype(acc_dtype)
    idx = _idx(layout.index64, dialect)
    sig = _Sig(dialect, idx)
    nin = len(graph.inputs)
    for i, dt in enumerate(graph.inputs):
        sig.array(f"in{i}", f"in{i}_off", dt, typed=False, const=True)
    n_index_in = 1 if layout.index_input else 0
    if layout.index_input:
        sig.array("idxin", "idxin_off", numpy.dtype(numpy.int64), typed=False, const=True)
    scalar_names = [f"s{j}" for j in range(len(graph.scalars))]
    for sname, dt in zip(scalar_names, graph.scalars, strict=True):
        sig.scalar(sname, dt)
    sig.scalar("init", acc_dtype)
    for n in ("m", "k", "parts"):
        sig.index(n)
    no, ni = layout.outer_ndim, layout.inner_ndim
    for d in range(no):
        sig.index(f"odim{d}")
    for d in range(ni):
        sig.index(f"idim{d}")
    ops = [f"in{i}" for i in range(nin)] + (["idxin"] if n_index_in else [])
    for p in ops:
        for d in range(no):
            sig.index(f"{p}_ost{d}")
        for d in range(ni):
            sig.index(f"{p}_ist{d}")
    is_arg = op in ARG_REDUCTIONS
    sig.array("acc_out", "acc_off", acc_dtype, typed=True, const=False)
    if is_arg:
        sig.array("idx_out", "idx_off", numpy.dtype(numpy.int64), typed=True, const=False)
    _error_parameters(sig, graph, reduce_check)
    tracked = _Tracking(graph, reduce_check, dialect, acc_dtype.kind == "c")

    act = _table.ctype(acc_dtype)
    unroll = layout.unroll if (layout.unroll > 1 and not is_arg and not layout.interleaved and ni == 1) else 1
    if unroll & (unroll - 1):
        raise ValueError(f"unroll must be a power of two, not {unroll}")
    body = [f"{idx} g = {sig.gid()};", "if (g >= m * parts) return;", f"{idx} mi = g / parts;", f"{idx} p = g % parts;"]
    body += _output_bases(idx, no, ops)
    # Errors: each value's cheap tests fold into npg_nf (a sum's or product's own result stands for
    # its values': an inf or NaN among them makes it inf or NaN); where a part's npg_nf is set or
    # its result is not finite, the part runs again with every check (see Checks).
    errors = bool(graph.error_nodes or reduce_check)
    implied = op in ("add", "multiply") and acc_dtype.kind == "f"

    check_helpers: dict[str, str] = {}

    def fold(names: dict[Node, str]) -> list[str]:
        if not errors:
            return []
        checks = emit_checks(graph, names, dialect, error_flag(dialect), helpers=check_helpers)
        statement = checks.accumulate("npg_nf", tuple(names[o] for o in graph.outputs) if implied else ())
        return [statement] if statement else []

    def element_at(position: str) -> tuple[list[str], str, dict[Node, str], dict[str, str], str]:
        """Statements computing the reduced value at ``position`` of the part, its expression, the
        names of the graph's values, helpers, and the index input's address (arg reductions)."""
        stmts = [f"{idx} q = {position};"]
        for d in range(ni - 1, 0, -1):
            stmts.append(f"{idx} ic{d} = q % idim{d}; q /= idim{d};")
        if ni:
            stmts.append(f"{idx} ic0 = q;")
        addr: dict[str, str] = {}
        for i, p in enumerate(ops):
            terms = " + ".join([f"{p}_base"] + [f"ic{d} * {p}_ist{d}" for d in range(ni)])
            dt = graph.inputs[i] if i < nin else numpy.dtype(numpy.int64)
            addr[p] = f"(*{_ptr_cast(dialect, _table.ctype(dt), True)}(({p}) + ({terms})))"
        computed, results, needed = emit_body(graph, dialect, {i: addr[f"in{i}"] for i in range(nin)}, scalar_names,
                                              names := {})
        val = results[0]
        if graph.out_dtypes[0] != acc_dtype:
            val = _accumulated(val, graph.out_dtypes[0], acc_dtype, dialect)
        return stmts + computed, val, names, needed, addr["idxin"] if n_index_in else ""

    def again(step: str) -> list[str]:
        """The part once more, every check and the reduction's own tracking on (see above)."""
        if not errors:
            return []
        stmts, val, names, _, _ = element_at("kk")
        checks = emit_checks(graph, names, dialect, error_flag(dialect), helpers=check_helpers).inline()
        test = "npg_nf" + {"f": " || !isfinite(acc)", "c": " || !isfinite(acc.re) || !isfinite(acc.im)"}.get(
            acc_dtype.kind, "")
        return [f"if ({test}) {{", *("  " + t for t in tracked.start),
                f"  for ({idx} kk = kk0; kk < kk1; kk += {step}) {{",
                *("    " + t for t in stmts + checks + [f"{act} v = {val};"] + tracked.value("v")), "  }",
                *("  " + t for t in tracked.finish), "}"]

    if unroll > 1:
        stmts, results, helpers = _unrolled_reduce(graph, op, acc_dtype, ops, scalar_names, dialect, idx, unroll,
                                                   fold)
        body.extend(([fold_declaration("npg_nf", dialect)] if errors else []) + stmts + again("1"))
        body.append("acc_out[acc_off + g] = acc;")
        fp64 = _needs_fp64(graph.dtypes() | {acc_dtype})
        src = (_preamble(dialect, fp64, _has_complex(graph.dtypes() | {acc_dtype}))
               + list({**helpers, **check_helpers}.values()) + [sig.header(name) + " {"])
        src += ["  " + b for b in body] + ["}"]
        return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)
    kahan = op == "add" and acc_dtype.kind == "f" and not layout.ordered
    if layout.interleaved:
        body.append(f"{idx} kk0 = p, kk1 = k, step = parts;")
    else:
        body.append(f"{idx} chunk = (k + parts - 1) / parts;")
        body.append(f"{idx} kk0 = p * chunk, kk1 = kk0 + chunk < k ? kk0 + chunk : k, step = 1;")
    body.append(f"{act} acc = init;")
    if errors:
        body.append(fold_declaration("npg_nf", dialect))
    if kahan:
        # compensated summation: NumPy sums pairwise, a plain serial chunk would lose digits
        body.append(f"{act} comp = 0;")
    if is_arg:
        body.append("i64_t bi = -1;")
    if layout.ordered and not is_arg:
        # NumPy's fold, one value after another: the loads of ORDERED_UNROLL values first (no chain
        # of dependent loads: a GPU work-item folding a tall column waits on each otherwise), then
        # the additions in order
        u = ORDERED_UNROLL
        lanes, helpers = [], {}
        body.append(f"{idx} kk = kk0;")
        body.append(f"for (; kk + {u} <= kk1; kk += {u}) {{")
        body.append("  " + act + " " + ", ".join(f"w{j}" for j in range(u)) + ";")
        for j in range(u):
            stmts, val, names, needed, _ = element_at(f"kk + {j}")
            helpers.update(needed)
            body.extend("  " + x for x in ["{", *("  " + t for t in stmts + fold(names) + [f"w{j} = {val};"]), "}"])
            lanes.append(f"w{j}")
        for lane in lanes:
            combine, needed = _table.render(REDUCE_UFUNCS[op], (acc_dtype,) * 3, ["acc", lane], 0, dialect)
            helpers.update(needed)
            body.append(f"  acc = {combine};")
        body.append("}")
        body.append("for (; kk < kk1; kk++) {")
        stmts, val, names, needed, _ = element_at("kk")
        helpers.update(needed)
        combine, needed2 = _table.render(REDUCE_UFUNCS[op], (acc_dtype,) * 3, ["acc", "v"], 0, dialect)
        helpers.update(needed2)
        body.extend("  " + x for x in stmts + fold(names) + [f"{act} v = {val};", f"acc = {combine};"])
        body.append("}")
        body.extend(again("step"))
        body.append("acc_out[acc_off + g] = acc;")
        fp64 = _needs_fp64(graph.dtypes() | {acc_dtype})
        src = (_preamble(dialect, fp64, _has_complex(graph.dtypes() | {acc_dtype}))
               + list({**helpers, **check_helpers}.values()) + [sig.header(name) + " {"]
               + ["  " + b for b in body] + ["}"])
        return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)
    body.append(f"for ({idx} kk = kk0; kk < kk1; kk += step) {{")
    loop, val, names, helpers, index_address = element_at("kk")
    loop.extend(fold(names))
    loop.append(f"{act} v = {val};")
    if is_arg:
        loop.append("i64_t vi = " + (index_address if n_index_in else "(i64_t)kk") + ";")
        better = "v > acc" if op == "argmax" else "v < acc"
        if acc_dtype.kind == "f":
            # NumPy: the first NaN wins; otherwise the first extreme value.
            cond = (
                f"bi < 0 || (!isnan(acc) && (isnan(v) || {better})) || "
                "(vi < bi && (v == acc || (isnan(v) && isnan(acc))))"
            )
        else:
            cond = f"bi < 0 || {better} || (v == acc && vi < bi)"
        loop.append(f"if (vi >= 0 && ({cond})) {{ acc = v; bi = vi; }}")
    elif kahan:
        loop.append(f"{act} y = v - comp; {act} tt = acc + y; comp = isfinite(tt) ? (tt - acc) - y : 0; acc = tt;")
    else:
        combine, needed = _table.render(REDUCE_UFUNCS[op], (acc_dtype,) * 3, ["acc", "v"], 0, dialect)
        helpers.update(needed)
        loop.append(f"acc = {combine};")
    body.extend("  " + s for s in loop)
    body.append("}")
    body.extend(again("step"))
    body.append("acc_out[acc_off + g] = acc;")
    if is_arg:
        body.append("idx_out[idx_off + g] = bi;")
    fp64 = _needs_fp64(graph.dtypes() | {acc_dtype})
    src = (_preamble(dialect, fp64, _has_complex(graph.dtypes() | {acc_dtype}))
           + list({**helpers, **check_helpers}.values()) + [sig.header(name) + " {"] + ["  " + b for b in body] + ["}"])
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)


#: identity of each combining op for the extra accumulators of an unrolled reduction (None:
#: idempotent, the extra accumulators start from ``init`` too)


def _accumulated(val: str, dtype: numpy.dtype, acc_dtype: numpy.dtype, dialect: str) -> str:
    """A graph's reduced value ``val`` of ``dtype`` converted to the accumulator's dtype."""
    if "c" in (dtype.kind, acc_dtype.kind):
        return _table.cast(val, dtype, acc_dtype, dialect)
    act = _table.ctype(acc_dtype)
    return f"(({act}){val})" if acc_dtype.kind != "b" else f"(({act})({val} != 0))"


class _Tracking:
    """A reduction's own error detection (map_reduce's ``reduce_check``): whether a reduced value
    was not finite or NaN (``value``), then the flags set where the result is inf or NaN all the
    same (``finish``); no statements when off."""

    def __init__(self, graph: Graph, check: int, dialect: str, complex_values: bool = False) -> None:
        self.check = check
        self.complex = complex_values
        flag = error_flag(dialect)
        slot = len(graph.error_nodes)
        byte = "uchar" if dialect == "opencl" else "unsigned char"
        self.start = [f"{byte} npg_value_nf = 0, npg_value_nan = 0;"] if check else []
        tests = []
        if check & _table.OVER:
            tests.append((f"{self._any('isinf', 'acc')} && !npg_value_nf", 4 * slot + 1))
        if check & _table.INVALID:
            tests.append((f"{self._any('isnan', 'acc')} && !npg_value_nan", 4 * slot + 3))
        self.finish = [f"if ({test}) {set_flag(flag, i)}" for test, i in tests]

    def value(self, v: str) -> list[str]:
        if not self.check:
            return []
        nonfinite = f"(!isfinite({v}.re) || !isfinite({v}.im))" if self.complex else f"!isfinite({v})"
        return [f"if ({nonfinite}) {{ npg_value_nf = 1; if ({self._any('isnan', v)}) npg_value_nan = 1; }}"]

    def _any(self, test: str, v: str) -> str:
        """``test`` of ``v``, of either part of a complex ``v``."""
        return f"({test}({v}.re) || {test}({v}.im))" if self.complex else f"{test}({v})"


def _unrolled_reduce(
    graph: Graph, op: str, acc_dtype: numpy.dtype, ops: list[str], scalar_names: list[str], dialect: str, idx: str,
    unroll: int, fold: Callable[[dict[Node, str]], list[str]],
) -> tuple[list[str], list[str], dict[str, str]]:
    """Statements of a chunked, ``unroll``-way unrolled reduction of one dimension (see ReduceLayout)."""
    act = _table.ctype(acc_dtype)
    kahan = op == "add" and acc_dtype.kind == "f"
    combine_helpers: dict[str, str] = {}

    def combine(x: str, y: str) -> str:
        expr, needed = _table.render(REDUCE_UFUNCS[op], (acc_dtype,) * 3, [x, y], 0, dialect)
        combine_helpers.update(needed)
        return expr

    def element(position: str, target: str) -> tuple[list[str], dict[str, str]]:
        load = {}
        for i, dt in enumerate(graph.inputs):
            p = ops[i]
            load[i] = f"(*{_ptr_cast(dialect, _table.ctype(dt), True)}(({p}) + ({p}_base + ({position}) * {p}_ist0)))"
        stmts, results, helpers = emit_body(graph, dialect, load, scalar_names, names := {})
        stmts += fold(names)  # (errors: map_reduce)
        val = results[0]
        if graph.out_dtypes[0] != acc_dtype:
            val = _accumulated(val, graph.out_dtypes[0], acc_dtype, dialect)
        return ["{", *("  " + s for s in stmts), f"  {target} = {combine(target, val)};", "}"], helpers

    lanes = [f"a{u}" for u in range(unroll)]
    ident = _table.identity_literal(op, acc_dtype)
    out: list[str] = [
        f"{idx} chunk = (k + parts - 1) / parts;",
        f"chunk = (chunk + {unroll - 1}) / {unroll} * {unroll};",
        f"{idx} kk0 = p * chunk, kk1 = kk0 + chunk < k ? kk0 + chunk : k;",
        f"{idx} kk = kk0;",
        f"{act} acc = init;",
    ]
    helpers: dict[str, str] = {}
    step: list[str] = []
    for u, lane in enumerate(lanes):
        stmts, needed = element(f"kk + {u}", lane)
        helpers.update(needed)
        step.extend(stmts)
    tail, needed = element("kk", "acc")
    helpers.update(needed)
    if kahan:
        # blocks of unroll*16 elements: independent lanes summed pairwise, blocks added with compensation
        pairs = list(lanes)
        while len(pairs) > 1:
            pairs = [f"({pairs[i]} + {pairs[i + 1]})" for i in range(0, len(pairs), 2)]
        out += [
            f"{act} comp = 0;",
            f"while (kk + {unroll} <= kk1) {{",
            "  " + " ".join(f"{act} {lane} = {ident};" for lane in lanes),
            f"  {idx} stop = kk1 - {unroll - 1} < kk + {unroll * 16} ? kk1 - {unroll - 1} : kk + {unroll * 16};",
            f"  for (; kk < stop; kk += {unroll}) {{",
            *("    " + s for s in step),
            "  }",
            f"  {act} y = {pairs[0]} - comp; {act} tt = acc + y; comp = isfinite(tt) ? (tt - acc) - y : 0; acc = tt;",
            "}",
            f"for (; kk < kk1; kk++) {{ {act} b0 = {ident};",
        ]
        tail_b, _ = element("kk", "b0")
        out += ["  " + s for s in tail_b]
        out += [f"  {act} y = b0 - comp; {act} tt = acc + y; comp = isfinite(tt) ? (tt - acc) - y : 0; acc = tt;", "}"]
    else:
        start = "init" if ident is None else ident
        out += [f"{act} {lane} = {start};" for lane in lanes]
        out += [f"for (; kk + {unroll} <= kk1; kk += {unroll}) {{", *("  " + s for s in step), "}"]
        out += ["for (; kk < kk1; kk++) {", *("  " + s for s in tail), "}"]
        names = list(lanes)
        while len(names) > 1:
            out += [f"{names[i]} = {combine(names[i], names[i + 1])};" for i in range(0, len(names), 2)]
            names = names[::2]
        out.append(f"acc = {combine('acc', names[0])};")
    helpers.update(combine_helpers)
    return out, [], helpers


def _adder(acc_dtype: numpy.dtype, dialect: str, helpers: dict[str, str]) -> Callable[[str, str], str]:
    """``x + y`` in the accumulator's dtype, as the ufunc table writes it (complex: its helper)."""

    def add(x: str, y: str) -> str:
        expr, needed = _table.render(numpy.add, (acc_dtype,) * 3, [x, y], 0, dialect)
        helpers.update(needed)
        return expr

    return add


def _output_bases(idx: str, outer_ndim: int, ops: list[str]) -> list[str]:
    """A reduction kernel's output coordinates of ``mi`` and each operand's byte offset there."""
    lines = [f"{idx} r = mi;"]
    for d in range(outer_ndim - 1, -1, -1):
        lines.append(f"{idx} oc{d} = r % odim{d}; r /= odim{d};")
    for p in ops:
        terms = " + ".join([f"{p}_off"] + [f"oc{d} * {p}_ost{d}" for d in range(outer_ndim)])
        lines.append(f"{idx} {p}_base = {terms};")
    return lines


def _split_text(acc_dtype: numpy.dtype, n: str) -> str:
    """order.pairwise_split as C text: where NumPy's pairwise sum splits a block of ``n`` values."""
    return f"({n} - {n} % 8) / 2" if acc_dtype.kind == "c" else f"{n} / 2 - ({n} / 2) % 8"


def _pairwise_block(acc_dtype: numpy.dtype, idx: str, element: Callable[[str, str], list[str]],
                    add: Callable[[str, str], str], ident: str, start: str, count: str, result: str) -> list[str]:
    """Statements setting ``result`` to NumPy's pairwise sum of the ``count`` values from flat
    position ``start`` (kernels/order.py), its recursion run from an explicit stack.
    ``element(position, target)``: statements adding the value at ``position`` into ``target``
    (``"=name"``: setting ``name`` to it)."""
    act = _table.ctype(acc_dtype)
    lanes, block, small = _order.pairwise_shape(acc_dtype)
    depth = 132 if idx in ("long", "long long") else 68  # (each level of the recursion: two more entries)
    pairs = [f"l{j}" for j in range(lanes)]
    while len(pairs) > 1:
        pairs = [add(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    return [
        "{",
        f"  {idx} st_s[{depth}], st_n[{depth}]; {act} vs[{depth // 2}]; int sp = 1, vp = 0;",
        f"  st_s[0] = {start}; st_n[0] = {count};",
        "  while (sp > 0) {",
        f"    sp--; {idx} s = st_s[sp], nn = st_n[sp];",
        f"    if (nn < 0) {{ vp--; vs[vp - 1] = {add('vs[vp - 1]', 'vs[vp]')}; continue; }}",
        f"    if (nn <= {block}) {{",
        f"      {act} r = {ident};",
        f"      if (nn < {small}) {{",
        f"        for ({idx} i = 0; i < nn; i++) {{",
        *("          " + x for x in element("s + i", "r")),
        "        }",
        "      } else {",
        f"        {act} " + ", ".join(f"l{j}" for j in range(lanes)) + ";",
        *("        " + x for j in range(lanes) for x in element(f"s + {j}", f"=l{j}")),
        f"        {idx} i = {lanes};",
        f"        for (; i < nn - nn % {lanes}; i += {lanes}) {{",
        *("          " + x for j in range(lanes) for x in element(f"s + i + {j}", f"l{j}")),
        "        }",
        f"        r = {pairs[0]};",
        "        for (; i < nn; i++) {",
        *("          " + x for x in element("s + i", "r")),
        "        }",
        "      }",
        "      vs[vp++] = r; continue;",
        "    }",
        f"    {idx} n2 = {_split_text(acc_dtype, 'nn')};",
        "    st_s[sp] = 0; st_n[sp] = -1; sp++;",
        "    st_s[sp] = s + n2; st_n[sp] = nn - n2; sp++;",
        "    st_s[sp] = s; st_n[sp] = n2; sp++;",
        "  }",
        f"  {result} = vs[0];",
        "}",
    ]


def pairwise_reduce(
    graph: Graph,
    acc_dtype: numpy.dtype,
    outer_ndim: int,
    inner_ndim: int,
    split: bool,
    index64: bool = True,
    dialect: str = "opencl",
    name: str = "npg_pairwise",
    reduce_check: int = 0,
) -> KernelSource:
    """NumPy's float sum of ``graph`` (one output) in NumPy's order of additions (kernels/order.py).

    Each output's ``k`` reduced values, a flat index over the inner extents (outermost first), are
    cut into chunks of ``chunk``, each summed pairwise; ``split`` off: work-item g is output g and
    folds its chunks from ``init``; ``split`` on: work-item g is subtree ``g % subtrees`` (depth
    ``depth`` of the pairwise recursion, path bits outermost first) of chunk ``g / subtrees % nch``
    of output ``g / subtrees / nch`` and writes its sum, its length (0: no such subtree, its
    ancestor was a block) and, with ``reduce_check``, whether its values were inf (bit 0) or NaN
    (bit 1), for pairwise_combine and pairwise_fold.

    Arguments: for each input, (char pointer, byte offset); scalars; init; m, k, chunk, nch,
    subtrees, depth; outer extents, inner extents; per input, outer then inner byte strides; the
    sums (acc_dtype, offset in elements); split: the lengths (int64) and with reduce_check the
    flags (uint8); then the error flags where the kernel reports any.
    """
    if len(graph.outputs) != 1:
        raise ValueError("pairwise_reduce takes a graph of one output")
    acc_dtype = numpy.dtype(acc_dtype)
    idx = _idx(index64, dialect)
    sig = _Sig(dialect, idx)
    nin = len(graph.inputs)
    for i, dt in enumerate(graph.inputs):
        sig.array(f"in{i}", f"in{i}_off", dt, typed=False, const=True)
    scalar_names = [f"s{j}" for j in range(len(graph.scalars))]
    for sname, dt in zip(scalar_names, graph.scalars, strict=True):
        sig.scalar(sname, dt)
    sig.scalar("init", acc_dtype)
    for n in ("m", "k", "chunk", "nch", "subtrees", "depth"):
        sig.index(n)
    no, ni = outer_ndim, inner_ndim
    for d in range(no):
        sig.index(f"odim{d}")
    for d in range(ni):
        sig.index(f"idim{d}")
    ops = [f"in{i}" for i in range(nin)]
    for p in ops:
        for d in range(no):
            sig.index(f"{p}_ost{d}")
        for d in range(ni):
            sig.index(f"{p}_ist{d}")
    sig.array("acc_out", "acc_off", acc_dtype, typed=True, const=False)
    if split:
        sig.array("len_out", "len_off", numpy.dtype(numpy.int64), typed=True, const=False)
        if reduce_check:
            sig.array("nf_out", "nf_off", numpy.dtype(numpy.uint8), typed=True, const=False)
    _error_parameters(sig, graph, 0 if split else reduce_check)
    tracked = _Tracking(graph, 0 if split else reduce_check, dialect, acc_dtype.kind == "c")
    values = _Tracking(graph, reduce_check, dialect, acc_dtype.kind == "c")  # (the values' own flags)
    act = _table.ctype(acc_dtype)
    helpers: dict[str, str] = {}
    add = _adder(acc_dtype, dialect, helpers)
    ident = _table.identity_literal("add", acc_dtype)
    assert ident is not None

    def element(position: str, target: str) -> list[str]:
        stmts = [f"{idx} q = {position};"]
        for d in range(ni - 1, 0, -1):
            stmts.append(f"{idx} ic{d} = q % idim{d}; q /= idim{d};")
        if ni:
            stmts.append(f"{idx} ic0 = q;")
        load = {}
        for i, p in enumerate(ops):
            terms = " + ".join([f"{p}_base"] + [f"ic{d} * {p}_ist{d}" for d in range(ni)])
            load[i] = f"(*{_ptr_cast(dialect, _table.ctype(graph.inputs[i]), True)}(({p}) + ({terms})))"
        computed, results, needed = emit_body(graph, dialect, load, scalar_names, names := {})
        helpers.update(needed)
        checks = emit_checks(graph, names, dialect, error_flag(dialect), helpers=helpers).inline()
        val = results[0]
        if graph.out_dtypes[0] != acc_dtype:
            val = _accumulated(val, graph.out_dtypes[0], acc_dtype, dialect)
        if target.startswith("?"):  # (the values' own flags only)
            set_value = values.value("v")
        elif target.startswith("="):
            set_value = [f"{target[1:]} = v;"]
        else:
            set_value = [f"{target} = {add(target, 'v')};"]
        return ["{", *("  " + t for t in stmts + computed + checks + [f"{act} v = {val};"] + set_value), "}"]

    def flag_values(total: str) -> list[str]:
        """Where a sum came out inf or NaN: whether its values were (the reduction's own check)."""
        if not reduce_check:
            return []
        test = f"!isfinite({total}.re) || !isfinite({total}.im)" if acc_dtype.kind == "c" else f"!isfinite({total})"
        return [f"if ({test}) {{", f"  for ({idx} i = 0; i < pw_n; i++) {{",
                *("    " + x for x in element("pw_s + i", "?")), "  }", "}"]

    body = [f"{idx} g = {sig.gid()};"]
    if split:
        body += ["if (g >= m * nch * subtrees) return;", f"{idx} sub = g % subtrees, t = g / subtrees;",
                 f"{idx} ch = t % nch, mi = t / nch;"]
    else:
        body += ["if (g >= m) return;", f"{idx} mi = g;"]
    body += _output_bases(idx, no, ops)
    body += values.start
    _, block, _ = _order.pairwise_shape(acc_dtype)
    if split:
        body += [
            f"{idx} pw_s = ch * chunk, pw_n = k - pw_s < chunk ? k - pw_s : chunk;",
            "int present = 1;",
            f"for ({idx} lvl = depth - 1; lvl >= 0; lvl--) {{",
            f"  if (pw_n <= {block}) {{ if ((sub & ((({idx})2 << lvl) - 1)) != 0) present = 0; break; }}",
            f"  {idx} n2 = {_split_text(acc_dtype, 'pw_n')};",
            "  if ((sub >> lvl) & 1) { pw_s += n2; pw_n -= n2; } else { pw_n = n2; }",
            "}",
            f"{act} pw = {ident};",
            "if (present) {",
            *("  " + x for x in _pairwise_block(acc_dtype, idx, element, add, ident, "pw_s", "pw_n", "pw")),
            *("  " + x for x in flag_values("pw")),
            "}",
            "acc_out[acc_off + g] = pw;",
            "len_out[len_off + g] = present ? pw_n : 0;",
        ]
        if reduce_check:
            body.append("nf_out[nf_off + g] = (uchar)(npg_value_nf | (npg_value_nan << 1));")
    else:
        body += [
            f"{act} acc = init;",
            f"for ({idx} ch = 0; ch < nch; ch++) {{",
            f"  {idx} pw_s = ch * chunk, pw_n = k - pw_s < chunk ? k - pw_s : chunk;",
            f"  {act} pw;",
            *("  " + x for x in _pairwise_block(acc_dtype, idx, element, add, ident, "pw_s", "pw_n", "pw")),
            *("  " + x for x in flag_values("pw")),
            f"  acc = {add('acc', 'pw')};",
            "}",
        ]
        if reduce_check:  # (the values' flags are the tracked ones)
            body += [*tracked.finish]
        body.append("acc_out[acc_off + g] = acc;")
    fp64 = _needs_fp64(graph.dtypes() | {acc_dtype})
    src = (_preamble(dialect, fp64, _has_complex(graph.dtypes() | {acc_dtype})) + list(helpers.values())
           + [sig.header(name) + " {"] + ["  " + b for b in body] + ["}"])
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)


class _NoGraph:
    """The error slots of a kernel that reads no graph: the reduction's own, slot 0."""

    error_nodes: tuple[()] = ()


def pairwise_combine(acc_dtype: numpy.dtype, group: int, flags: bool, dialect: str = "opencl",
                     name: str = "npg_pairwise_combine") -> KernelSource:
    """One step up the pairwise recursion: work-item g combines subtrees ``g * group`` ..
    ``g * group + group - 1`` of pairwise_reduce's output (a subtree of length 0 is absent: its
    left sibling's sum stands for their parent) into slot g.

    Arguments: sums, lengths (int64)[, flags (uint8)] in, each (pointer, element offset); the same
    out; the number of groups.
    """
    acc_dtype = numpy.dtype(acc_dtype)
    sig = _Sig(dialect, _idx(True, dialect))
    io = [("val", acc_dtype), ("len", numpy.dtype(numpy.int64))] + ([("nf", numpy.dtype(numpy.uint8))] if flags else [])
    for direction, const in (("in", True), ("out", False)):
        for n, dt in io:
            sig.array(f"{n}_{direction}", f"{n}_{direction}_off", dt, typed=True, const=const)
    sig.index("groups")
    act = _table.ctype(acc_dtype)
    helpers: dict[str, str] = {}
    add = _adder(acc_dtype, dialect, helpers)
    body = [
        f"long g = {sig.gid()};",
        "if (g >= groups) return;",
        f"{act} v[{group}]; long l[{group}];" + (" uchar f = 0;" if flags else ""),
        f"for (int j = 0; j < {group}; j++) {{",
        f"  v[j] = val_in[val_in_off + g * {group} + j]; l[j] = len_in[len_in_off + g * {group} + j];",
        *([f"  f |= nf_in[nf_in_off + g * {group} + j];"] if flags else []),
        "}",
        f"for (int w = {group}; w > 1; w >>= 1) {{",
        "  for (int i = 0; i < w / 2; i++) {",
        f"    v[i] = l[2 * i + 1] ? {add('v[2 * i]', 'v[2 * i + 1]')} : v[2 * i];",
        "    l[i] = l[2 * i] + l[2 * i + 1];",
        "  }",
        "}",
        "val_out[val_out_off + g] = v[0]; len_out[len_out_off + g] = l[0];",
        *(["nf_out[nf_out_off + g] = f;"] if flags else []),
    ]
    if dialect != "opencl":
        body = [b.replace("long ", "long long ").replace("uchar", "unsigned char") for b in body]
    fp64 = _needs_fp64({acc_dtype})
    src = (_preamble(dialect, fp64, _has_complex({acc_dtype})) + list(helpers.values()) + [sig.header(name) + " {"]
           + ["  " + b for b in body] + ["}"])
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)


def pairwise_fold(acc_dtype: numpy.dtype, reduce_check: int, dialect: str = "opencl",
                  name: str = "npg_pairwise_fold") -> KernelSource:
    """Each output's chunk sums folded in order from ``init`` (NumPy's ``out += pairwise(chunk)``);
    with ``reduce_check``, the reduction's overflow and invalid flags (_Tracking) in slot 0.

    Arguments: sums (pointer, element offset)[, value flags (uint8)]; init; m, nch; the result
    (pointer, element offset); the error flags with reduce_check.
    """
    acc_dtype = numpy.dtype(acc_dtype)
    sig = _Sig(dialect, _idx(True, dialect))
    sig.array("val_in", "val_in_off", acc_dtype, typed=True, const=True)
    if reduce_check:
        sig.array("nf_in", "nf_in_off", numpy.dtype(numpy.uint8), typed=True, const=True)
    sig.scalar("init", acc_dtype)
    sig.index("m")
    sig.index("nch")
    sig.array("acc_out", "acc_off", acc_dtype, typed=True, const=False)
    _error_parameters(sig, _NoGraph(), reduce_check)  # type: ignore[arg-type]
    tracked = _Tracking(_NoGraph(), reduce_check, dialect, acc_dtype.kind == "c")  # type: ignore[arg-type]
    act = _table.ctype(acc_dtype)
    idx = sig.idx
    helpers: dict[str, str] = {}
    add = _adder(acc_dtype, dialect, helpers)
    body = [f"{idx} g = {sig.gid()};", "if (g >= m) return;", f"{act} acc = init;", *tracked.start,
            f"for ({idx} ch = 0; ch < nch; ch++) {{", f"  acc = {add('acc', 'val_in[val_in_off + g * nch + ch]')};"]
    if reduce_check:
        body += ["  npg_value_nf |= nf_in[nf_in_off + g * nch + ch] & 1;",
                 "  npg_value_nan |= nf_in[nf_in_off + g * nch + ch] >> 1;"]
    body += ["}", *tracked.finish, "acc_out[acc_off + g] = acc;"]
    fp64 = _needs_fp64({acc_dtype})
    src = (_preamble(dialect, fp64, _has_complex({acc_dtype})) + list(helpers.values()) + [sig.header(name) + " {"]
           + ["  " + b for b in body] + ["}"])
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)


def scan(
    outer_ndim: int,
    in_dtype: numpy.dtype,
    acc_dtype: numpy.dtype,
    op: str,
    dialect: str = "opencl",
    name: str = "npg_scan",
) -> KernelSource:
    """Inclusive scan (cumsum/cumprod) along one axis: one work-item per line.

    Arguments: in (char pointer, byte offset), out (char pointer, byte offset), m (lines),
    n (line length), outer extents, outer byte strides of in then out, in and out byte
    strides along the scanned axis.
    """
    in_dtype, acc_dtype = numpy.dtype(in_dtype), numpy.dtype(acc_dtype)
    sig = _Sig(dialect, _idx(True, dialect))
    sig.array("src", "src_off", in_dtype, typed=False, const=True)
    sig.array("dst", "dst_off", acc_dtype, typed=False, const=False)
    sig.index("m")
    sig.index("n")
    for d in range(outer_ndim):
        sig.index(f"odim{d}")
    for p in ("src", "dst"):
        for d in range(outer_ndim):
            sig.index(f"{p}_ost{d}")
    sig.index("src_st")
    sig.index("dst_st")
    idx = sig.idx
    act = _table.ctype(acc_dtype)
    ict = _table.ctype(in_dtype)
    body = [f"{idx} g = {sig.gid()};", "if (g >= m) return;", f"{idx} r = g;"]
    for d in range(outer_ndim - 1, -1, -1):
        body.append(f"{idx} oc{d} = r % odim{d}; r /= odim{d};")
    for p in ("src", "dst"):
        terms = " + ".join([f"{p}_off"] + [f"oc{d} * {p}_ost{d}" for d in range(outer_ndim)])
        body.append(f"{idx} {p}_a = {terms};")
    combine, helpers = _table.render(REDUCE_UFUNCS[op], (acc_dtype,) * 3, ["acc", "v"], 0, dialect)
    conv = _table.cast("x", in_dtype, acc_dtype, dialect)  # (NumPy's conversion: -2.5 into uint64 is 2**64 - 2)
    body += [
        f"{act} acc = {'0' if op == 'add' else '1'};",
        f"for ({idx} i = 0; i < n; i++) {{",
        f"  {ict} x = *{_ptr_cast(dialect, ict, True)}(src + src_a + i * src_st);",
        f"  {act} v = {conv};",
        f"  acc = {combine};",
        f"  *{_ptr_cast(dialect, act, False)}(dst + dst_a + i * dst_st) = acc;",
        "}",
    ]
    fp64 = _needs_fp64({in_dtype, acc_dtype})
    src = _preamble(dialect, fp64) + list(helpers.values()) + [sig.header(name) + " {"]
    src += ["  " + b for b in body] + ["}"]
    return KernelSource("\n".join(src) + "\n", name, dialect, tuple(sig.args), fp64)
