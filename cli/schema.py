"""`kafka-coop schema [NAME]`: the JSON Schema of a command's `--output json`, as the package ships it.

Every output a pipeline may parse is a pydantic model with a version field `v`; its schema is generated
from the model into kafka_coop/schemas/NAME.vN.json (`python -m kafka_coop.cli.schema --write`). The
command only reads the shipped files, so it loads no model, no client and no test bed. The map below
is where every output's model lives (a lazy map: the generator and the tests load them).
"""

from __future__ import annotations

import importlib
import json
import sys
import typing
from pathlib import Path
from typing import Any

import click

from kafka_coop.errors import InvalidInput
from kafka_coop.schemas import read_schema, schema_files

# schema name -> (module, model); modules are relative to kafka_coop.cli unless absolute
SCHEMAS_LAZY: dict[str, tuple[str, str]] = {
    "describe": ("describe", "DescribeOutput"),
    "describe-all": ("describe", "GroupListing"),
    "verify-group": ("verify", "VerifyOutput"),
    "plan": ("kafka_coop.rollout", "Plan"),
    "report": ("kafka_coop.analytics", "Summary"),
    "remove-members": ("remove_members", "RemovalReport"),
    "manifest-topic": ("manifest_topic", "ManifestTopicResult"),
    "control-topic": ("manifest_topic", "ManifestTopicResult"),
    "sandbox-start": ("sandbox", "SandboxStarted"),
    "sandbox-status": ("sandbox", "SandboxStatus"),
    "demo": ("demo", "DemoOutput"),
    "prepare-spark": ("prepare_spark", "PrepareSparkOutput"),
    "rollout-progress": ("kafka_coop.rollout", "Progress"),
    "watch": ("kafka_coop.rollout", "WatchRecord"),
    "error": ("_error_output", "ErrorOutput"),  # what any command above prints when it fails
}
# every command with `--output json` -> the schemas of what it prints
COMMAND_SCHEMAS: dict[str, tuple[str, ...]] = {
    "describe": ("describe", "describe-all"),
    "verify-group": ("verify-group",),
    "upgrade-plan": ("plan",),
    "downgrade-plan": ("plan",),
    "report": ("report",),
    "remove-members": ("remove-members",),
    "manifest-topic": ("manifest-topic",),
    "control-topic": ("control-topic",),
    "sandbox start": ("sandbox-start",),
    "sandbox status": ("sandbox-status",),
    "demo": ("demo",),
    "prepare-spark": ("prepare-spark",),
    "rollout run": ("rollout-progress",),
    "rollout resume": ("rollout-progress",),
    "watch": ("watch",),
}
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "kafka_coop" / "schemas"  # the checkout's


def model_of(name: str) -> Any:
    module, attribute = SCHEMAS_LAZY[name]
    qualified = module if module.startswith("kafka_coop") else f"{__package__}.{module}"
    return getattr(importlib.import_module(qualified), attribute)


def version_of(model: Any) -> int:
    """The `v` the model prints (for a root model: the one all of its variants print)."""
    if "root" in model.model_fields:
        annotation = model.model_fields["root"].annotation
        if typing.get_origin(annotation) is typing.Annotated:  # kept there by older pydantic
            annotation = typing.get_args(annotation)[0]
        variants = typing.get_args(annotation)
        versions = {version_of(variant) for variant in variants}
        if len(versions) != 1:
            raise ValueError(f"{model.__name__}'s variants print different versions: {sorted(versions)}")
        return versions.pop()
    return int(model.model_fields["v"].default)


def generate(name: str) -> tuple[int, str]:
    """(version, schema text) of `name` as its model is now: its shape (fields, types, required,
    constants), without the titles and descriptions pydantic derives from names and docstrings, so
    rewording a docstring is not a new version."""
    model = model_of(name)
    version = version_of(model)
    schema = {"$schema": SCHEMA_DIALECT, **_shape(model.model_json_schema(mode="serialization"))}
    schema["title"] = f"kafka-coop {name} v{version}"
    return version, json.dumps(schema, indent=2, sort_keys=True) + "\n"


def _shape(node: Any) -> Any:
    """`node` without "title" and "description" keywords (a property named so is kept), and with
    every property required: a command prints every field of its model, defaults included."""
    if isinstance(node, list):
        return [_shape(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {"required": sorted(node["properties"])} if "properties" in node else {}
    for key, value in node.items():
        if key in ("title", "description", "required"):
            continue
        if key in ("properties", "$defs", "patternProperties"):  # keys here are names, not keywords
            out[key] = {name: _shape(sub) for name, sub in value.items()}
        else:
            out[key] = _shape(value)
    return out


@click.command("schema")
@click.argument("name", required=False)
@click.option("--version", "version", type=click.IntRange(min=1), default=None, help="An older version.")
def schema(name: str | None, version: int | None) -> None:
    """The JSON Schema of NAME (a command's --output json), or the list of names and versions."""
    shipped = schema_files()
    if name is None:
        for known in sorted(shipped):
            versions = ", ".join(f"v{v}" for v in sorted(shipped[known]))
            click.echo(f"{known:<16} {versions}")
        return
    found = read_schema(name, version)
    if found is None:
        if name in shipped:
            raise InvalidInput(
                f"Schema {name!r} has no version {version}.",
                hint=f"It has {', '.join(f'v{v}' for v in sorted(shipped[name]))}.",
            )
        raise InvalidInput(
            f"There is no schema named {name!r}.", hint=f"The schemas are: {', '.join(sorted(shipped))}."
        )
    click.echo(found[1], nl=False)


def write_schemas(directory: Path = SCHEMAS_DIR) -> list[str]:
    """Write the file of every schema whose version has none yet; a version whose file differs from
    the model is refused (a changed model bumps its `v`). Returns what was written."""
    written = []
    for name in SCHEMAS_LAZY:
        version, text = generate(name)
        path = directory / f"{name}.v{version}.json"
        if path.exists():
            if path.read_text(encoding="utf-8") != text:
                raise SystemExit(f"{path.name} differs from the model {name}: bump its `v`, then --write.")
            continue
        path.write_text(text, encoding="utf-8")
        written.append(path.name)
    return written


if __name__ == "__main__":  # maintainers: python -m kafka_coop.cli.schema --write
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m kafka_coop.cli.schema --write")
    click.echo("\n".join(write_schemas()) or "every schema file is up to date")
