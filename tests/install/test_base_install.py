"""`pip install kafka-coop`, as a service team gets it: the consumer library and nothing else."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from tests.install.conftest import INSTALL_TIMEOUT_S, Dist, Installed

EXTRA_MODULES = ("click", "rich", "yaml", "kafka", "prometheus_client", "matplotlib", "pyspark", "pandas")


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


def test_the_installed_consumer_polls_through_the_python_path(base_install: Installed) -> None:
    """The wheel is pure Python: the per-record `poll` runs the Python path, with no compiled module."""
    proc = base_install.run(
        "python",
        "-c",
        "from kafka_coop.consumer import _core, _freeze\n"
        "print(_core.FastPoll is None, _freeze.CallState is _freeze.PyCallState)",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_a_source_install_that_asks_for_it_polls_through_the_c_path(
    base_install: Installed, dist: Dist, tmp_path: Path
) -> None:
    """`KAFKA_COOP_BUILD_C=1 pip install kafka_coop-0.1.0.tar.gz`: the sdist compiles the C path and
    the installed consumer uses it (the package only, into a directory of its own, so the base venv
    keeps the pure wheel for the other tests)."""
    target = tmp_path / "site"
    built = base_install.run(
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--target",
        str(target),
        str(dist.sdist),
        timeout=INSTALL_TIMEOUT_S,
        KAFKA_COOP_BUILD_C="1",
    )
    assert built.returncode == 0, built.stderr
    proc = base_install.run(
        "python",
        "-c",
        "from kafka_coop.consumer import _core, _fastcall\n"
        f"print(_fastcall.__file__.startswith({str(target)!r}), _core.FastPoll is _fastcall.FastPoll)",
        PYTHONPATH=str(target),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


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
