"""librdkafka's C sources for the tests of own builds: kbatch's own fetch
(`producer_core.engine.drivers.librdkafka_source`, the rdkafka-sys crate through cargo). None when
cargo is not there, so the tests that need a tree skip (and fail under CI=true, where
.ci/run installs cargo: a skipped own-build test would hide a broken build path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from producer_core.engine.drivers.librdkafka_source import (
    CRATE,
    CRATE_VERSION,
    fetch_tree,
    find_cargo,
)

__all__ = ["CRATE", "CRATE_VERSION", "fetch_tree_or_none", "skip_without_cargo"]


def fetch_tree_or_none(work: Path) -> Path | None:
    """A fresh copy of librdkafka's tree under `work` (None: no cargo)."""
    if find_cargo() is None:
        return None
    return fetch_tree(work)


def skip_without_cargo(reason: str) -> None:
    """Skip the calling test for `reason`, or fail it under CI=true (.ci/run has cargo)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)
