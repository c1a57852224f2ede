"""Adding a mode is one module plus one registry line: a toy mode (tests/unit/toy/
tick_mode.py) is registered the way `producer_core/engine/modes/__init__.py` lists a mode, and
then its setting is validated, its check runs, its help is listed, and kbatch's engine
runs it (virtual clock, fake cluster) with every message acknowledged."""

from __future__ import annotations

import pytest

import producer_core.config
import producer_core.engine.modes
from producer_core.config import build_settings
from producer_core.engine.drivers.engine import Engine
from producer_core.engine.drivers.run_types import RunCall
from producer_core.errors import ConfigError
from producer_core.workload.workload import Workload
from tests.unit.toy.tick_mode import TICK
from tests.virtual_run import FakeCluster, run_virtual


@pytest.fixture
def with_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with one more line, `TICK,`: the tables that line feeds at import
    (`modes.REGISTRY`, `BY_NAME`, `MODES`, `config.MODES`, `config.SETTINGS`) get it too,
    through the registry's own derivations."""
    modes = producer_core.engine.modes
    registry = (*modes.REGISTRY, TICK)
    monkeypatch.setattr(modes, "REGISTRY", registry)
    monkeypatch.setattr(modes, "BY_NAME", {spec.name: spec for spec in registry})
    monkeypatch.setattr(modes, "MODES", tuple(spec.name for spec in registry))
    monkeypatch.setattr(producer_core.config, "MODES", modes.MODES)
    monkeypatch.setattr(producer_core.config, "SETTINGS",
                        {**producer_core.config.SETTINGS, **modes.mode_settings(registry)})


def test_the_toy_mode_is_a_mode_with_its_setting(with_tick: None) -> None:
    assert "tick" in producer_core.config.MODES
    assert producer_core.engine.modes.mode("tick") is TICK
    assert "'tick' = every broker gets one request per tick.interval.ms" in (
        producer_core.engine.modes.mode_help())
    settings = producer_core.config.build_settings({"tick.interval.ms": "7"}, mode="tick")
    assert settings["tick.interval.ms"] == 7
    with pytest.raises(ConfigError, match="longer than delivery.timeout.ms"):
        producer_core.config.build_settings(
            {"tick.interval.ms": "50000", "delivery.timeout.ms": "40000"}, mode="tick")


def test_the_engine_runs_the_toy_mode(with_tick: None) -> None:
    cluster = FakeCluster()
    settings = producer_core.config.build_settings({"tick.interval.ms": "10"}, mode="tick")

    async def go():  # noqa: ANN202
        workload = Workload(rate=1000.0, duration_s=0.2, partitions=6, message_size=20)
        call = RunCall(workload, settings, "tick", cluster.bootstrap)
        return await Engine(call, cluster).run()  # type: ignore[arg-type]  # a fake cluster

    results = run_virtual(go)
    m = results.metrics
    assert m.messages_generated == 200 and m.messages_acked == 200
    assert {r.reason for r in m.requests} <= {"tick"}
    # one request per broker per tick: 3 brokers, ~20 ticks of 10 ms (+ the final flush)
    assert 3 * 19 <= len(m.requests) <= 3 * 22
    assert results.policy is not None and results.policy.key == "tick"
    assert results.policy.values["ticks"] >= 20


def test_without_its_line_the_toy_mode_is_not_a_mode() -> None:
    with pytest.raises(ConfigError, match="Unknown mode 'tick'"):
        build_settings(mode="tick")
