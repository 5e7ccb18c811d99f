"""The wrapper-overhead figures: each driver's wrapped run is paired with its own raw run, never mixed."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from bench import wrapper_overhead as wo
from bench.harness.frame import new_result


def _run(driver: str | None, side: str, label: str, rate: float) -> dict[str, JsonValue]:
    run: dict[str, JsonValue] = {
        "label": label,
        "side": side,
        "records_per_s": rate,
        "end_to_end_records_per_s": rate / 2,
        "cpu_us_per_record": 1e6 / rate,
    }
    if driver is not None:
        run["driver"] = driver
    return run


def _summary(runs: list[dict[str, JsonValue]]) -> dict[str, float]:
    result = wo._summarize(new_result(wo.NAME, wo.TITLE, {}), runs)
    return {name: figure.value for name, figure in result.figures.items()}


def test_each_driver_is_paired_with_its_own_raw_consumer() -> None:
    runs = [
        _run("sync", "raw", "warmup", 1.0),  # warm-ups never count
        _run("sync", "wrapped", "warmup", 100.0),
        _run("sync", "raw", "r0", 1000.0),
        _run("sync", "wrapped", "r0", 990.0),
        _run("asyncio", "raw", "r0", 500.0),
        _run("asyncio", "wrapped", "r0", 450.0),
    ]
    figures = _summary(runs)
    assert figures["throughput_ratio"] == pytest.approx(0.99)
    assert figures["aio_throughput_ratio"] == pytest.approx(0.9)
    assert figures["aio_raw_records_per_s"] == 500.0


def test_results_from_before_the_asyncio_pair_read_as_sync_only() -> None:
    figures = _summary([_run(None, "raw", "r0", 1000.0), _run(None, "wrapped", "r0", 1010.0)])
    assert figures["throughput_ratio"] == pytest.approx(1.01)
    assert not any(name.startswith("aio_") for name in figures)


def test_the_per_record_poll_pair_has_figures_of_its_own() -> None:
    runs = [
        _run("sync", "raw", "r0", 1000.0),
        _run("sync", "wrapped", "r0", 990.0),
        _run("sync-poll", "raw", "r0", 400.0),
        _run("sync-poll", "wrapped", "r0", 360.0),
    ]
    figures = _summary(runs)
    assert figures["throughput_ratio"] == pytest.approx(0.99)
    assert figures["poll_throughput_ratio"] == pytest.approx(0.9)
    assert not any(name.startswith("aio_") for name in figures)


def test_the_marking_pairs_have_figures_of_their_own_and_only_the_per_record_one_a_target() -> None:
    runs = [
        _run("poll-mark", "raw", "r0", 400.0),
        _run("poll-mark", "wrapped", "r0", 392.0),
        _run("threads-mark", "raw", "r0", 800.0),
        _run("threads-mark", "wrapped", "r0", 1200.0),
    ]
    result = wo._summarize(new_result(wo.NAME, wo.TITLE, {}), runs)
    assert result.figures["mark_throughput_ratio"].value == pytest.approx(0.98)
    assert result.figures["mark_throughput_ratio"].target == wo.TARGET_RATIO
    assert result.figures["threads_throughput_ratio"].value == pytest.approx(1.5)
    assert result.figures["threads_throughput_ratio"].target is None


def test_the_result_names_the_kafka_coop_it_ran_and_its_poll_path() -> None:
    """The sync-poll figure depends on the install (the compiled wheel's C path or the pure wheel's
    closure): the checkout here, built with the C path by `make setup`."""
    import kafka_coop

    installed = wo.installed_package()
    assert installed["imported_from"] == kafka_coop.__path__[0]
    assert installed["poll_path"] == "c"
    assert str(installed["compiled_module"]).endswith(".abi3.so")
