"""The shape of the house: the import graph of the first-party code has no circle and keeps
its layers (tools -> conformance -> reference_impl), and ``conformance/`` keeps its modules in
packages named for what they do (``docs/CONTRIBUTING.md`` has the map).

The graph is read statically with :mod:`ast`, from every module of ``reference_impl/``,
``conformance/`` and ``tools/``, with the imports at module level and inside functions alike
(a lazy import back into a module that imports you is still a circle). Every first-party
import must name a module of this tree or a name its module binds. Relative imports are
resolved; ``from pkg import name`` where ``pkg.name`` is a module is an edge to that module,
otherwise to ``pkg`` (its ``__init__``); ``import a.b.c`` is an edge to ``a.b.c``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("reference_impl", "conformance", "tools")
#: Layers, lowest first: a module may import its own layer and the ones below it only.
LAYERS = ("reference_impl", "conformance", "tools")
#: Third-party packages the reference implementation must never import (pylance is the
#: oracle of the tests, not a dependency).
FORBIDDEN_IN_REFERENCE = ("lance",)
MAX_ROOT_MODULES = 4  # conformance/__init__.py, __main__.py and at most two more


# -- the graph ----------------------------------------------------------------------------

def module_files(root: Path, packages=TOP_LEVEL) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is_package) for every ``.py`` file below ``packages``."""
    out = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join(parts)] = (path, is_pkg)
    return out


def _known(name: str, modules) -> str | None:
    """The longest prefix of ``name`` that is a first-party module, or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, is_pkg: bool, modules) -> dict[str, list]:
    """Imported name (raw, absolute) -> ``[(lineno, first-party target or None)]``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if is_pkg else name.rpartition(".")[0]
    found: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, []).append((node.lineno, _known(alias.name, modules)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                target = sub if sub in modules else _known(source, modules)
                found.setdefault(sub if sub in modules else source, []).append((node.lineno, target))
    return found


def import_graph(root: Path = REPO, packages=TOP_LEVEL) -> dict[str, dict[str, int]]:
    """Module -> {first-party module it imports: line of the first such import}."""
    modules = module_files(root, packages)
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for name, (path, is_pkg) in modules.items():
        for targets in imports_of(name, path, is_pkg, modules).values():
            for line, target in targets:
                if target and target != name:
                    graph[name].setdefault(target, line)
    return graph


def bound_names(path: Path) -> set[str] | None:
    """The names a module binds at its top level (None when it star-imports: unknowable)."""
    names: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        raise LookupError
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    try:
        visit(ast.parse(path.read_text(encoding="utf-8")).body)
    except LookupError:
        return None
    return names


def unresolved_imports(root: Path = REPO, packages=TOP_LEVEL) -> list[str]:
    """First-party imports that name no module of the tree and no name its module binds (an
    import that would only work against another copy of the package, or not at all)."""
    modules = module_files(root, packages)
    bound = {}
    out = []
    for name, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if is_pkg else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in packages and alias.name not in modules:
                        out.append(f"{name} (line {node.lineno}): import {alias.name}")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] not in packages:
                    continue
                if source not in modules:
                    out.append(f"{name} (line {node.lineno}): from {source} import ...")
                    continue
                if source not in bound:
                    bound[source] = bound_names(modules[source][0])
                for alias in node.names:
                    known = bound[source]
                    if f"{source}.{alias.name}" in modules or known is None or alias.name in known:
                        continue
                    out.append(f"{name} (line {node.lineno}): from {source} import {alias.name}")
    return out


def cycles(graph: dict[str, dict]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module, each as a path
    ``[a, b, ..., a]`` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return [_circle_in(graph, set(c)) for c in components]


def _circle_in(graph, members: set[str]) -> list[str]:
    """A shortest circle through the first member of a strongly connected component."""
    first = min(members)
    previous = {first: None}
    frontier = [first]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == first:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [first, *reversed(path[:-1]), first] if len(path) > 1 else [first, node, first]
                if child in members and child not in previous:
                    previous[child] = node
                    nxt.append(child)
        frontier = nxt
    return sorted(members)  # pragma: no cover - a component always has a circle


def describe(circle: list[str], graph) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(circle, circle[1:], strict=False)) \
        + f" -> {circle[-1]}"


# -- the house ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_no_import_circle(graph):
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(describe(c, graph) for c in found)


def test_every_first_party_import_resolves_in_this_tree():
    missing = unresolved_imports()
    assert not missing, "imports of modules or names this tree does not have:\n" + "\n".join(missing)


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_layers_only_import_downwards(graph):
    upward = [f"{a} imports {b} (line {line})" for a, targets in graph.items()
              for b, line in targets.items() if _layer(b) > _layer(a)]
    assert not upward, "imports against the layering tools -> conformance -> reference_impl:\n" \
        + "\n".join(upward)


def test_reference_impl_never_imports_pylance():
    modules = module_files(REPO, ("reference_impl",))
    found = [f"{name} imports {raw} (line {line})"
             for name, (path, is_pkg) in modules.items()
             for raw, uses in imports_of(name, path, is_pkg, modules).items()
             if raw.split(".")[0] in FORBIDDEN_IN_REFERENCE
             for line, _ in uses]
    assert not found, "\n".join(found)


def test_few_modules_at_the_root_of_conformance():
    loose = sorted(p.name for p in (REPO / "conformance").glob("*.py"))
    assert len(loose) <= MAX_ROOT_MODULES, f"modules loose at the root of conformance/: {loose}"


def _is_empty_init(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the docstring says what the package is for, not what it holds
    return not body


def test_no_empty_package():
    empty = []
    for top in ("reference_impl", "conformance"):
        for init in sorted((REPO / top).rglob("__init__.py")):
            pkg = init.parent
            holds = [p for p in pkg.iterdir() if p.name not in ("__init__.py", "__pycache__")]
            if not holds and _is_empty_init(init):
                empty.append(str(pkg.relative_to(REPO)))
    assert not empty, f"packages with nothing but an empty __init__.py: {empty}"


# -- the checker itself -------------------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cycle_finder_finds_planted_circles(tmp_path):
    _write(tmp_path, {
        # a package whose __init__ imports its submodule, which imports the package back
        "pkg/__init__.py": "from . import sub\n",
        "pkg/sub.py": "from pkg import helper_name\n",
        # a circle closed by a lazy import inside a function, through a relative import
        "pkg/inner/__init__.py": '"""inner"""\n',
        "pkg/inner/a.py": "from .b import thing\n",
        "pkg/inner/b.py": "def f():\n    from ..inner import a\n    return a\n",
        # no circle: c imports d, d imports nothing first-party
        "pkg/c.py": "import pkg.d\nimport os\n",
        "pkg/d.py": "import json\n",
    })
    g = import_graph(tmp_path, ("pkg",))
    assert g["pkg"] == {"pkg.sub": 1}
    assert g["pkg.sub"] == {"pkg": 1}
    assert g["pkg.inner.b"] == {"pkg.inner.a": 2}
    assert g["pkg.c"] == {"pkg.d": 1}
    found = cycles(g)
    assert sorted(found) == [["pkg", "pkg.sub", "pkg"], ["pkg.inner.a", "pkg.inner.b", "pkg.inner.a"]]
    assert "pkg.inner.a (line 1) -> pkg.inner.b (line 2) -> pkg.inner.a" in \
        [describe(c, g) for c in found]


def test_unresolved_imports_are_reported(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "VERSION = 1\n",
        "pkg/a.py": "from pkg import VERSION, moved_away\nfrom . import b\nimport pkg.gone\n",
        "pkg/b.py": "def f():\n    from pkg.a import nothing_here\n",
    })
    assert unresolved_imports(tmp_path, ("pkg",)) == [
        "pkg.a (line 1): from pkg import moved_away",
        "pkg.a (line 3): import pkg.gone",
        "pkg.b (line 2): from pkg.a import nothing_here",
    ]


def test_cycle_finder_passes_an_acyclic_graph():
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {}, "d": {"a": 3}}) == []
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == [["a", "b", "c", "a"]]
