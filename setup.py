"""Package discovery for the layout the product card fixes, and the one C extension.

`kafka_coop/` is the library; the CLI (`cli/`) and the migration data (`migrations/`) sit at the top
level and install as `kafka_coop.cli` and `kafka_coop.migrations`. Every package below those three roots
is found, never listed, so a new one cannot be left out of the wheel. Folders of data (`java/`,
`families/`) are found as namespace packages; their files are declared in pyproject.toml, with the
metadata. The repository's own test bed (testbed/, tests/, bench/) is not under a root.

The per-record `poll` path in C (kafka_coop/consumer/_fastcall.c), written to Python 3.11's limited API,
so the wheel it goes in is `cp311-abi3`: one per platform for every CPython from 3.11 on.
KAFKA_COOP_BUILD_C says whether to build it:

- unset (the default, pip building the wheel or installing the sdist): build it where a compiler works,
  else say so in one warning and build the pure-Python package (a `py3-none-any` wheel), which runs the
  same path in Python;
- `1`: build it, and fail the build where it cannot be compiled (the checkout's `make setup`);
- `0`: do not build it (the pure wheel of a release: scripts/build_dist.py).

docs/install.md has the trade, measured.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

ROOTS = {"kafka_coop": "kafka_coop", "kafka_coop.cli": "cli", "kafka_coop.migrations": "migrations"}
BUILD_C_ENV = "KAFKA_COOP_BUILD_C"
CHOICES = {"": "try", "1": "require", "0": "skip"}
LIMITED_API = "cp311"  # Py_LIMITED_API in _fastcall.c says the same version (0x030B0000)


def discover() -> list[str]:
    found: list[str] = []
    for name, folder in ROOTS.items():
        subpackages = find_namespace_packages(folder, exclude=["*__pycache__*"])
        found += [name, *(f"{name}.{sub}" for sub in subpackages)]
    return found


def build_c_choice(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """What KAFKA_COOP_BUILD_C asks for: "try" (unset), "require" (1) or "skip" (0)."""
    value = environ.get(BUILD_C_ENV, "").strip()
    if value not in CHOICES:
        sys.exit(f"error: {BUILD_C_ENV} must be 1 (build the C poll path) or 0 (pure Python), not {value!r}.")
    return CHOICES[value]


CHOICE = build_c_choice()


class OptionalBuildExt(build_ext):
    """build_ext that, unless the C path was required, falls back to the pure-Python package when the
    extension cannot be compiled (no compiler, no Python headers): the extension is dropped from the
    distribution, so the wheel is tagged pure (`py3-none-any`, see PureWhenNoExtension) and installs."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError) as exc:
            if CHOICE == "require":
                raise
            sys.stderr.write(
                f"WARNING: kafka-coop's C poll path was not compiled ({exc}); building the pure-Python "
                f"package, which runs the same path in Python (set {BUILD_C_ENV}=1 to fail instead).\n"
            )
            del self.distribution.ext_modules[:]  # one list: build_ext's own `extensions` too


def wheel_command() -> type[Any] | None:
    """bdist_wheel, with `root_is_pure` read when the wheel is written (after build_ext ran), not when
    the command was set up: a fallback build is then a pure wheel, not a platform wheel without its
    extension."""
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:  # pragma: no cover - setuptools before 70.1 (pyproject asks for >= 77)
        return None

    class PureWhenNoExtension(bdist_wheel):  # type: ignore[misc]
        @property
        def root_is_pure(self) -> bool:
            return not self.distribution.has_ext_modules()

        @root_is_pure.setter
        def root_is_pure(self, value: bool) -> None:
            pass  # bdist_wheel's own setting, made before the build: read the distribution instead

    return PureWhenNoExtension


FASTCALL = Extension(
    "kafka_coop.consumer._fastcall", ["kafka_coop/consumer/_fastcall.c"], py_limited_api=True
)
commands: dict[str, type[Any]] = {"build_ext": OptionalBuildExt}
if (wheel := wheel_command()) is not None:
    commands["bdist_wheel"] = wheel

setup(
    package_dir=ROOTS,
    packages=discover(),
    ext_modules=[] if CHOICE == "skip" else [FASTCALL],
    cmdclass=commands,
    options={"bdist_wheel": {"py_limited_api": LIMITED_API}} if CHOICE != "skip" else {},
)
