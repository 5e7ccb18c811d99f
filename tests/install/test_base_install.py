"""`pip install kafka-coop`, as a service team gets it: the consumer library and nothing else."""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

from tests.install.conftest import INSTALL_TIMEOUT_S, Dist, Installed

EXTRA_MODULES = ("click", "rich", "yaml", "kafka", "prometheus_client", "matplotlib", "pyspark", "pandas")
# A source build's compiler, as setuptools takes it from CC: one that is not there.
NO_COMPILER = "kafka-coop-test-no-such-cc"
# Three records polled one per call through the installed package, on kafka_coop.testing's client; which
# call path took them (FastPoll: the C one; function: the Python closure) and where each module came from.
POLL_PROGRAM = """
import json
from kafka_coop import CoopConsumer
from kafka_coop.consumer import _core
from kafka_coop.testing import FakeGroup

group = FakeGroup()
conf = {"bootstrap.servers": "b:9092", "group.id": "g", "auto.offset.reset": "earliest"}
with CoopConsumer(conf, client=group.client) as consumer:
    consumer.subscribe(["t"])
    group.consumer.rebalance("assign", [("t", 0)])
    group.produce("t", 0, b"a", b"b", b"c")
    values = [m.value().decode() for m in (consumer.poll(0) for _ in range(6)) if m is not None]
    poll = type(consumer.__dict__["poll"]).__name__
try:
    from kafka_coop.consumer import _fastcall
    fastcall = _fastcall.__file__
except ImportError:
    fastcall = None
print(json.dumps({"values": values, "poll": poll, "core": _core.__file__, "fastcall": fastcall}))
"""


def test_every_public_name_imports_from_the_installed_package(base_install: Installed) -> None:
    proc = base_install.run(
        "python",
        "-c",
        "import json, kafka_coop\n"
        "for name in kafka_coop.__all__: getattr(kafka_coop, name)\n"
        "print(json.dumps({'file': kafka_coop.__file__, 'names': len(kafka_coop.__all__)}))",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["file"].startswith(str(base_install.root)), "imported from the venv, not the checkout"
    assert out["names"] >= 18


def _installed_record(installed: Installed) -> set[str]:
    proc = installed.run(
        "python",
        "-c",
        "import sys\nfrom importlib.metadata import distribution\n"
        "sys.stdout.write(distribution('kafka-coop').read_text('RECORD'))",
    )
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.splitlines())


def _wheel_record(wheel: Path) -> set[str]:
    """Every file of the wheel with its hash (less RECORD's own line, which has none)."""
    with zipfile.ZipFile(wheel) as whl:
        lines = whl.read("kafka_coop-0.1.0.dist-info/RECORD").decode().splitlines()
    return {line for line in lines if not line.startswith("kafka_coop-0.1.0.dist-info/RECORD,")}


def _polled(installed: Installed, **env: str) -> dict[str, Any]:
    proc = installed.run("python", "-c", POLL_PROGRAM, **env)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    assert out["values"] == ["a", "b", "c"]
    return out


def _source_install(
    installed: Installed, dist: Dist, target: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """`pip install kafka_coop-0.1.0.tar.gz`, the package only, into a directory of its own (the venv
    keeps the compiled wheel for the other tests); `-v`: the build's own output is kept."""
    return installed.run(
        "pip",
        "install",
        "-v",
        "--disable-pip-version-check",
        "--no-deps",
        "--target",
        str(target),
        str(dist.sdist),
        timeout=INSTALL_TIMEOUT_S,
        **env,
    )


def test_pip_installs_the_compiled_wheel_where_its_tags_fit(base_install: Installed, dist: Dist) -> None:
    """Offered the compiled wheel and the pure one (`--find-links`), pip takes the compiled one: every
    file of that wheel is installed with its hash (pip's own, the scripts and INSTALLER, come on top)."""
    installed = _installed_record(base_install)
    assert _wheel_record(dist.wheel) - installed == set()
    assert _wheel_record(dist.pure_wheel) - installed != set()


def test_the_installed_consumer_polls_through_the_c_path(base_install: Installed) -> None:
    """The default install runs the per-record `poll` in C: the module of the stable ABI (`abi3`)."""
    out = _polled(base_install)
    assert out["poll"] == "FastPoll"
    assert out["core"].startswith(str(base_install.root)), "imported from the venv, not the checkout"
    assert out["fastcall"].startswith(str(base_install.root)) and out["fastcall"].endswith(".abi3.so")


def test_the_pure_wheel_installed_polls_through_the_python_path(
    base_install: Installed, dist: Dist, tmp_path: Path
) -> None:
    """The fallback wheel (`py3-none-any`, for a platform with no compiled wheel) has no compiled module:
    the same path runs as the Python closure."""
    target = tmp_path / "site"
    proc = base_install.run(
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--target",
        str(target),
        str(dist.pure_wheel),
        timeout=INSTALL_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    out = _polled(base_install, PYTHONPATH=str(target))
    assert (out["poll"], out["fastcall"]) == ("function", None)
    assert out["core"].startswith(str(target))


def test_a_source_install_compiles_the_c_path_where_a_compiler_works(
    base_install: Installed, dist: Dist, tmp_path: Path
) -> None:
    """`pip install kafka_coop-0.1.0.tar.gz` (a platform with no wheel of its own, `--no-binary`): the
    sdist compiles the C path by default and the installed consumer uses it."""
    target = tmp_path / "site"
    built = _source_install(base_install, dist, target)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    out = _polled(base_install, PYTHONPATH=str(target))
    assert out["poll"] == "FastPoll" and out["fastcall"].startswith(str(target))


def test_a_source_install_without_a_compiler_installs_the_python_path_and_says_so(
    base_install: Installed, dist: Dist, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    built = _source_install(base_install, dist, target, CC=NO_COMPILER)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "WARNING: kafka-coop's C poll path was not compiled" in built.stdout + built.stderr
    out = _polled(base_install, PYTHONPATH=str(target))
    assert (out["poll"], out["fastcall"]) == ("function", None)
    assert out["core"].startswith(str(target))
    assert list(target.glob("kafka_coop-0.1.0.dist-info")), "installed as the pure package"
    assert "Root-Is-Purelib: true" in (target / "kafka_coop-0.1.0.dist-info" / "WHEEL").read_text()


def test_a_source_install_that_requires_the_c_path_fails_without_a_compiler(
    base_install: Installed, dist: Dist, tmp_path: Path
) -> None:
    """KAFKA_COOP_BUILD_C=1 (the checkout's `make setup`): no silent fallback."""
    target = tmp_path / "site"
    built = _source_install(base_install, dist, target, CC=NO_COMPILER, KAFKA_COOP_BUILD_C="1")
    assert built.returncode != 0
    assert NO_COMPILER in built.stdout + built.stderr
    assert not list(target.glob("kafka_coop*"))


def test_importing_the_consumer_loads_no_library_of_an_extra(base_install: Installed) -> None:
    proc = base_install.run(
        "python",
        "-c",
        "import sys\n"
        "from kafka_coop import CoopConsumer, CoopAIOConsumer, ConsumerSettings, JsonlSink, KafkaTopicSink\n"
        f"print(sorted(m for m in {EXTRA_MODULES!r} if m in sys.modules))",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_command_without_the_cli_extra_names_the_extra_in_one_sentence(
    base_install: Installed, no_traceback: Callable[[CompletedProcess[str]], None]
) -> None:
    proc = base_install.run("kafka-coop", "describe", "some-group")
    no_traceback(proc)
    assert proc.returncode == 2
    first, hint = proc.stderr.strip().splitlines()
    assert first.startswith("Error: the kafka-coop command needs click")
    assert hint == "Install the extra: pip install 'kafka-coop[cli]'."


def test_the_metrics_module_without_its_extra_is_an_import_error_naming_the_extra(
    base_install: Installed,
) -> None:
    proc = base_install.run("python", "-c", "from kafka_coop.sinks import PrometheusSink")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "ImportError: kafka_coop.sinks.PrometheusSink needs prometheus-client: "
        "pip install 'kafka-coop[metrics]'."
    )
