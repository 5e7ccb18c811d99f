"""Package discovery for the layout the product card fixes.

`kafka_coop/` is the library; the CLI (`cli/`) and the migration data (`migrations/`) sit at the top
level and install as `kafka_coop.cli` and `kafka_coop.migrations`. Every package below those three roots
is found, never listed, so a new one cannot be left out of the wheel. Folders of data (`java/`,
`families/`) are found as namespace packages; their files are declared in pyproject.toml, with the
metadata. One C extension, optional. The repository's own test bed (testbed/, interop/, tests/,
bench/) is not under a root.
"""

from setuptools import Extension, find_namespace_packages, setup

ROOTS = {"kafka_coop": "kafka_coop", "kafka_coop.cli": "cli", "kafka_coop.migrations": "migrations"}


def discover() -> list[str]:
    found: list[str] = []
    for name, folder in ROOTS.items():
        subpackages = find_namespace_packages(folder, exclude=["*__pycache__*"])
        found += [name, *(f"{name}.{sub}" for sub in subpackages)]
    return found


# The per-record `poll` path in C (kafka_coop/consumer/_fastcall.c). Optional: where no C compiler is
# found the package installs with the same path in Python, about a tenth slower per one-record poll.
FASTCALL = Extension("kafka_coop.consumer._fastcall", ["kafka_coop/consumer/_fastcall.c"], optional=True)

setup(package_dir=ROOTS, packages=discover(), ext_modules=[FASTCALL])
