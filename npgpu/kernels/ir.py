"""A small backend-neutral expression IR for elementwise kernels.

One eager ufunc call is a graph of one node; fusion records longer graphs into the same IR.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy

from . import ufuncs as _table


class _Node:
    """An interior node: immutable by convention, hashed once when made.

    Graphs nest, and dataclass hashing recomputed every subtree (building a 13-operation graph
    was quadratic); a frozen dataclass's __init__ also cost more than the rest of recording.
    """

    __slots__ = ("_hash",)
    _KEY: tuple[str, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._KEY)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return type(other) is type(self) and hash(other) == self._hash and other._key() == self._key()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        fields_ = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._KEY)
        return f"{type(self).__name__}({fields_})"


class _Leaf(_Node):
    __slots__ = ("index", "dtype")
    _KEY = __slots__

    def __init__(self, index: int, dtype: numpy.dtype) -> None:
        self.index = index
        self.dtype = dtype
        self._hash = hash((type(self), index, dtype))


class Input(_Leaf):
    """Array operand ``index`` of the kernel, read with its own dtype."""

    __slots__ = ()


class Scalar(_Leaf):
    """Scalar kernel argument ``index`` (a value passed at launch, never source text)."""

    __slots__ = ()


class Cast(_Node):
    """Convert ``operand`` to ``dtype`` with C conversion (NumPy's ``astype`` for supported pairs).

    ``check``: the floating-point error categories (``ufuncs.DIVIDE``... bits) the kernel reports
    for this node, as NumPy's errstate in force at the call asked (0: none)."""

    __slots__ = ("operand", "dtype", "check")
    _KEY = __slots__

    def __init__(self, operand: Node, dtype: numpy.dtype, check: int = 0) -> None:
        self.operand = operand
        self.dtype = dtype
        self.check = check
        self._hash = hash((Cast, operand, dtype, check))


class Apply(_Node):
    """Output ``out_index`` of ``ufunc`` run with resolved ``loop`` dtypes (inputs then outputs).

    ``check``: the floating-point error categories the kernel reports for this call (see Cast);
    a two-output ufunc reports them on output 0."""

    __slots__ = ("ufunc", "loop", "operands", "out_index", "check")
    _KEY = __slots__

    def __init__(self, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], operands: tuple[Node, ...],
                 out_index: int = 0, check: int = 0) -> None:
        self.ufunc = ufunc
        self.loop = loop
        self.operands = operands
        self.out_index = out_index
        self.check = check
        self._hash = hash((Apply, ufunc, loop, operands, out_index, check))

    @property
    def dtype(self) -> numpy.dtype:
        return self.loop[self.ufunc.nin + self.out_index]


class Select(_Node):
    """``where(cond, a, b)``; ``a`` and ``b`` already have the result dtype."""

    __slots__ = ("cond", "a", "b")
    _KEY = __slots__

    def __init__(self, cond: Node, a: Node, b: Node) -> None:
        self.cond = cond
        self.a = a
        self.b = b
        self._hash = hash((Select, cond, a, b))

    @property
    def dtype(self) -> numpy.dtype:
        return self.a.dtype


Node = Input | Scalar | Cast | Apply | Select


@dataclass(frozen=True)
class Graph:
    """A kernel body: array inputs, scalar arguments, and the nodes written to each output.

    Frozen and hashable: the graph itself is the structural part of a kernel cache key.
    Output ``k`` is stored with ``out_dtypes[k]`` (a Cast is added by the builder).
    """

    inputs: tuple[numpy.dtype, ...]
    scalars: tuple[numpy.dtype, ...]
    outputs: tuple[Node, ...]
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    #: the nodes that report floating-point errors, in kernel order: node k sets the flag bytes
    #: 4k..4k+3 (npgpu/_fperr.py); filled in __post_init__
    error_nodes: tuple[Apply | Cast, ...] = field(default=(), init=False, repr=False, compare=False)
    #: per error node, the recorded call it reports for (a position in fusion's list of calls)
    error_sources: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.inputs, self.scalars, self.outputs)))
        errors = tuple(node for node in walk(self.outputs) if getattr(node, "check", 0))
        if errors:
            object.__setattr__(self, "error_nodes", errors)
            if len(self.error_sources) != len(errors):
                object.__setattr__(self, "error_sources", (0,) * len(errors))

    def __hash__(self) -> int:
        return self._hash

    @property
    def out_dtypes(self) -> tuple[numpy.dtype, ...]:
        return tuple(node.dtype for node in self.outputs)

    def dtypes(self) -> set[numpy.dtype]:
        """Every dtype appearing anywhere (decides the fp64 pragma, device support)."""
        seen: set[numpy.dtype] = set(self.inputs) | set(self.scalars)
        for node in walk(self.outputs):
            seen.add(node.dtype)
            if isinstance(node, Apply):
                seen.update(node.loop)
        return seen


def walk(roots: tuple[Node, ...]) -> list[Node]:
    """Nodes reachable from ``roots``, operands before users, each once."""
    order: list[Node] = []
    seen: set[Node] = set()

    def visit(node: Node) -> None:
        if node in seen:
            return
        seen.add(node)
        if isinstance(node, Cast):
            visit(node.operand)
        elif isinstance(node, Apply):
            for op in node.operands:
                visit(op)
        elif isinstance(node, Select):
            visit(node.cond)
            visit(node.a)
            visit(node.b)
        order.append(node)

    for root in roots:
        visit(root)
    return order


@dataclass
class GraphBuilder:
    """Builds a Graph: ``b = GraphBuilder(); x = b.input(dt); y = b.apply(numpy.sin, loop, x); b.build([y])``."""

    inputs: list[numpy.dtype] = field(default_factory=list)
    scalars: list[numpy.dtype] = field(default_factory=list)

    def input(self, dtype: numpy.dtype) -> Input:
        self.inputs.append(numpy.dtype(dtype))
        return Input(len(self.inputs) - 1, numpy.dtype(dtype))

    def scalar(self, dtype: numpy.dtype) -> Scalar:
        self.scalars.append(numpy.dtype(dtype))
        return Scalar(len(self.scalars) - 1, numpy.dtype(dtype))

    @staticmethod
    def cast(node: Node, dtype: numpy.dtype) -> Node:
        dtype = numpy.dtype(dtype)
        return node if node.dtype == dtype else Cast(node, dtype)

    def apply(self, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], *operands: Node,
              check: int = 0) -> tuple[Node, ...]:
        """All outputs of ``ufunc`` over ``operands`` (cast to the loop's input dtypes); ``check``:
        the error categories to report (on output 0)."""
        loop = tuple(numpy.dtype(dt) for dt in loop)
        if len(operands) != ufunc.nin or len(loop) != ufunc.nin + ufunc.nout:
            raise ValueError(f"{ufunc.__name__} takes {ufunc.nin} operands and {ufunc.nin + ufunc.nout} loop dtypes")
        if not _table.supports_loop(ufunc, loop, complex_values=True):
            raise KeyError(f"no template for {ufunc.__name__} with loop {loop}")
        ops = tuple(self.cast(op, dt) for op, dt in zip(operands, loop[: ufunc.nin], strict=True))
        return tuple(Apply(ufunc, loop, ops, k, check if k == 0 else 0) for k in range(ufunc.nout))

    def apply_recorded(self, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], operands: list[Node],
                       check: int = 0) -> Node:
        """Output 0 of ``ufunc``: for a call already checked when it was recorded (``loop`` holds
        dtypes the table supports), so materializing a graph repeats no validation."""
        ops = tuple(op if op.dtype == dt else Cast(op, dt) for op, dt in zip(operands, loop))
        return Apply(ufunc, loop, ops, 0, check)

    def select(self, cond: Node, a: Node, b: Node, dtype: numpy.dtype) -> Select:
        return Select(self.cast(cond, numpy.dtype(bool)), self.cast(a, dtype), self.cast(b, dtype))

    def build(self, outputs: list[Node], out_dtypes: list[numpy.dtype] | None = None, store_check: int = 0,
              error_sources: tuple[int, ...] = ()) -> Graph:
        """The graph; ``store_check``: error categories to report where an output's cast to its
        ``out_dtypes`` entry can raise them (a narrowing float cast overflows)."""
        if out_dtypes is not None:
            outputs = [self.cast(node, dt) for node, dt in zip(outputs, out_dtypes, strict=True)]
            if store_check:
                outputs = [Cast(node.operand, node.dtype, check) if isinstance(node, Cast) and (
                    check := store_check & _table.cast_error_categories(node.operand.dtype, node.dtype)) else node
                    for node in outputs]
        return Graph(tuple(self.inputs), tuple(self.scalars), tuple(outputs), error_sources=error_sources)


def ufunc_graph(
    ufunc: numpy.ufunc,
    loop: tuple[numpy.dtype, ...],
    operand_kinds: tuple[str, ...],
    operand_dtypes: tuple[numpy.dtype, ...],
    out_dtypes: tuple[numpy.dtype, ...],
    check: int = 0,
) -> Graph:
    """The one-node graph of an eager ufunc call.

    ``operand_kinds[i]`` is "array" or "scalar"; scalars are kernel arguments of
    ``operand_dtypes[i]``; output k is stored as ``out_dtypes[k]`` (cast if needed); ``check``:
    the floating-point error categories to report (its loop's, and its array operands' and
    output casts': NumPy's loop converts them as its casts do, ``dtype=int`` of NaN warns).
    """
    b = GraphBuilder()
    ops: list[Node] = []
    for kind, dt, want in zip(operand_kinds, operand_dtypes, loop, strict=False):
        op: Node = b.input(dt) if kind == "array" else b.scalar(dt)
        if kind == "array" and dt != want and (cast_check := check & _table.cast_error_categories(dt, want)):
            op = Cast(op, want, cast_check)
        ops.append(op)
    outs = b.apply(ufunc, loop, *ops, check=check & _table.error_categories(ufunc, loop))
    return b.build(list(outs), list(out_dtypes), store_check=check)


#: graph -> the one object of graphs equal to it that kernel caches key by (``canonical``)
_CANONICAL: dict[Graph, Graph] = {}
_CANONICAL_MAX = 2048


def canonical(graph: Graph) -> Graph:
    """The object kernel caches key by for every graph equal to ``graph``. Equal graphs are made
    apart (an eager call's, a fused statement's, calibration's add), and a dict lookup with one
    that is not the stored key's object compares the two trees node by node: 9.5 us for a
    two-operation graph (0.36 us through this). Found once per graph object (kept on it; graphs are
    frozen), then one dictionary read. Only for keys: a graph's error sources stay its own."""
    found = graph.__dict__.get("_canonical")
    if found is None:
        found = _CANONICAL.setdefault(graph, graph)
        if len(_CANONICAL) > _CANONICAL_MAX:
            _CANONICAL.pop(next(iter(_CANONICAL.copy())), None)  # (the oldest; threads may pop too)
        graph.__dict__["_canonical"] = True if found is graph else found  # (no cycle through itself)
    return graph if found is True else found


@functools.cache
def cast_graph(src: numpy.dtype, dst: numpy.dtype, check: int = 0) -> Graph:
    """Copy-with-conversion: one input, one output (one graph per pair of dtypes and ``check``,
    the error categories of the cast to report: graphs are frozen)."""
    b = GraphBuilder()
    return b.build([b.input(src)], [dst], store_check=check)


def where_plan(condition: Any, x: Any, y: Any, is_array: Callable[[Any], bool]
               ) -> tuple[tuple[str, ...], tuple[numpy.dtype, ...], numpy.dtype]:
    """``where(condition, x, y)``'s operand kinds ("array" or "scalar"), their dtypes as a select
    graph reads them (a scalar condition as bool, scalar values in the result's dtype) and the
    result's dtype (NumPy's result_type of x and y, Python scalars weak), for ``where_graph``."""
    dt = numpy.result_type(*(o.dtype if is_array(o) else o for o in (x, y)))
    kinds = tuple("array" if is_array(o) else "scalar" for o in (condition, x, y))
    dts = tuple(o.dtype if is_array(o) else numpy.dtype(bool) if i == 0 else dt
                for i, o in enumerate((condition, x, y)))
    return kinds, dts, dt


def where_graph(kinds: tuple[str, ...], dtypes: tuple[numpy.dtype, ...], dt: numpy.dtype) -> Graph:
    """NumPy's where as one select node over operands of these kinds and dtypes (``where_plan``)."""
    b = GraphBuilder()
    nodes = [b.input(d) if k == "array" else b.scalar(d) for k, d in zip(kinds, dtypes, strict=True)]
    return b.build([b.select(nodes[0], nodes[1], nodes[2], dt)])


def evaluate(graph: Graph, inputs: list[Any], scalars: list[Any],
             watch: Callable[[int, int], AbstractContextManager[Any]] | None = None) -> list[Any]:
    """Values of ``graph``'s outputs computed with NumPy, node by node, on the exact loops (the
    emulated backend's kernels, and the host's answer where a device can't run a graph).

    ``watch(slot, check)``: a context within which the error node of that slot (its index in
    ``graph.error_nodes``) is computed, for the error categories ``check`` it reports; the
    emulated backend records NumPy's floating-point flags there as a kernel sets its flags."""
    values: dict[Any, Any] = {}
    slots = {node: k for k, node in enumerate(graph.error_nodes)} if watch is not None else None
    with numpy.errstate(all="ignore"):  # a device kernel raises no floating-point warnings either
        for node in walk(graph.outputs):
            if isinstance(node, Input):
                values[node] = inputs[node.index]
            elif isinstance(node, Scalar):
                values[node] = scalars[node.index]
            elif isinstance(node, Cast):
                k = slots.get(node) if slots else None
                if k is None:
                    values[node] = numpy.asarray(values[node.operand]).astype(node.dtype)
                else:
                    with watch(k, node.check):  # type: ignore[misc]
                        values[node] = numpy.asarray(values[node.operand]).astype(node.dtype)
            elif isinstance(node, Apply):
                k = slots.get(node) if slots else None
                operands = [values[o] for o in node.operands]
                if k is None:
                    result = node.ufunc(*operands, signature=node.loop)
                else:
                    with watch(k, node.check):  # type: ignore[misc]
                        result = node.ufunc(*operands, signature=node.loop)
                values[node] = result[node.out_index] if node.ufunc.nout > 1 else result
            elif isinstance(node, Select):
                values[node] = numpy.where(values[node.cond], values[node.a], values[node.b])
    return [values[o] for o in graph.outputs]
