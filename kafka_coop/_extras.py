"""Optional dependencies: which extra brings which module, and one sentence when one is missing."""

from __future__ import annotations

import importlib.util
from typing import Final

from kafka_coop.errors import InvalidInput

# module -> (the package pip installs, the kafka-coop extra that brings it)
OPTIONAL: Final = {
    "click": ("click", "cli"),
    "rich": ("rich", "cli"),
    "yaml": ("PyYAML", "cli"),
    "kafka": ("kafka-python", "cli"),
    "matplotlib": ("matplotlib", "plot"),
    "pyspark": ("PySpark", "spark"),
    "prometheus_client": ("prometheus-client", "metrics"),
}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def install_hint(module: str) -> str:
    return f"Install the extra: pip install 'kafka-coop[{OPTIONAL[module][1]}]'."


def missing(modules: tuple[str, ...]) -> list[str]:
    """The packages (pip names) of `modules` that are not installed."""
    return [OPTIONAL[m][0] for m in modules if not installed(m)]


def require(module: str, what: str) -> None:
    """Raise InvalidInput (exit 2) naming the extra when `what` needs `module` and it is not installed."""
    if not installed(module):
        package = OPTIONAL[module][0]
        raise InvalidInput(f"{what} needs {package}, which is not installed.", hint=install_hint(module))
