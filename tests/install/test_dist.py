"""The sdist and the wheel hold the whole product, and nothing of the repository's test bed."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser

from tests.install.conftest import REPO, Dist

# Roots of the installed package: repository folder -> where its files land in the wheel.
ROOTS = {"kafka_coop/": "kafka_coop/", "cli/": "kafka_coop/cli/", "migrations/": "kafka_coop/migrations/"}
# Tracked files under the roots that are not part of the package, each for a reason.
NOT_SHIPPED = {
    "migrations/README.md": "the migration YAML format, for contributors (docs/planning.md in the sdist)",
    "kafka_coop/consumer/_fastcall.c": "the optional C path, compiled only by a source install asking for it",
}
TEST_BED = ("testbed/", "tests/", "bench/", "scripts/")


def _wheel_names(dist: Dist) -> set[str]:
    with zipfile.ZipFile(dist.wheel) as whl:
        return set(whl.namelist())


def _sdist_names(dist: Dist) -> set[str]:
    with tarfile.open(dist.sdist) as tar:
        prefix = tar.getnames()[0].split("/")[0] + "/"
        return {name.removeprefix(prefix) for name in tar.getnames()}


def _metadata(dist: Dist) -> list[tuple[str, str]]:
    with zipfile.ZipFile(dist.wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(whl.read(name).decode())
    return list(message.items())


def test_the_wheel_is_built_from_the_sdist_with_no_warning(dist: Dist) -> None:
    assert "Building wheel from sdist" in dist.log or "from sdist" in dist.log.lower(), dist.log[-2000:]
    warnings = [line for line in dist.log.splitlines() if re.search(r"warn|would be ignored", line, re.I)]
    assert warnings == []


def test_the_wheel_is_pure_python_one_wheel_for_every_python_and_platform(dist: Dist) -> None:
    """A package index refuses a bare `linux_x86_64` tag; a `py3-none-any` wheel installs anywhere the
    dependencies do, with no compiler."""
    assert dist.wheel.name == "kafka_coop-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(dist.wheel) as whl:
        wheel_file = whl.read("kafka_coop-0.1.0.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: true" in wheel_file
    assert [line for line in wheel_file.splitlines() if line.startswith("Tag:")] == ["Tag: py3-none-any"]


def test_the_wheel_holds_no_c_source_and_no_compiled_module(dist: Dist) -> None:
    names = _wheel_names(dist)
    assert [n for n in names if n.endswith((".c", ".h", ".so", ".pyd"))] == []


def test_the_sdist_holds_the_c_source_a_source_install_can_build(dist: Dist) -> None:
    assert "kafka_coop/consumer/_fastcall.c" in _sdist_names(dist)


def test_twine_check_passes_on_the_sdist_and_the_wheel(dist: Dist) -> None:
    """What the package index checks on upload: the metadata and that the README renders."""
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


def test_the_classifiers_name_only_the_python_version_the_suite_runs_on(dist: Dist) -> None:
    """A classifier is a claim: a version is named once the suite has run on it (the suite runs on one
    interpreter, so naming another means running it there)."""
    named = {
        value.rsplit(" :: ", 1)[-1]
        for key, value in _metadata(dist)
        if key == "Classifier" and re.fullmatch(r"Programming Language :: Python :: 3\.\d+", value)
    }
    assert named == {f"{sys.version_info.major}.{sys.version_info.minor}"}


def test_the_wheel_holds_every_file_git_tracks_under_the_package_roots(dist: Dist) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", *ROOTS], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = set()
    for path in tracked:
        if path in NOT_SHIPPED:
            continue
        root = next(r for r in ROOTS if path.startswith(r))
        expected.add(ROOTS[root] + path.removeprefix(root))
    assert expected - _wheel_names(dist) == set()


def test_the_wheel_ships_nothing_of_the_test_bed(dist: Dist) -> None:
    names = _wheel_names(dist)
    assert [n for n in names if n.startswith(TEST_BED)] == []
    assert [n for n in names if n.rsplit("/", 1)[-1] in ("go.sum", "go.mod", "package-lock.json")] == []
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []


def test_the_license_is_in_the_wheel_and_the_sdist(dist: Dist) -> None:
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert "kafka_coop-0.1.0.dist-info/licenses/LICENSE" in _wheel_names(dist)
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
