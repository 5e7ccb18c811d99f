"""A package face's names that load on first use (PEP 562), so importing the face stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, lazy: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a name of `lazy` (name -> the module that defines it) is
    imported when first asked for and kept in the package, so later lookups skip this function."""

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
