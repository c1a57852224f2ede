"""What size a lab may have: a module of its own, so a command's `--help` (which quotes
the limit) and a size check before a run need no client library."""

from __future__ import annotations

from producer_core.errors import UsageError

MAX_BROKERS = 16
"""Each backend is a Tansu process (~15 MB, two runtime threads); more than this on one
machine measures the machine, not the producer."""


def validate_shape(brokers: int, base_port: int | None = None) -> None:
    """Refuse a lab size or port range that cannot work, saying what is allowed."""
    if not 1 <= brokers <= MAX_BROKERS:
        raise UsageError(
            f"--brokers {brokers} is out of range: a lab has 1 to {MAX_BROKERS} brokers "
            "(each is a Tansu process on this machine)."
        )
    if base_port is not None and not (base_port >= 1 and base_port + brokers - 1 <= 65535):
        raise UsageError(
            f"--base-port {base_port} with --brokers {brokers} needs ports {base_port} to "
            f"{base_port + brokers - 1}; ports go from 1 to 65535."
        )
