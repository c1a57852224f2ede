"""Every mode in the registry is consistent with the settings table, the CLI, compare,
sweep and the drivers, so a new registry line cannot be half wired."""

from __future__ import annotations

import inspect

import pytest
from click.testing import CliRunner

from cli.main import cli
from producer_core import config
from producer_core.analysis import compare, sweep
from producer_core.config import SETTINGS, build_settings
from producer_core.engine.core.accumulator import Accumulator, TopicPartition
from producer_core.engine.core.linger import LingerPolicy
from producer_core.engine.drivers.engine import run_async as engine_run_async
from producer_core.engine.drivers.run_types import RunDriver
from producer_core.engine.modes import (
    BY_NAME,
    COLLECTOR_MODES,
    MODES,
    REGISTRY,
    ModeSpec,
    make_policy,
    mode,
)


def _accumulator(batch_size: int) -> Accumulator:
    return Accumulator([TopicPartition("t", p) for p in range(4)], batch_size)


def test_config_keeps_the_registry_lists_importable() -> None:
    assert config.MODES == MODES == tuple(spec.name for spec in REGISTRY)
    assert config.COLLECTOR_MODES == COLLECTOR_MODES == (
        "broker", "librdkafka-broker", "adaptive", "aimd")
    assert len(set(MODES)) == len(MODES)


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_the_settings_a_mode_reads_exist(spec: ModeSpec) -> None:
    for name in (*spec.reads, spec.window, spec.sweep_window):
        assert name is None or name in SETTINGS, f"{spec.name}: {name} is not a setting"
    assert spec.sweep_window is None or spec.sweep_window in spec.reads
    # the table's own per-setting mode lists agree: a setting that names this mode is read
    for name, setting in SETTINGS.items():
        if spec.name in setting.modes:
            assert name in spec.reads, f"{name} applies to {spec.name} but is not in reads"


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_compare_and_sweep_map_the_window_through_the_registry(spec: ModeSpec) -> None:
    assert compare.linger_knob(spec.name) == spec.window
    assert sweep.window_knob(spec.name) == spec.sweep_window
    [run] = compare.parse_mode_configs([spec.name], [], [], linger_ms=7)
    if spec.window is not None:
        assert run.settings[spec.window] == 7
        assert spec.window in run.settings.explicit
    pairs = dict(sweep.window_assignments(spec.name, 3))
    assert pairs.get(spec.sweep_window) == ("3" if spec.sweep_window else None)
    build_settings(list(pairs.items()), mode=spec.name)  # every window is a valid setting


def test_help_names_every_mode_with_its_meaning() -> None:
    text = " ".join(CliRunner().invoke(cli, ["produce", "--help"], terminal_width=1000)
                    .output.split())
    for spec in REGISTRY:
        assert f"'{spec.name}' = {' '.join(spec.help.split())}" in text


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_each_mode_has_exactly_one_way_to_run(spec: ModeSpec) -> None:
    settings = build_settings(mode=spec.name)
    if spec.policy is not None:
        assert spec.load_driver() is None
        policy = make_policy(spec.name, _accumulator(settings.batch_size), [0, 0, 1, 1],
                             settings)
        assert isinstance(policy, LingerPolicy)
        assert policy.name == spec.name
    else:
        driver = spec.load_driver()
        assert inspect.iscoroutinefunction(driver)
        assert inspect.signature(driver) == inspect.signature(RunDriver.__call__).replace(
            parameters=list(inspect.signature(RunDriver.__call__).parameters.values())[1:])
        with pytest.raises(ValueError, match="not run by kbatch's engine"):
            make_policy(spec.name, _accumulator(settings.batch_size), [0, 0, 1, 1], settings)


def test_the_engine_is_a_run_driver_too() -> None:
    expected = list(inspect.signature(RunDriver.__call__).parameters.values())[1:]
    assert list(inspect.signature(engine_run_async).parameters.values()) == expected


def test_collector_modes_are_flagged_in_the_registry() -> None:
    assert {name for name, spec in BY_NAME.items() if spec.collector} == set(COLLECTOR_MODES)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mode 'nope'"):
        mode("nope")
    with pytest.raises(ValueError, match="exactly one of policy or driver"):
        ModeSpec("both", "x", policy="a:b", driver="c:d")


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_only_passthrough_modes_pass_unknown_properties_on(spec: ModeSpec) -> None:
    # a librdkafka property: passed on where the mode passes properties, else accepted
    # and not used (producer_core.client_properties); a name no client knows is refused
    kind = config.setting_kind("queue.buffering.max.ms", spec.name)
    assert kind == ("librdkafka" if spec.passthrough else "foreign")
    assert config.setting_kind("queue.buffering.max.mss", spec.name) == "unknown"


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_a_mode_warns_about_each_setting_it_ignores(spec: ModeSpec) -> None:
    for key, why in spec.ignores:
        assert key in SETTINGS and key not in spec.reads
        value = str(SETTINGS[key].default)
        assert why in build_settings([(key, value)], mode=spec.name).warnings
    if spec.check is not None:
        assert callable(spec.load_check())


def test_mode_checks_named_in_the_registry_run() -> None:
    with pytest.raises(config.ConfigError, match="in mode java every batch holds"):
        build_settings({"batch.size": 1 << 20, "max.request.size": 1 << 21,
                        "buffer.memory": 1 << 19}, mode="java")
    with pytest.raises(config.ConfigError, match="at least one threshold"):
        build_settings({f"bruce.combined.{k}": -1
                        for k in ("max.delay.ms", "max.bytes", "max.messages")}, mode="bruce")
    with pytest.raises(config.ConfigError, match="no equivalent of broker.linger.ms"):
        build_settings({"broker.linger.ms": 5}, mode="kafka-java")


@pytest.mark.parametrize("spec", REGISTRY, ids=lambda s: s.name)
def test_transactions_are_refused_only_where_the_registry_says(spec: ModeSpec) -> None:
    given = {"transactional.id": "t"}
    if spec.transactions and spec.policy is not None:  # kbatch's engine runs transactions
        assert build_settings(given, mode=spec.name).transactional_id == "t"
    elif not spec.transactions:
        with pytest.raises(config.ConfigError, match="not supported in mode"):
            build_settings(given, mode=spec.name)
