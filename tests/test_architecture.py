"""The layout docs/ARCHITECTURE.md describes, checked: imports flow one way, facts live once,
backends' abilities are declared, and nobody writes another module's globals.

Every module of npgpu is parsed (not imported); imports inside functions count as well.
"""

from __future__ import annotations

import ast
import pathlib
import re

import numpy
import pytest

import npgpu
from npgpu import _native, _ops
from npgpu.backends import _REGISTRY
from npgpu.backends.base import Backend

ROOT = pathlib.Path(npgpu.__file__).parent

#: The layers, lowest first: a module imports modules of its own layer or of layers below it
#: (and the graph is acyclic). A new module goes into one of them (docs/ARCHITECTURE.md).
LAYERS: list[tuple[str, ...]] = [
    # facts and mechanisms that know nothing of arrays
    ("npgpu._errors", "npgpu._ops", "npgpu._callsite", "npgpu._integrations", "npgpu._hooks", "npgpu._speedups",
     "npgpu._weak", "npgpu._one_thread", "npgpu._masks", "npgpu._bounds", "npgpu.kernels", "npgpu.kernels.complexmath",
     "npgpu.kernels.ufuncs", "npgpu.kernels.ir", "npgpu.kernels.order", "npgpu.kernels.codegen", "npgpu.lazy"),
    ("npgpu._native", "npgpu._fperr", "npgpu._report", "npgpu._scalar_reads"),
    # backends: the registry, the contract, the implementations (they see kernels, never the core)
    ("npgpu.backends.costs", "npgpu.backends.base", "npgpu.backends.random_kernels", "npgpu.backends",
     "npgpu.backends.numpy_backend", "npgpu.backends.emulated", "npgpu.backends.cupy",
     *(f"npgpu.backends.cupy.{m}" for m in ("compositions", "array_module", "staging", "kernels", "backend")),
     "npgpu.backends.opencl",
     *(f"npgpu.backends.opencl.{m}" for m in ("array", "routing", "device", "memory", "launch", "elementwise",
                                              "creation", "reductions", "movement", "indexing", "linalg", "gather",
                                              "shaping", "products", "composed", "sorting", "philox", "complexvalues",
                                              "backend"))),
    ("npgpu._config", "npgpu._placement", "npgpu._explain"),
    ("npgpu._array",),
    ("npgpu._operands", "npgpu.lazy.registry", "npgpu.lazy.materialize", "npgpu.lazy.recorder"),
    ("npgpu._transfer", "npgpu._residency"),
    ("npgpu._fallback", "npgpu._dispatch"),
    ("npgpu._namespace", "npgpu._random"),
    ("npgpu",),  # the composition root
    # programs and tools on top of the package
    ("npgpu.dask_hooks", "npgpu.dask",
     "npgpu.testing", "npgpu._harness", "npgpu.legacy", "npgpu.cli", "npgpu.cli.run", "npgpu.cli.bench",
     "npgpu.cli.info", "npgpu.__main__"),
]
LAYER = {module: rank for rank, group in enumerate(LAYERS) for module in group}

#: Third-party packages a backend imports inside a function, so that ``import npgpu`` never
#: imports them (tests/test_namespace.py checks that in a subprocess).
LAZY_THIRD_PARTY = ("cupy", "pyopencl", "matplotlib", "distributed")


def _name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")} | {_name(p): p for p in ROOT.glob("*.c")}
PYTHON = {m: p for m, p in MODULES.items() if p.suffix == ".py"}
TREES = {m: ast.parse(p.read_text(), str(p)) for m, p in PYTHON.items()}


def _package(module: str) -> str:
    return module if PYTHON[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> list[tuple[str, bool, int]]:
    """(imported npgpu module, whether the import is inside a function, line) for ``module``."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = _package(module).split(".")
                    base = base[:len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.split(".")[0] == "npgpu":
                    for alias in child.names:
                        candidate = f"{target}.{alias.name}"
                        found.append((candidate if candidate in MODULES else target, in_function, child.lineno))
            elif isinstance(child, ast.Import):
                found.extend((a.name, in_function, child.lineno) for a in child.names
                             if a.name.split(".")[0] == "npgpu")
            visit(child, inner)

    visit(TREES[module], False)
    return [(target, inner, line) for target, inner, line in found if target != module]


def _graph() -> dict[str, set[str]]:
    graph = {m: {target for target, _, _ in _imports(m)} for m in PYTHON}
    # the registry imports its backends by name, when one is first asked for
    graph["npgpu.backends"] |= {path.partition(":")[0] for path in _REGISTRY.values()}
    return graph


def test_every_module_has_a_layer():
    assert sorted(set(MODULES) - set(LAYER)) == []
    assert sorted(set(LAYER) - set(MODULES)) == []


def test_imports_go_down_the_layers():
    wrong = [f"{m} (layer {LAYER[m]}) imports {t} (layer {LAYER[t]})"
             for m, targets in _graph().items() for t in targets if LAYER[t] > LAYER[m]]
    assert wrong == []


def test_the_import_graph_has_no_circle():
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import circle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_no_function_imports_npgpu_modules():
    """Late imports hid the old circles; a module's dependencies are at its top."""
    late = [f"{m}:{line} imports {t}" for m in PYTHON for t, inner, line in _imports(m) if inner]
    assert late == []


def test_only_optional_third_party_packages_are_imported_late():
    late = []
    for module, tree in TREES.items():
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in LAZY_THIRD_PARTY and top != "npgpu":
                        late.append(f"{module}:{node.lineno} imports {name} inside {function.name}")
    assert late == []


def _module_aliases(module: str) -> set[str]:
    """Names under which ``module`` binds other npgpu modules."""
    aliases = set()
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if node.level and f"{_package(module)}.{alias.name}" in MODULES or (node.module or "").startswith(
                        "npgpu") and f"{node.module}.{alias.name}" in MODULES:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("npgpu"))
    return aliases


def test_no_module_writes_another_modules_globals():
    writes = []
    for module, tree in TREES.items():
        aliases = _module_aliases(module)
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in aliases:
                        writes.append(f"{module}:{node.lineno} sets {t.value.id}.{t.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases):
                writes.append(f"{module}:{node.lineno} setattr({node.args[0].id}, ...)")
    assert writes == []


# -- the backend contract -------------------------------------------------------------------------

CORE = [m for m in PYTHON if not m.startswith(("npgpu.backends", "npgpu.cli")) and m not in (
    "npgpu._harness", "npgpu.testing", "npgpu.legacy")]
_PROBE = re.compile(r"\b(hasattr|getattr)\((self\.|state\.|array\.|x\.|a\.)?_?backend\b")


def test_the_core_never_probes_a_backend_for_an_ability():
    probes = [f"{m}:{i}: {line.strip()}" for m in CORE for i, line in enumerate(PYTHON[m].read_text().splitlines(), 1)
              if _PROBE.search(line)]
    assert probes == []


def test_every_backend_method_the_core_calls_is_declared_in_base():
    """``backend.x``, ``state.backend.x``, ``array._backend.x`` in the core: ``x`` is Backend's."""
    used = set()
    for module in CORE:
        for node in ast.walk(TREES[module]):
            if isinstance(node, ast.Attribute):
                owner = node.value
                name = (owner.id if isinstance(owner, ast.Name)
                        else owner.attr if isinstance(owner, ast.Attribute) else "")
                if name in ("backend", "_backend"):
                    used.add(node.attr)
    assert used, "the scan found no backend calls: it is broken"
    assert sorted(name for name in used if not hasattr(Backend, name)) == []


# -- facts, each once -----------------------------------------------------------------------------

REDUCTION_FUNCTIONS = {f"numpy.{f.__name__}" for f in _ops.REDUCTIONS}


def _numpy_names(node: ast.AST) -> set[str]:
    return {f"numpy.{n.attr}" for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "numpy"}


@pytest.mark.parametrize("fact, names", [
    ("reductions", REDUCTION_FUNCTIONS),
    ("creations", {f"numpy.{f.__name__}" for f in _ops.CREATIONS}),
    ("metadata functions", {f"numpy.{f.__name__}" for f in _ops.METADATA}),
])
def test_a_table_of_numpy_functions_lives_in_ops_only(fact, names):
    """A dict or set display naming three or more of these functions is a table of that fact: in _ops only."""
    tables = []
    for module in CORE:
        if module == "npgpu._ops":
            continue
        for node in ast.walk(TREES[module]):
            if isinstance(node, (ast.Dict, ast.Set)) and len(_numpy_names(node) & names) >= 3:
                tables.append(f"{module}:{node.lineno}")
    assert tables == [], f"{fact} listed outside npgpu/_ops.py"


def test_every_reduction_is_computed_by_numpy_as_its_table_says():
    a = numpy.linspace(-2.0, 3.0, 12).reshape(3, 4)
    for func, reduction in _ops.REDUCTIONS.items():
        for axis in (None, 0, 1):
            want = func(a, axis=axis)
            got = reduction.ufunc.reduce(a, axis, reduction.small_dtype)
            if reduction.divides:
                got = got / (a.size if axis is None else a.shape[axis])
            numpy.testing.assert_allclose(got, want, rtol=1e-15)
            assert numpy.asarray(got).dtype == numpy.asarray(want).dtype


def test_every_creation_counts_what_numpy_makes():
    calls = {numpy.zeros: ((3, 4),), numpy.ones: (5,), numpy.empty: ((2, 2),), numpy.full: ((2, 3), 1.0),
             numpy.arange: (2, 11, 3), numpy.linspace: (0, 1, 7), numpy.logspace: (0, 1, 9), numpy.eye: (3, 5),
             numpy.identity: (4,), numpy.tri: (3,)}
    assert set(calls) == set(_ops.CREATIONS)
    for func, args in calls.items():
        assert _ops.CREATIONS[func].elements(args, {}) == func(*args).size, func.__name__


@pytest.mark.skipif(_native.speedups is None, reason="the C extension is not built or is turned off")
def test_the_c_wrappers_read_creation_sizes_by_the_same_numbers():
    sp = _native.speedups
    assert (sp.SIZE_SHAPE_FIRST, sp.SIZE_ARANGE, sp.SIZE_SQUARE, sp.SIZE_NUM_THIRD) == (
        _ops.QUICK_SHAPE_FIRST, _ops.QUICK_ARANGE, _ops.QUICK_SQUARE, _ops.QUICK_NUM_THIRD)


def test_every_ufunc_of_the_kernel_table_has_one_entry():
    from npgpu.kernels import ufuncs

    assert all(isinstance(getattr(numpy, name, None), (numpy.ufunc, type(numpy.clip))) for name in ufuncs.UFUNCS)
    assert all(name == facts.name for name, facts in ufuncs.UFUNCS.items())
    assert len(ufuncs._ENTRIES) == len(ufuncs.UFUNCS)  # (a name given twice would hide an entry)
