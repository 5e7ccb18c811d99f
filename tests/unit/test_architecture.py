"""The house's layers, read from the source: every module is parsed (ast), nothing is imported.

- The pure core imports nothing from confluent_kafka, click, rich or pyspark, not even through the
  modules it imports at load time: planners, gates and validators run where no client or terminal is.
- No import circles, counting imports inside functions too (a lazy import only hides a circle).
- A package's private modules (`_name`) are imported only from inside that package; everything else
  goes through the package's face (`__init__`). Modules at the root (`kafka_coop/_vocab.py`) belong to
  the whole library, the CLI included.
- The CLI prints through the consoles of `cli/_context.py` only, which read no markup or emoji codes
  in the user data they print.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LIBRARIES = ("confluent_kafka", "click", "rich", "pyspark")

# The functional core: decisions over plain typed values (docs/contributing.md, "Layout").
PURE = (
    "kafka_coop._vocab",
    "kafka_coop.errors",
    "kafka_coop.events",
    "kafka_coop.identity",
    "kafka_coop.settings",
    "kafka_coop.settings.*",
    "kafka_coop.protocol",
    "kafka_coop.protocol.*",
    "kafka_coop.inspect._model",
    "kafka_coop.inspect._infer",
    "kafka_coop.rollout",
    "kafka_coop.rollout.*",
    "kafka_coop.analytics._model",
    "kafka_coop.analytics._engine",
    "kafka_coop.analytics._intervals",
    "kafka_coop.analytics._summary",
    "kafka_coop.analytics._timeline",
    "kafka_coop.analytics._phases",
)


def _module_files() -> dict[str, Path]:
    """Dotted name -> file, for the library and the CLI (installed as kafka_coop.cli)."""
    files: dict[str, Path] = {}
    for base, dotted in ((ROOT / "kafka_coop", "kafka_coop"), (ROOT / "cli", "kafka_coop.cli")):
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join([dotted, *parts])] = path
    return files


MODULES = _module_files()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, name: str, *, module_level_only: bool) -> Iterator[str]:
    """Dotted names imported by a module (TYPE_CHECKING blocks left out: they never run)."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]

    def walk(nodes: list[ast.stmt]) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                yield from walk(node.orelse)
                continue
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                yield module
                yield from (
                    f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES
                )
            if module_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list) and children and isinstance(children[0], ast.stmt):
                    yield from walk(children)
                elif field == "handlers" and isinstance(children, list):
                    for handler in children:
                        yield from walk(handler.body)

    yield from walk(tree.body)


@cache
def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))


@cache
def imports_of(name: str, module_level_only: bool = False) -> frozenset[str]:
    return frozenset(_imports(_tree(name), name, module_level_only=module_level_only))


def _is_pure(name: str) -> bool:
    return any(name == p or (p.endswith(".*") and name.startswith(p[:-1])) for p in PURE)


def _shell(imported: str) -> bool:
    return imported.split(".", maxsplit=1)[0] in SHELL_LIBRARIES


def _loads(name: str) -> set[str]:
    """Every kafka_coop module that importing `name` loads (module-level imports, parents included)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for imported in imports_of(current, module_level_only=True):
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if candidate in MODULES:
                    todo.append(candidate)
    return seen


def test_the_pure_core_never_imports_confluent_kafka_click_rich_or_pyspark() -> None:
    pure = [name for name in MODULES if _is_pure(name)]
    assert len(pure) > 20, pure
    offenders = {
        name: sorted(
            f"{loaded} imports {imported}"
            for loaded in _loads(name) | {name}
            for imported in imports_of(loaded, module_level_only=loaded != name)
            if _shell(imported)
        )
        for name in pure
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        targets = set()
        for imported in imports_of(name):
            if imported in MODULES and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_there_are_no_import_circles() -> None:
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _owner(private: str) -> str:
    """The package a private module belongs to: everything before its first `_name` part."""
    parts = private.split(".")
    first = next(i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__"))
    return ".".join(parts[:first])


def test_private_modules_are_imported_only_from_inside_their_package() -> None:
    crossings = sorted(
        f"{name} -> {imported}"
        for name in MODULES
        for imported in imports_of(name)
        if imported in MODULES
        and any(p.startswith("_") and not p.startswith("__") for p in imported.split("."))
        and not (name == _owner(imported) or name.startswith(_owner(imported) + "."))
    )
    assert crossings == []


def _console_calls(name: str) -> Iterator[int]:
    """Lines where a module builds a rich Console itself (`Console(...)` or `x.Console(...)`)."""
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called == "Console":
                yield node.lineno


def test_the_cli_prints_only_through_consoles_that_read_no_markup() -> None:
    """Group ids, client ids and paths are printed as strings; a Console made elsewhere would read
    `[prod]` in them as markup and `:id:` as an emoji (cli/_context.plain_console says why), and
    rich.markup.escape would print its backslashes on the plain ones."""
    cli = [name for name in MODULES if name.startswith("kafka_coop.cli")]
    own_consoles = sorted(
        f"{name}:{line}" for name in cli if name != "kafka_coop.cli._context" for line in _console_calls(name)
    )
    escapes = sorted(name for name in cli if "rich.markup" in imports_of(name))
    assert (own_consoles, escapes) == ([], [])
