"""The CLI imports at module level, where readers and tools see the data flow; an import inside a
function is kept only where start-up time needs it, each for a reason measured on `--help` (the import's
own cost in the command that would pay for it, on a loaded 2-core machine)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

CLI = Path(__file__).resolve().parents[3] / "cli"

# (file, function, module imported) -> why it waits until the function runs
LAZY_IMPORTS: dict[tuple[str, str, str], str] = {
    ("__init__.py", "run", ".main"): "the console script says which extra is missing before click loads",
    ("_context.py", "plain_console", "rich.console"): "consume --quiet builds no console (~25 ms)",
    ("_context.py", "read_command_config", "kafka_coop.settings"): "describe --help: no settings (~30 ms)",
    ("_context.py", "admin_for", "kafka_coop.admin"): "consume makes no admin client (~0.2 s)",
    ("consume.py", "_render_event", "rich.text"): "a --quiet member never imports rich (~40 ms)",
    ("consume.py", "consume", "kafka_coop.consumer"): "consume --help loads no client (~0.3 s)",
    ("consume.py", "refuse_unknown_keys", "confluent_kafka"): "consume --help loads no client (~70 ms)",
    ("consume.py", "_serve_metrics", "kafka_coop.sinks"): "prometheus-client is an extra, named by require()",
    ("main.py", "cli", "._context"): "--version loads no pydantic (~0.2 s)",
    ("main.py", "_error_console", "._context"): "--version loads no pydantic (~0.2 s)",
    ("main.py", "_print_error_json", "._error_output"): "only an error loads it (~0.4 s at --version)",
    ("main.py", "_print_error", "rich.text"): "only an error prints (~0.1 s at --version)",
    ("pipeline.py", "run", "kafka_coop.analytics"): "PySpark (~1.5 s)",
    ("pipeline.py", "run", "kafka_coop.settings"): "pipeline --help reads no settings (~0.1 s)",
    ("plan.py", "_fleet", "kafka_coop.inspection"): "a --fleet plan loads no client (~0.2 s)",
    ("remove_members.py", "remove_members", "kafka_coop.inspection"): "--help loads no client (~0.25 s)",
    ("remove_members.py", "remove_members", "kafka_coop.membership"): "--help loads no client (~0.1 s)",
    ("rollout.py", "__init__", "kafka_coop.rollout"): "rollout --help loads no client (~0.2 s)",
    ("rollout.py", "run", "kafka_coop.rollout"): "rollout --help loads no client (~0.2 s)",
    ("rollout.py", "resume", "kafka_coop.rollout"): "rollout --help loads no client (~0.2 s)",
    ("watch.py", "watch", "kafka_coop.inspection"): "watch --help loads no client (~0.2 s)",
}


def _function_level_imports(path: Path) -> Iterator[tuple[str, str, str]]:
    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[str, str, str]]:
        for child in ast.iter_child_nodes(node):
            if function is not None and isinstance(child, ast.Import):
                yield from ((path.name, function, alias.name) for alias in child.names)
            elif function is not None and isinstance(child, ast.ImportFrom):
                yield path.name, function, "." * child.level + (child.module or "")
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            yield from walk(child, inner)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), None)


def test_every_import_inside_a_cli_function_is_on_the_allow_list_with_its_reason() -> None:
    found = {key for path in sorted(CLI.rglob("*.py")) for key in _function_level_imports(path)}
    assert sorted(found - LAZY_IMPORTS.keys()) == [], "import it at module level, or list it with a reason"
    assert sorted(LAZY_IMPORTS.keys() - found) == [], "an allowed import is gone: strike it from the list"
