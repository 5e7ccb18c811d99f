"""Package discovery for the layout the product card fixes.

`kafka_coop/` is the library; the CLI (`cli/`) and the migration data (`migrations/`) sit at the top
level and install as `kafka_coop.cli` and `kafka_coop.migrations`. Every package below those three roots
is found, never listed, so a new one cannot be left out of the wheel. Folders of data (`java/`,
`families/`) are found as namespace packages; their files are declared in pyproject.toml, with the
metadata. One C extension, built only when asked for (below). The repository's own test bed (testbed/,
tests/, bench/) is not under a root.
"""

import os

from setuptools import Extension, find_namespace_packages, setup

ROOTS = {"kafka_coop": "kafka_coop", "kafka_coop.cli": "cli", "kafka_coop.migrations": "migrations"}


def discover() -> list[str]:
    found: list[str] = []
    for name, folder in ROOTS.items():
        subpackages = find_namespace_packages(folder, exclude=["*__pycache__*"])
        found += [name, *(f"{name}.{sub}" for sub in subpackages)]
    return found


# The per-record `poll` path in C (kafka_coop/consumer/_fastcall.c), built only from a source install that
# asks for it (KAFKA_COOP_BUILD_C=1; the checkout's `make setup` does): the default wheel is pure Python,
# py3-none-any, one wheel for every Python and platform, and runs the same path in Python. Asked for, a
# missing compiler is a failed build, not a silent fallback. docs/install.md has the trade, measured.
BUILD_C = os.environ.get("KAFKA_COOP_BUILD_C", "") == "1"
FASTCALL = Extension("kafka_coop.consumer._fastcall", ["kafka_coop/consumer/_fastcall.c"])

setup(package_dir=ROOTS, packages=discover(), ext_modules=[FASTCALL] if BUILD_C else [])
