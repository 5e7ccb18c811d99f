"""The layout's rules, read from the source: every module is parsed (ast), nothing is imported.

docs/design/layout.md explains them; each test below holds one. An import counts wherever it is written
(inside functions too: a lazy import only hides an arrow) and so do the imports Python makes at run time
for us: `importlib.import_module("literal")` and the lazy maps (a module-level dict whose name holds
`LAZY`, mapping names to the modules that define them). TYPE_CHECKING blocks never run and do not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LIBRARIES = ("confluent_kafka", "click", "rich", "pyspark")
# folder -> dotted name it is imported as (the CLI installs as kafka_coop.cli)
SOURCES = {"kafka_coop": "kafka_coop", "cli": "kafka_coop.cli", "testbed": "testbed", "bench": "bench"}
# Python that runs in an interpreter of its own, not as a module of ours: the kafka-python and aiokafka
# members, in the venv testbed.interop builds for them.
NOT_MODULES = ("testbed/interop/python",)

# The functional core: decisions over plain typed values.
PURE = (
    "kafka_coop._vocab",
    "kafka_coop.errors",
    "kafka_coop.events",
    "kafka_coop.identity",
    "kafka_coop.settings",
    "kafka_coop.settings.*",
    "kafka_coop.protocol",
    "kafka_coop.protocol.*",
    "kafka_coop.inspection._model",
    "kafka_coop.inspection._infer",
    "kafka_coop.inspection._assemble",
    "kafka_coop.inspection._lag",
    "kafka_coop.membership",
    "kafka_coop.membership._removal",
    "kafka_coop.control",
    "kafka_coop.control._record",
    "kafka_coop.sandbox._node_config",
    "kafka_coop.rollout",
    "kafka_coop.rollout._*",  # all of rollout but its shell, rollout.live
    "kafka_coop.analytics._model",
    "kafka_coop.analytics._engine",
    "kafka_coop.analytics._intervals",
    "kafka_coop.analytics._ledger",
    "kafka_coop.analytics._markers",
    "kafka_coop.analytics._pause_gate",
    "kafka_coop.analytics._stream",
    "kafka_coop.analytics._versions",
    "kafka_coop.analytics._summary",
    "kafka_coop.analytics._timeline",
    "kafka_coop.analytics._phases",
)

# The test bed (docs/design/layout.md "The test bed"): the shipped sandbox and the repository's testbed/.
TEST_BED = ("kafka_coop.sandbox", "kafka_coop.sandbox.*", "testbed", "testbed.*")
# The CLI modules that stand above the test bed: its own front end (`sandbox`, `demo`) and the entry
# points that dispatch to every command. Every other CLI module is library and never reaches the bed.
ABOVE_TEST_BED = (
    "kafka_coop.cli",
    "kafka_coop.cli.__main__",
    "kafka_coop.cli.main",
    "kafka_coop.cli.sandbox",
    "kafka_coop.cli.demo",
    "kafka_coop.cli.schema",
)
REPOSITORY_ONLY = ("testbed", "testbed.*", "bench", "bench.*")

# The layers, bottom first (docs/design/layout.md): a module imports its own layer or lower ones.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "words",
        (
            "kafka_coop._vocab",
            "kafka_coop.errors",
            "kafka_coop._extras",
            "kafka_coop._jvm",
            "kafka_coop._lazy",
            "kafka_coop._waiting",
            "kafka_coop.schemas",
        ),
    ),
    (
        "model",
        (
            "kafka_coop.events",
            "kafka_coop.identity",
            "kafka_coop.manifest",
            "kafka_coop.families",
            "kafka_coop.settings",
            "kafka_coop.settings.*",
            "kafka_coop.protocol",
            "kafka_coop.protocol.*",
        ),
    ),
    (
        "clients",
        (
            "kafka_coop.admin",
            "kafka_coop._kafka_python",
            "kafka_coop.coordinator",
            "kafka_coop.sinks",
            "kafka_coop.sinks.*",
            "kafka_coop.control",
            "kafka_coop.control.*",
        ),
    ),
    ("service runtime", ("kafka_coop.consumer", "kafka_coop.consumer.*", "kafka_coop.testing")),
    ("package face", ("kafka_coop",)),
    (
        "operator tooling",
        (
            "kafka_coop.inspection",
            "kafka_coop.inspection.*",
            "kafka_coop.membership",
            "kafka_coop.membership.*",
            "kafka_coop.rollout",
            "kafka_coop.rollout.*",
        ),
    ),
    ("analytics", ("kafka_coop.analytics", "kafka_coop.analytics.*")),
    ("commands", ("kafka_coop.cli.*",)),
    ("test bed", TEST_BED),
    ("front door", ABOVE_TEST_BED),
    ("benchmarks", ("bench", "bench.*")),
)


def _module_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for folder, dotted in SOURCES.items():
        base = ROOT / folder
        # a compiled extension is a module too, known by its stub (it imports none of ours)
        for path in [*base.rglob("*.py"), *base.rglob("*.pyi")]:
            if path.suffix == ".pyi" and path.with_suffix(".py").exists():
                continue
            if path.parent.relative_to(ROOT).as_posix().startswith(NOT_MODULES):
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join([dotted, *parts])] = path
    return files


MODULES = _module_files()


def _matches(name: str, patterns: Iterable[str]) -> bool:
    """`pkg.*` is every module under pkg; `pkg._*` its private modules, not its subpackages'."""
    return any(
        name == p
        or (p.endswith(".*") and name.startswith(p[:-1]))
        or (p.endswith("._*") and name.startswith(p[:-1]) and "." not in name[len(p) - 1 :])
        for p in patterns
    )


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _lazy_targets(node: ast.AST, package: str) -> Iterator[str]:
    """The module names of a lazy map's values: absolute, or relative to the module's package."""
    if not isinstance(node, ast.Dict):
        return
    for value in node.values:
        first = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            name = first.value
            yield name if name in MODULES else f"{package}.{name}"


def _import_module_calls(node: ast.AST) -> Iterator[str]:
    """`import_module("literal")` calls anywhere under `node`."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called == "import_module" and sub.args and isinstance(sub.args[0], ast.Constant):
                yield str(sub.args[0].value)


def _imports(tree: ast.Module, name: str, *, module_level_only: bool) -> Iterator[str]:
    """Dotted names a module imports (TYPE_CHECKING blocks left out: they never run)."""
    package = _package(name)

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
            if not isinstance(node, ast.Import | ast.ImportFrom | ast.If):
                yield from _run_time_imports(node, package, lazy=not module_level_only)
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list) and children and isinstance(children[0], ast.stmt):
                    yield from walk(children)
                elif field == "handlers" and isinstance(children, list):
                    for handler in children:
                        yield from walk(handler.body)
            if isinstance(node, ast.If):
                yield from _import_module_calls(node.test)

    yield from walk(tree.body)


def _run_time_imports(node: ast.stmt, package: str, *, lazy: bool) -> Iterator[str]:
    """import_module calls in a statement's own expressions (nested statements are walked on their
    own) and, with `lazy`, the modules of a lazy map it assigns (loaded on first use, not at import)."""
    for field, value in ast.iter_fields(node):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _import_module_calls(child)
    if lazy and isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and "LAZY" in t.id for t in targets) and node.value is not None:
            yield from _lazy_targets(node.value, package)


@cache
def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))


@cache
def imports_of(name: str, module_level_only: bool = False) -> frozenset[str]:
    return frozenset(_imports(_tree(name), name, module_level_only=module_level_only))


def _resolve(imported: str) -> str | None:
    """The module an imported name lands in: itself, else the longest enclosing module we have."""
    parts = imported.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in MODULES:
            return candidate
    return None


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the modules it imports (ours only), by any of the means counted above."""
    edges: dict[str, frozenset[str]] = {}
    for name in MODULES:
        targets = {_resolve(i) for i in imports_of(name)} - {None, name}
        edges[name] = frozenset(t for t in targets if t is not None)
    return edges


def _reach(start: str, edges: dict[str, frozenset[str]]) -> dict[str, str]:
    """Every module `start` leads to -> the module that imports it on one path from `start`."""
    via: dict[str, str] = {}
    todo = [start]
    while todo:
        current = todo.pop()
        for target in edges[current]:
            if target not in via and target != start:
                via[target] = current
                todo.append(target)
    return via


def _path(start: str, end: str, via: dict[str, str]) -> str:
    chain = [end]
    while chain[-1] != start:
        chain.append(via[chain[-1]])
    return " -> ".join(reversed(chain))


def _is_pure(name: str) -> bool:
    return _matches(name, PURE)


def _shell(imported: str) -> bool:
    return imported.split(".", maxsplit=1)[0] in SHELL_LIBRARIES


def _loads(name: str) -> set[str]:
    """Every module of ours that importing `name` loads (module-level imports, parents included)."""
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


def cycles(edges: dict[str, frozenset[str]] | dict[str, set[str]]) -> list[list[str]]:
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
        for w in sorted(edges[v]):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_rollouts_shell_is_its_live_package_and_every_other_rollout_module_is_pure() -> None:
    rollout = [name for name in MODULES if _matches(name, ("kafka_coop.rollout", "kafka_coop.rollout.*"))]
    shells = sorted(name for name in rollout if not _is_pure(name))
    live = "kafka_coop.rollout.live"
    assert shells == [live, f"{live}._run", f"{live}._verify"]


def test_there_are_no_import_circles_in_the_library_the_test_bed_or_the_benchmarks() -> None:
    assert cycles(graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_made_at_run_time_count_as_arrows() -> None:
    """The lazy faces are arrows too: the package root's map, the CLI's command map, import_module."""
    edges = graph()
    assert "kafka_coop.consumer" in edges["kafka_coop"]
    assert {"kafka_coop.cli.sandbox", "kafka_coop.cli.demo"} <= edges["kafka_coop.cli.main"]
    assert "kafka_coop.sandbox._demo" in edges["kafka_coop.sandbox"]


def test_the_library_never_reaches_the_test_bed() -> None:
    """Consumer, settings, events, sinks, inspection, rollout, analytics and the CLI's commands run in
    services and operators' shells; none of them may load the broker, fleets, faults or the demo."""
    edges = graph()
    library = [
        name
        for name in MODULES
        if name.startswith("kafka_coop")
        and not _matches(name, TEST_BED)
        and not _matches(name, ABOVE_TEST_BED)
    ]
    assert len(library) > 60, library
    crossings = sorted(
        _path(name, target, via)
        for name in library
        for via in [_reach(name, edges)]
        for target in via
        if _matches(target, TEST_BED)
    )
    assert crossings == []


def layer_of(name: str) -> int:
    """The layer a module is in: the last one whose patterns name it (the front door's CLI modules
    are also `kafka_coop.cli.*`)."""
    found = [i for i, (_, patterns) in enumerate(LAYERS) if _matches(name, patterns)]
    assert found, f"{name} is in no layer: add it to LAYERS"
    return found[-1]


def upward_arrows(edges: dict[str, frozenset[str]]) -> list[str]:
    return sorted(
        f"{name} ({LAYERS[layer_of(name)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for name, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )


def test_every_module_is_in_a_layer_and_imports_run_downward() -> None:
    assert upward_arrows(graph()) == []


def test_the_package_never_imports_the_repository_only_code() -> None:
    """testbed/ and bench/ are not in the wheel: nothing under kafka_coop may import them."""
    crossings = sorted(
        f"{name} -> {target}"
        for name, targets in graph().items()
        if name.startswith("kafka_coop")
        for target in targets
        if _matches(target, REPOSITORY_ONLY)
    )
    assert crossings == []


def _exports(name: str) -> set[str] | None:
    """The names in a module's `__all__` (assignments and `+=`), None if it has none."""
    names: set[str] | None = None
    for node in _tree(name).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "__all__":
            names = (names or set()) | set(ast.literal_eval(value))
    return names


def test_names_taken_from_a_package_face_are_in_its_all() -> None:
    """A lazy face's `__getattr__` makes every name look present to mypy: a name the face does not
    export (a typo, a renamed class) would only fail at run time."""
    missing = []
    for name in MODULES:
        for node in ast.walk(_tree(name)):
            if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
                continue
            face = node.module
            if face not in MODULES or MODULES[face].name != "__init__.py":
                continue
            exported = _exports(face)
            if exported is None:
                continue
            missing += [
                f"{name}: {face}.{a.name}"
                for a in node.names
                if a.name not in exported and f"{face}.{a.name}" not in MODULES
            ]
    assert sorted(missing) == []


@cache
def _callers_trees() -> dict[str, ast.Module]:
    """tests/, examples/ and scripts/, parsed once: they call the faces, and are no modules of ours."""
    paths = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("examples/**/*.py"), *ROOT.glob("scripts/*.py")]
    return {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in paths}


# The package root is the documented surface for users (tests/unit/test_public_api.py holds it).
FACES_NOT_TRIMMED = ("kafka_coop",)


def test_every_name_a_package_face_exports_has_a_caller_outside_the_package() -> None:
    """A face exports what callers use (tests, examples, scripts and benchmarks count as callers);
    everything else stays in the package's private modules, where it can change freely."""
    taken: dict[str, set[str]] = {}
    for tree in _callers_trees().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                taken.setdefault(node.module, set()).update(a.name for a in node.names)
    for name in MODULES:
        for node in ast.walk(_tree(name)):
            inside = isinstance(node, ast.ImportFrom) and (
                name == node.module or name.startswith(f"{node.module}.")
            )
            if isinstance(node, ast.ImportFrom) and node.module and not node.level and not inside:
                taken.setdefault(node.module, set()).update(a.name for a in node.names)
    unused = sorted(
        f"{face}.{exported}"
        for face in MODULES
        if MODULES[face].name == "__init__.py" and face not in FACES_NOT_TRIMMED
        for exported in _exports(face) or ()
        if exported not in taken.get(face, set()) and exported != "__version__"
    )
    assert unused == []


# The sandbox's two faces: `kafka_coop.sandbox` holds what the wheel's own commands use (`kafka-coop
# sandbox`, `kafka-coop demo`), `kafka_coop.sandbox.testing` what tests, benchmarks and tools drive the
# test bed with. These names are in both until two benchmarks another change is editing take them from
# the testing face; the test below fails once they do, and the names leave the shipped face.
LEFT_FOR_BENCH = ("MemberProcesses", "MemberSpec", "PlanRunner", "SteadyProducer", "audit_when_drained")
BENCH_LEFT = ("bench.rollout_live", "bench.static_cutover")


@cache
def _from_imports() -> dict[str, dict[str, set[str]]]:
    """Module -> name -> who takes it (`from module import name`): our modules and the callers' files."""
    found: dict[str, dict[str, set[str]]] = {}
    for taker, tree in {**{name: _tree(name) for name in MODULES}, **_callers_trees()}.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    found.setdefault(node.module, {}).setdefault(alias.name, set()).add(taker)
    return found


def _takers(face: str) -> dict[str, set[str]]:
    """Name -> the modules and repository files that import it from `face` (its own package left out)."""
    return {
        name: {t for t in takers if not t.startswith(f"{face}.")}
        for name, takers in _from_imports().get(face, {}).items()
    }


def test_the_shipped_sandbox_face_exports_only_what_the_shipped_commands_use() -> None:
    """A name only tests, benchmarks or scripts take belongs in kafka_coop.sandbox.testing, which keeps
    the face the wheel's commands stand on small (and each name in one face)."""
    takers = _takers("kafka_coop.sandbox")
    shipped = {
        name: {t for t in takers.get(name, set()) if t.startswith("kafka_coop.")}
        for name in _exports("kafka_coop.sandbox") or ()
    }
    unused = sorted(name for name, users in shipped.items() if not users and name not in LEFT_FOR_BENCH)
    left = {name: sorted(takers.get(name, set())) for name in LEFT_FOR_BENCH}
    stale = sorted(name for name, users in left.items() if not users or not set(users) <= set(BENCH_LEFT))
    twice = sorted(
        set(_exports("kafka_coop.sandbox") or ()) & set(_exports("kafka_coop.sandbox.testing") or ())
    )
    assert (unused, stale, twice) == ([], [], sorted(LEFT_FOR_BENCH)), left


def test_every_name_the_sandbox_testing_face_exports_has_a_user() -> None:
    takers = _takers("kafka_coop.sandbox.testing")
    assert sorted(n for n in _exports("kafka_coop.sandbox.testing") or () if not takers.get(n)) == []


def _owner(private: str) -> str:
    """The package a private module belongs to: everything before its first `_name` part."""
    parts = private.split(".")
    first = next(i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__"))
    return ".".join(parts[:first])


def _inside(name: str, owner: str) -> bool:
    if owner == "kafka_coop":  # the root's private modules serve the whole repository
        return True
    return name == owner or name.startswith(owner + ".")


def test_private_modules_are_imported_only_from_inside_their_package() -> None:
    crossings = sorted(
        f"{name} -> {imported}"
        for name, targets in graph().items()
        for imported in targets
        if any(p.startswith("_") and not p.startswith("__") for p in imported.split("."))
        and not _inside(name, _owner(imported))
    )
    assert crossings == []


def _benchmarks() -> list[str]:
    """bench/<name>.py modules that are benchmarks (bench.run finds them by name)."""
    return [
        name
        for name in MODULES
        if name.startswith("bench.")
        and name.count(".") == 1
        and not name.rpartition(".")[2].startswith("_")
        and name not in ("bench.run", "bench.readme_table")
    ]


def test_no_benchmark_imports_another_benchmark() -> None:
    """What two benchmarks share lives in bench/harness/ or the test bed, not in either of them."""
    benchmarks = set(_benchmarks())
    assert len(benchmarks) >= 8, benchmarks
    crossings = sorted(
        f"{name} -> {target}" for name in benchmarks for target in graph()[name] if target in benchmarks
    )
    assert crossings == []


def _private_names_taken(name: str) -> Iterator[str]:
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            source = _resolve(node.module)
            if source is None or source == name:
                continue
            for alias in node.names:
                taken = f"{node.module}.{alias.name}"
                if alias.name.startswith("_") and not alias.name.startswith("__") and taken not in MODULES:
                    yield f"{name} takes {taken}"


def test_no_module_takes_a_private_name_of_another() -> None:
    taken = sorted(line for name in MODULES for line in _private_names_taken(name))
    assert taken == []


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


def test_the_library_the_test_bed_and_the_benchmarks_never_import_the_tests() -> None:
    """tests/ are not a package anyone runs from: what a test and the program it starts share is the
    test bed's (testbed/), so a member program works wherever the test bed does."""
    crossings = sorted(
        f"{name} -> {imported}"
        for name in MODULES
        for imported in imports_of(name)
        if imported == "tests" or imported.startswith("tests.")
    )
    assert crossings == []


# `python -m NAME` programs outside the test bed and the package, each with its reason.
PROGRAMS_OUTSIDE_THE_TEST_BED = {
    "tests.differential.app": "the differential harness's application under test, which lives with it",
}


def _programs_started(path: Path) -> Iterator[str]:
    """The NAME of every `[..., "-m", "NAME", ...]` list literal in one file."""
    text = path.read_text(encoding="utf-8")
    if '"-m"' not in text:  # most files start no program: no need to parse them
        return
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.List):
            items = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            yield from (str(items[i + 1]) for i in range(len(items) - 1) if items[i] == "-m" and items[i + 1])


def test_every_member_program_a_test_or_benchmark_starts_is_the_test_beds() -> None:
    """Member programs live in one place (testbed/), whoever starts them; the package's own programs
    (the CLI, the Spark engine) are the package's."""
    started = {
        f"{path.relative_to(ROOT)}: {program}"
        for folder in ("tests", "bench", "testbed")
        for path in (ROOT / folder).rglob("*.py")
        for program in _programs_started(path)
        if program.split(".")[0] in ("tests", "bench", "testbed", "kafka_coop")
        and not program.startswith(("testbed.", "kafka_coop."))
        and program not in PROGRAMS_OUTSIDE_THE_TEST_BED
    }
    assert sorted(started) == []
