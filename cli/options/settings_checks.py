"""Checks on `-X` settings that `producer_core.config` leaves to the caller: a `client.id`
a broker would choke on, and a setting of another mode that the run would ignore."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from producer_core.bounds import MAX_CLIENT_ID, MAX_TRANSACTIONAL_ID_BYTES
from producer_core.config import ProducerSettings
from producer_core.engine.drivers.run_checks import check_message_fits
from producer_core.engine.modes import modes_reading
from producer_core.errors import UsageError
from producer_core.workload.workload import Workload


def check_setting_texts(texts: Iterable[str]) -> None:
    """Refuse a `client.id` that is too long or holds control characters (each would be
    sent in every request header, and the broker, not the input, would get the blame).
    `texts` are `-X KEY=VALUE` or `--mode-config MODE:KEY=VALUE` strings."""
    for text in texts:
        key, _, value = text.partition("=")
        key = key.rpartition(":")[2].strip()
        value = value.strip()
        if key == "transactional.id":
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > MAX_TRANSACTIONAL_ID_BYTES:
                raise UsageError(f"transactional.id is {size:,} bytes; Kafka allows at most "
                                 f"{MAX_TRANSACTIONAL_ID_BYTES:,} (a protocol string).")
            if not value.isprintable():
                raise UsageError(f"transactional.id {value[:40]!r} holds control characters; "
                                 "give printable text.")
            continue
        if key != "client.id":
            continue
        if len(value) > MAX_CLIENT_ID:
            raise UsageError(f"client.id has {len(value):,} characters; at most "
                             f"{MAX_CLIENT_ID:,} are allowed (it is sent in every request).")
        if not value.isprintable():
            raise UsageError(f"client.id {value!r} holds control characters; give printable "
                             "text (it is sent in every request).")


def other_mode_warnings(settings: ProducerSettings, mode: str) -> ProducerSettings:
    """Warn about every explicit setting that belongs to other modes and that
    `build_settings` did not already warn about: the run ignores it."""
    added = []
    for key in sorted(settings.explicit):
        readers = modes_reading(key)  # from the mode registry (producer_core.engine.modes)
        if not readers or mode in readers:
            continue
        if any(key in warning for warning in settings.warnings):
            continue
        added.append(f"{key} applies to mode{'s' if len(readers) > 1 else ''} "
                     f"{', '.join(readers)} only; ignored in mode {mode}")
    if not added:
        return settings
    return replace(settings, warnings=(*settings.warnings, *added))


def check_fits(workload: Workload, settings: ProducerSettings) -> None:
    """Refuse, before any broker starts, a message that could never fit one request."""
    check_message_fits(workload.topic_specs(), settings.max_request_size, "max.request.size")
