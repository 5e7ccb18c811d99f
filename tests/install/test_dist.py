"""The sdist and the two wheels (compiled, pure) hold the whole product, and nothing of the repository's
test bed."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.install.conftest import REPO, Dist

# Roots of the installed package: repository folder -> where its files land in the wheel.
ROOTS = {"kafka_coop/": "kafka_coop/", "cli/": "kafka_coop/cli/", "migrations/": "kafka_coop/migrations/"}
# Tracked files under the roots that are not part of the package, each for a reason.
NOT_SHIPPED = {
    "migrations/README.md": "the migration YAML format, for contributors (docs/planning.md in the sdist)",
    "kafka_coop/consumer/_fastcall.c": "the C poll path: its source in the sdist, its module in one wheel",
}
TEST_BED = ("testbed/", "tests/", "bench/", "scripts/")
COMPILED_MODULE = "kafka_coop/consumer/_fastcall.abi3.so"
WHEELS = ["compiled", "pure"]


@pytest.fixture(params=WHEELS)
def wheel(request: pytest.FixtureRequest, dist: Dist) -> Path:
    return dist.wheel if request.param == "compiled" else dist.pure_wheel


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as whl:
        return set(whl.namelist())


def _wheel_file(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as whl:
        return whl.read("kafka_coop-0.1.0.dist-info/WHEEL").decode()


def _sdist_names(dist: Dist) -> set[str]:
    with tarfile.open(dist.sdist) as tar:
        prefix = tar.getnames()[0].split("/")[0] + "/"
        return {name.removeprefix(prefix) for name in tar.getnames()}


def _metadata(dist: Dist) -> list[tuple[str, str]]:
    with zipfile.ZipFile(dist.wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(whl.read(name).decode())
    return list(message.items())


def test_the_wheels_are_built_from_the_sdist_with_no_warning(dist: Dist) -> None:
    assert dist.log.lower().count("building wheel from sdist") == 1, dist.log[-2000:]  # the compiled one
    warnings = [line for line in dist.log.splitlines() if re.search(r"warn|would be ignored", line, re.I)]
    assert warnings == []


def test_the_default_wheel_is_compiled_for_every_cpython_from_3_11_as_manylinux(dist: Dist) -> None:
    """`cp311-abi3`: the C module is built to Python 3.11's limited API, so one wheel serves every CPython
    from 3.11 on; `manylinux_2_17` is what auditwheel found the module needs of glibc (clock_gettime
    moved into libc in 2.17), so pip on any glibc Linux from 2014 on takes it."""
    arch = platform.machine()
    assert dist.wheel.name == (
        f"kafka_coop-0.1.0-cp311-abi3-manylinux2014_{arch}.manylinux_2_17_{arch}.whl"
    ), dist.wheel.name
    wheel_file = _wheel_file(dist.wheel)
    assert "Root-Is-Purelib: false" in wheel_file
    assert [line for line in wheel_file.splitlines() if line.startswith("Tag:")] == [
        f"Tag: cp311-abi3-manylinux_2_17_{arch}",
        f"Tag: cp311-abi3-manylinux2014_{arch}",
    ]


def test_the_fallback_wheel_is_pure_python_for_every_python_and_platform(dist: Dist) -> None:
    """Where no compiled wheel fits (musl, another architecture, macOS), pip takes `py3-none-any`,
    which installs anywhere the dependencies do, with no compiler."""
    assert dist.pure_wheel.name == "kafka_coop-0.1.0-py3-none-any.whl"
    wheel_file = _wheel_file(dist.pure_wheel)
    assert "Root-Is-Purelib: true" in wheel_file
    assert [line for line in wheel_file.splitlines() if line.startswith("Tag:")] == ["Tag: py3-none-any"]


def test_the_compiled_wheel_holds_one_module_of_the_stable_abi_and_no_c_source(dist: Dist) -> None:
    names = _names(dist.wheel)
    assert [n for n in names if n.endswith((".c", ".h", ".so", ".pyd"))] == [COMPILED_MODULE]


def test_the_pure_wheel_holds_no_c_source_and_no_compiled_module(dist: Dist) -> None:
    names = _names(dist.pure_wheel)
    assert [n for n in names if n.endswith((".c", ".h", ".so", ".pyd"))] == []


def test_the_two_wheels_differ_only_by_the_compiled_module(dist: Dist) -> None:
    def files(wheel: Path) -> set[str]:
        return {n for n in _names(wheel) if ".dist-info/" not in n and not n.endswith("/")}

    assert files(dist.wheel) - files(dist.pure_wheel) == {COMPILED_MODULE}
    assert files(dist.pure_wheel) - files(dist.wheel) == set()
    metadata = [zipfile.ZipFile(w).read("kafka_coop-0.1.0.dist-info/METADATA") for w in dist.wheels]
    assert metadata[0] == metadata[1]


def test_the_sdist_holds_the_c_source_a_source_install_builds(dist: Dist) -> None:
    assert "kafka_coop/consumer/_fastcall.c" in _sdist_names(dist)


def test_twine_check_passes_on_the_sdist_and_the_wheels(dist: Dist) -> None:
    """What the package index checks on upload: the metadata and that the README renders."""
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), *map(str, dist.wheels)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 3, proc.stdout


def test_the_classifiers_name_only_the_python_version_the_suite_runs_on(dist: Dist) -> None:
    """A classifier is a claim: a version is named once the suite has run on it (the suite runs on one
    interpreter, so naming another means running it there)."""
    named = {
        value.rsplit(" :: ", 1)[-1]
        for key, value in _metadata(dist)
        if key == "Classifier" and re.fullmatch(r"Programming Language :: Python :: 3\.\d+", value)
    }
    assert named == {f"{sys.version_info.major}.{sys.version_info.minor}"}


def test_the_wheel_holds_every_file_git_tracks_under_the_package_roots(wheel: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", *ROOTS], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = set()
    for path in tracked:
        if path in NOT_SHIPPED:
            continue
        root = next(r for r in ROOTS if path.startswith(r))
        expected.add(ROOTS[root] + path.removeprefix(root))
    assert expected - _names(wheel) == set()


def test_the_wheel_ships_nothing_of_the_test_bed(wheel: Path) -> None:
    names = _names(wheel)
    assert [n for n in names if n.startswith(TEST_BED)] == []
    assert [n for n in names if n.rsplit("/", 1)[-1] in ("go.sum", "go.mod", "package-lock.json")] == []
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []


def test_the_license_is_in_the_wheels_and_the_sdist(dist: Dist) -> None:
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    for wheel in dist.wheels:
        assert "kafka_coop-0.1.0.dist-info/licenses/LICENSE" in _names(wheel)
    assert "LICENSE" in _sdist_names(dist)


def test_the_metadata_names_license_authors_classifiers_python_and_every_extra(dist: Dist) -> None:
    meta = _metadata(dist)
    fields = {key for key, _ in meta}
    assert {"License-Expression", "Author", "Classifier", "Keywords", "Requires-Python", "Summary"} <= fields
    assert ("License-Expression", "Apache-2.0") in meta
    extras = {value for key, value in meta if key == "Provides-Extra"}
    assert {"cli", "plot", "spark", "metrics", "all"} <= extras
    requires = [value for key, value in meta if key == "Requires-Dist" and 'extra == "dev"' not in value]
    base = sorted(r.split(">")[0].split("<")[0].strip() for r in requires if "extra ==" not in r)
    assert base == ["confluent-kafka", "pydantic"], "the base install is the consumer library"
    external = [r for r in requires if not r.startswith("kafka-coop")]  # `all` names the other extras
    assert all(re.search(r">=[\d.]+", r) for r in external), "every dependency has a tested lower bound"


def test_the_sdist_holds_the_guides_and_examples_the_readme_names(dist: Dist) -> None:
    readme = (REPO / "README.md").read_text()
    named = set(re.findall(r"`((?:docs|examples)/[\w./-]+\.(?:md|py|yaml))`", readme))
    assert named, "the README names its guides by path"
    assert named - _sdist_names(dist) == set()


def test_the_readme_links_only_where_a_reader_of_the_package_page_can_follow(dist: Dist) -> None:
    """The README is also the package's long description: a relative link (docs/x.md) leads nowhere on
    the package index, so the README names repository files in words and links only to anchors and
    absolute addresses."""
    readme = (REPO / "README.md").read_text()
    relative = [
        target for target in re.findall(r"\]\(([^)]+)\)", readme) if not target.startswith(("#", "https://"))
    ]
    assert relative == []
