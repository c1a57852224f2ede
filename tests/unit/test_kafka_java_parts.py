"""Mode kafka-java's pure parts: the settings it passes, the pipe frames, the fidelity
bounds, and the error when no JDK is there."""

from __future__ import annotations

import struct

import pytest

from producer_core.config import build_settings
from producer_core.engine.drivers.kafka_java import driver, protocol
from producer_core.engine.drivers.kafka_java.fidelity import check, within
from producer_core.engine.modes.kafka_java_settings import java_properties
from producer_core.errors import ConfigError, UsageError


def test_every_kbatch_setting_the_java_producer_has_is_passed_with_its_value():
    settings = build_settings({"linger.ms": "500", "acks": "all"}.items(), mode="kafka-java")
    properties = java_properties(dict(settings.values))
    assert properties["linger.ms"] == "500" and properties["acks"] == "all"
    # defaults are passed too, so both sides of a comparison run the same settings
    assert properties["retries"] == str(settings["retries"])
    assert properties["batch.size"] == "16384" and properties["client.id"] == "kbatch"
    assert "broker.linger.ms" not in properties and "batch.num.messages" not in properties


@pytest.mark.parametrize("key", ["broker.linger.ms", "produce.request.max.partitions",
                                 "batch.num.messages"])
def test_settings_the_java_producer_does_not_have_are_refused(key):
    with pytest.raises(ConfigError, match=f"no equivalent of {key}") as info:
        build_settings({key: "1"}.items(), mode="kafka-java")
    # the accepted list names the settings Java has and kbatch declares (idempotence too)
    assert "linger.ms" in str(info.value) and "enable.idempotence" in str(info.value)


def test_message_frame_layout():
    headers = protocol.encode_headers([("h", b"xy")])
    frame = protocol.message(2, 7, 123_456_789, True, 1 << 40, 1700, b"k", b"value", headers)
    kind, topic, partition, intended, record, mid, ts = struct.unpack_from(">cHiqbqq", frame)
    assert (kind, topic, partition, intended, record, mid, ts) == (
        b"M", 2, 7, 123_456_789, 1, 1 << 40, 1700)
    rest = frame[struct.calcsize(">cHiqbqq"):]
    assert rest == (struct.pack(">i", 1) + b"k" + struct.pack(">i", 5) + b"value"
                    + struct.pack(">HH", 1, 1) + b"h" + struct.pack(">i", 2) + b"xy")
    keyless = protocol.message(0, 0, 0, False, 0, 0, None, b"", protocol.encode_headers(None))
    assert keyless.endswith(struct.pack(">i", -1) + struct.pack(">i", 0) + struct.pack(">H", 0))


def test_header_is_length_prefixed_properties_text_with_escapes():
    frame = protocol.header(["a", "b"], {"client.id": "x=y: z"}, deliveries=True)
    (length,) = struct.unpack_from(">i", frame)
    text = frame[4:].decode()
    assert len(frame) == 4 + length
    assert "kbatch.protocol=1\n" in text and "kbatch.topics=a,b\n" in text
    assert "kbatch.deliveries=true\n" in text
    assert "client.id=x\\=y\\: z\n" in text


def test_fidelity_bounds_are_five_percent_and_ten_percent_or_two_ms():
    assert within("requests_sent", 1000, 1049) and not within("requests_sent", 1000, 1051)
    assert within("msgs_per_req", 20, 19.1) and not within("msgs_per_req", 20, 18.9)
    assert within("p50_ms", 5.0, 6.9) and not within("p50_ms", 5.0, 7.1)  # 2 ms floor
    assert within("p99_ms", 400.0, 439.0) and not within("p99_ms", 400.0, 441.0)  # 10%
    real = {"requests_sent": 100, "msgs_per_req": 10.0,
            "latency": {"p50_ms": 5.0, "p99_ms": 50.0}}
    emulated = {"requests_sent": 120, "msgs_per_req": 10.0,
                "latency": {"p50_ms": 5.5, "p99_ms": 80.0}}
    verdicts = {c.metric: c.ok for c in check(real, emulated)}
    assert verdicts == {"requests_sent": False, "msgs_per_req": True, "p50_ms": True,
                        "p99_ms": False}


def test_no_java_is_a_usage_error_that_says_what_to_install(monkeypatch):
    monkeypatch.setattr(driver, "find_java", lambda: None)
    with pytest.raises(UsageError, match="JDK 17 or newer"):
        driver.prepare(progress=lambda _: None)


def test_a_jre_without_javac_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "find_java", lambda: str(tmp_path / "java"))
    monkeypatch.setattr(driver.shutil, "which", lambda _: None)
    with pytest.raises(UsageError, match="javac"):
        driver.prepare(progress=lambda _: None)
