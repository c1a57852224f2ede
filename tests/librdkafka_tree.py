"""librdkafka's C sources for the tests of own builds: kbatch's own fetch
(`producer_core.engine.drivers.librdkafka_source`, the rdkafka-sys crate through cargo). None when
cargo is not there, so the tests that need a tree skip."""

from __future__ import annotations

from pathlib import Path

from producer_core.engine.drivers.librdkafka_source import (
    CRATE,
    CRATE_VERSION,
    fetch_tree,
    find_cargo,
)

__all__ = ["CRATE", "CRATE_VERSION", "fetch_tree_or_none"]


def fetch_tree_or_none(work: Path) -> Path | None:
    """A fresh copy of librdkafka's tree under `work` (None: no cargo)."""
    if find_cargo() is None:
        return None
    return fetch_tree(work)
