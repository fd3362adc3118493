"""Array data given as Python sequences: which arguments of a call are arrays, and their conversion.

``big[:3] + [1, 2, 3]`` or ``np.where(mask, [1, 2, 3], 0)`` hand a device call a list that is
array data, not a scalar and not a shape. Before such a call reaches a backend, every list,
tuple or foreign array-like in an argument NumPy treats as an array becomes a host
``numpy.ndarray`` (NumPy's own conversion, so values and dtypes are NumPy's); placement then
uploads it like any host operand. Which arguments are arrays is NumPy's own knowledge: the
dispatcher NumPy runs for ``__array_function__`` names them, and npgpu asks it (once per call
shape) instead of keeping a table of parameter roles.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy

from ._array import DeviceArray

#: Operand types that are never converted: arrays and the scalars every backend takes as they are.
_PLAIN = (int, float, complex, bool, numpy.generic, numpy.ndarray, type(None), str, bytes, slice, type(Ellipsis))

#: Argument types that are never array data (checked first: the commonest arguments).
_NEVER_DATA = frozenset({DeviceArray, int, float, bool, type(None), str, numpy.ndarray, numpy.dtype, type})

#: Arguments that are small host values, not array data: split points, tile counts, pad's widths
#: and values (NumPy's dispatchers list these as relevant), and axes and shifts (``a.transpose(
#: np.arange(3)[::-1])``). A backend takes them as Python numbers and sequences, never as device arrays.
HOST_VALUES = frozenset({"indices_or_sections", "reps", "shape", "newshape", "pad_width", "constant_values",
                         "end_values", "stat_length", "axes", "axis", "source", "destination", "shift"})

#: Functions whose list arguments are host values, not array data: einsum's sublist form
#: (``np.einsum(a, [0, 1])``, ``[Ellipsis]``), which its dispatcher lists among the operands.
LISTS_ARE_VALUES = frozenset({numpy.einsum})


def is_data(x: Any) -> bool:
    """Whether ``x`` is array data NumPy would convert: a list or tuple of numbers (or of such
    sequences), or an object exposing ``__array__``, ``__array_interface__`` or a buffer."""
    t = type(x)
    if t is list or t is tuple:
        return not x or not _holds_arrays(x)
    if t is DeviceArray or isinstance(x, _PLAIN):
        return False
    if hasattr(t, "__array_ufunc__") or hasattr(t, "__array_function__"):
        return False  # another array library's array (or one opting out): NumPy's protocols decide
    return hasattr(x, "__array__") or hasattr(x, "__array_interface__") or isinstance(x, memoryview)


def _holds_arrays(seq: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a sequence holds arrays (device or host) anywhere in it: then it is a sequence of
    operands (``concatenate([a, b])``), not array data."""
    for item in seq:
        t = type(item)
        if t is DeviceArray or t is numpy.ndarray:
            return True
        if (t is list or t is tuple) and _holds_arrays(item):
            return True
    return False


def as_array(x: Any, dtype: Any = None) -> Any:
    """``x`` as a host array when it is array data (NumPy's conversion), else ``x`` itself."""
    return numpy.asarray(x, dtype=dtype) if is_data(x) else x


def ufunc_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ufunc's inputs with array data converted: every input of a ufunc is an array operand."""
    if not any(map(is_data, inputs)):
        return inputs
    return tuple(numpy.asarray(x) if is_data(x) else x for x in inputs)


def at_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``ufunc.at``'s (array, indices[, values]) and ``reduceat``'s (array, indices): the indices
    are an index (an empty list is no indices), the values data."""
    if len(inputs) < 2:
        return inputs
    converted = (*ufunc_inputs(inputs[:1]), index_key(inputs[1]), *ufunc_inputs(inputs[2:]))
    return inputs if all(a is b for a, b in zip(converted, inputs)) else converted


def index_key(key: Any) -> Any:
    """An index with its list components as host arrays (``a[[0, 2]]``, ``a[[True, False], 1]``)."""
    if type(key) is tuple:
        if any(type(k) is list for k in key):
            return tuple(_index_array(k) if type(k) is list else k for k in key)
        return key
    return _index_array(key) if type(key) is list else key


def _index_array(items: list[Any]) -> numpy.ndarray:
    index = numpy.asarray(items)
    # NumPy takes an empty list as an empty integer index (asarray would make it float64)
    return index.astype(numpy.intp) if index.size == 0 and index.dtype == numpy.float64 else index


# -- NumPy functions: which arguments are arrays ----------------------------------------------

class _Probed(Exception):
    """Raised by a probe's ``__array_function__``: NumPy's dispatcher found these types relevant."""

    def __init__(self, types: tuple[type, ...]) -> None:
        super().__init__()
        self.types = types


class _Converted(Exception):
    """Raised by a probe's ``__array__``: no override answered, and NumPy's own code is converting
    the call's array data (lists of arrays among it)."""


def _probe_type(name: str, array: bool = False) -> type:
    def __array_function__(self: Any, func: Any, types: tuple[type, ...], args: Any, kwargs: Any) -> Any:
        raise _Probed(types)

    def __array__(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _Converted

    members: dict[str, Any] = {"__slots__": (), "__array_function__": __array_function__, "__array__": __array__}
    if array:  # (a stand-in for an array has a shape: histogramdd's dispatcher asks for it)
        members["shape"] = ()
    return type(name, (), members)


_ARRAY_PROBE = _probe_type("array", True)  # stands in for the call's arrays, so some override always answers
_probes: dict[Any, type] = {}
_lock = threading.Lock()
#: (function, argument layout) -> (the data positions NumPy treats as arrays, the positions of
#: lists of arrays it takes as one array)
_roles: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def _probe_for(position: Any) -> type:
    probe = _probes.get(position)
    if probe is None:
        with _lock:
            array = isinstance(position, tuple) and position[-1] == "array"
            probe = _probes.setdefault(position, _probe_type(f"probe{position}", array))
    return probe


def _kind(value: Any) -> Any:
    """An argument's role in the layout of a call (the cache key of what NumPy said of it)."""
    t = type(value)
    if t is DeviceArray or t is numpy.ndarray:
        return "array"
    if (t is list or t is tuple) and value and _holds_arrays(value):
        return (t, tuple(_kind(item) for item in value))
    return "data" if is_data(value) else None


def _stand_in(value: Any, kind: Any, position: Any, probes: list[Any], items: dict[Any, Any]) -> Any:
    """What the probe call passes for an argument: probes for arrays and array data. The first
    array in an argument that is a list of arrays (at any depth) gets a probe of its own (noted
    in ``items``), to learn whether NumPy's dispatcher names the list's arrays (it names all of
    them or none: concatenate's, sum's)."""
    if kind == "array":
        root = position
        while isinstance(root, tuple):
            root = root[0]
        if root is not position and root in items and items[root] is None:
            items[root] = position
            return _probe_for(position)()
        return _ARRAY_PROBE()
    if kind == "data":
        probes.append(position)
        return _probe_for(position)()
    if kind is None:
        return value
    if not isinstance(position, tuple):
        items[position] = None  # (its first array's probe position, once met)
    return kind[0](_stand_in(item, k, (position, j), probes, items) for j, (item, k) in enumerate(zip(value, kind[1])))


_host_values: dict[Any, frozenset[Any]] = {}


def _host_value_positions(func: Any) -> frozenset[Any]:
    """The positions and names of ``func``'s HOST_VALUES parameters (cached)."""
    found = _host_values.get(func)
    if found is None:
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):
            names = []
        found = _host_values[func] = frozenset(p for i, name in enumerate(names) if name in HOST_VALUES
                                               for p in (i, name))
    return found


def _array_positions(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The positions (index, keyword, or (index, item)) of the data arguments NumPy takes as arrays,
    and those (index or keyword) of the lists of arrays it takes as one array's items."""
    kinds = tuple(_kind(a) for a in args)
    kw_kinds = tuple((k, _kind(v)) for k, v in kwargs.items())
    key = (func, kinds, kw_kinds)
    found = _roles.get(key)
    if found is not None:
        return found
    probes: list[Any] = []
    items: dict[Any, Any] = {}  # (a list of arrays' position -> its first array's probe position)
    stand_ins = [_stand_in(a, k, i, probes, items) for i, (a, k) in enumerate(zip(args, kinds))]
    kw_stand_ins = {k: _stand_in(kwargs[k], kind, k, probes, items) for k, kind in kw_kinds}
    relevant: tuple[type, ...] = ()
    converting = False  # (whether NumPy's own code ran: no override answered)
    try:
        func(*stand_ins, **kw_stand_ins)
        converting = True
    except _Probed as probed:
        relevant = probed.types
    except _Converted:
        converting = True
    except (TypeError, ValueError, IndexError, AttributeError, KeyError):
        pass  # the dispatcher itself rejects this call: the real call raises NumPy's error
    host_values = _host_value_positions(func)
    data = tuple(p for p in probes if _probe_for(p) in relevant
                 and (p[0] if isinstance(p, tuple) else p) not in host_values)
    # a list whose arrays NumPy's dispatcher does not name is one array to NumPy (asarray of it);
    # where the dispatcher failed on the stand-ins nothing is known, and nothing is stacked
    stacked = tuple(p for p, q in items.items() if q is not None and p not in host_values
                    and (converting or (relevant and _probe_for(q) not in relevant)))
    found = _roles[key] = (data, stacked)
    return found


def function_arguments(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                       stack: Callable[[Any], Any] = numpy.asarray
                       ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """``args``/``kwargs`` of NumPy function (or ndarray method) ``func`` with their array data as
    host arrays, lists of arrays NumPy takes as one array (``np.sum([a, b])``, ``np.transpose([x,
    y])``: its dispatcher does not name their items, as it does concatenate's) as ``stack`` makes
    them (the dispatcher's asarray: device arrays stacked on the device), and device arrays given
    as host values (a shape) as lists; unchanged (the same objects) when nothing needs converting;
    None when NumPy must run the call on the host (array data given as an empty sequence, whose
    meaning NumPy decides per function)."""
    if func is numpy.ndarray.__setitem__ and len(args) == 3:
        target, key, value = args
        dtype = getattr(target, "dtype", None)
        return (target, index_key(key), numpy.asarray(value, dtype=dtype) if is_data(value) else value), kwargs
    if func is numpy.ndarray.__getitem__ and len(args) == 2:
        return (args[0], index_key(args[1])), kwargs
    host_values = _host_value_positions(func)
    if host_values and any(type(v) is DeviceArray and p in host_values
                           for p, v in (*enumerate(args), *kwargs.items())):
        args = tuple(v.tolist() if type(v) is DeviceArray and i in host_values else v for i, v in enumerate(args))
        kwargs = {k: v.tolist() if type(v) is DeviceArray and k in host_values else v for k, v in kwargs.items()}
    if not hasattr(func, "_implementation") or func in LISTS_ARE_VALUES:  # (nothing to convert)
        return args, kwargs
    for value in (*args, *kwargs.values()):
        if type(value) not in _NEVER_DATA and _needs_look(value):
            break
    else:
        return args, kwargs
    positions, stacked = _array_positions(func, args, kwargs)
    if not positions and not stacked:
        return args, kwargs
    new_args = list(args)
    new_kwargs = dict(kwargs)
    for p in stacked:
        container = new_args if isinstance(p, int) else new_kwargs
        container[p] = stack(container[p])  # type: ignore[index]
    for p in positions:
        if isinstance(p, tuple):
            i, j = p
            container = new_args if isinstance(i, int) else new_kwargs
            seq = list(container[i])  # type: ignore[index]
            seq[j] = _host_array(seq[j])
            if seq[j] is None:
                return None
            container[i] = type(container[i])(seq)  # type: ignore[index]
        else:
            container = new_args if isinstance(p, int) else new_kwargs
            container[p] = _host_array(container[p])  # type: ignore[index]
            if container[p] is None:  # type: ignore[index]
                return None
    return tuple(new_args), new_kwargs


def _host_array(value: Any) -> numpy.ndarray | None:
    """Array data as NumPy's array, or None where NumPy decides what it means: an empty sequence,
    or one that makes no array (``histogram2d(x, y, (edges, 4))``: bins per axis, which the
    dispatcher's probe, having no length, could not tell from one array of edges)."""
    if (type(value) is list or type(value) is tuple) and not value:
        return None
    try:
        return numpy.asarray(value)
    except ValueError:
        return None


def _needs_look(value: Any) -> bool:
    t = type(value)
    if t is list or t is tuple:
        return True  # (data, or arrays NumPy may take as one array's items: the dispatcher says which)
    return is_data(value)
