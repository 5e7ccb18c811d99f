"""The min lane: the lowest versions pyproject.toml allows (constraints-min.txt) pass the unit tier and
the consumer's broker tests, so every lower bound is one that was tested.

The lane is its own virtualenv and its own pytest run (with its own sandbox broker): the checkout is
installed editable there, because the tests read the repository (sources, examples, data) beside the
package; what differs from the main run is every dependency's version.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from packaging.version import Version

from tests.install.conftest import REPO, Installed, make_install

# The consumer's offset contract on the broker, on the oldest client library allowed: the matrix (both
# drivers x three protocols x defaults, drop-in, concurrent marks, cancellation), the drop-in swap, and
# the static member's poll overrun (the tests that put confluent-kafka's lower bound at 2.15). Not all of
# tests/integration/consumer: the main lane runs that, and running it here too doubled the CI's broker
# work (a 41-minute run on 2 cores).
CONSUMER = "tests/integration/consumer"
CONSUMER_BROKER_TESTS = [
    f"{CONSUMER}/test_contract_matrix.py",
    f"{CONSUMER}/test_dropin.py",
    f"{CONSUMER}/test_contract.py::"
    "test_a_static_member_that_overran_its_poll_interval_mid_rebalance_loses_without_commit_and_rejoins",
    f"{CONSUMER}/test_close.py::"
    "test_close_after_a_static_members_poll_overrun_mid_rebalance_is_no_fatal_error_and_blames_no_twin",
]
# mypy: tests/unit/consumer/test_typing.py runs it on the package (the typed surface, issue 25).
TOOLS = ("pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "kubernetes-validate", "mypy")
LANE_TIMEOUT_S = 1500.0


def _pins(path: str) -> dict[str, str]:
    pins = {}
    for line in (REPO / path).read_text().splitlines():
        pin = line.split("#")[0].strip()
        if pin:
            name, version = pin.split("==")
            pins[name.lower()] = version
    return pins


@pytest.fixture(scope="module")
def min_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    # The test tools at the pins of the main run, then the package with its dependencies at their minimum.
    tools = _pins("constraints.txt")
    install = make_install(
        tmp_path_factory, "min", [f"{t}=={tools[t]}" for t in TOOLS], REPO / "constraints.txt"
    )
    proc = install.run(
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-c",
        str(REPO / "constraints-min.txt"),
        "-e",
        f"{REPO}[cli,metrics,plot,spark]",
        timeout=600,
        # the editable import finds the checkout's own C module (`make setup` built it); 0: this install
        # does not compile it again into the checkout while the rest of the suite has it loaded
        KAFKA_COOP_BUILD_C="0",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return install


def test_the_min_constraints_pin_every_lower_bound_of_the_metadata() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in ("cli", "metrics", "plot", "spark"):
        requirements += project["optional-dependencies"][extra]
    lower = {}
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([\d.]+)", requirement)
        assert match, f"{requirement} has no lower bound"
        lower[match[1].lower()] = match[2]
    pins = {name: Version(v) for name, v in _pins("constraints-min.txt").items()}
    assert {name: pins.get(name) for name in lower} == {name: Version(v) for name, v in lower.items()}


def test_the_lowest_allowed_versions_pass_the_unit_tier_and_the_consumer_broker_tests(
    min_install: Installed,
) -> None:
    moved = [t for t in CONSUMER_BROKER_TESTS if not (REPO / t.split("::")[0]).exists()]
    assert not moved, f"the consumer's broker tests moved: point the min lane at them ({moved})"
    freeze = min_install.run("pip", "list", "--format", "json")
    installed = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(freeze.stdout)}
    for name, version in _pins("constraints-min.txt").items():
        assert Version(installed.get(name, "0")) == Version(version), (name, installed.get(name))
    proc = min_install.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--rootdir",
        str(REPO),
        str(REPO / "tests" / "unit"),
        *(str(REPO / t) for t in CONSUMER_BROKER_TESTS),
        timeout=LANE_TIMEOUT_S,
        CI="true",
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert re.search(r"\d+ passed", tail), tail
