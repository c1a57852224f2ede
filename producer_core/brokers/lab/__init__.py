"""A multi-broker Kafka lab on one machine (see ``cluster.Lab``).

The names below load on first use (PEP 562): importing a light submodule of the lab
(``state``, ``shape``, ``delay``) must not load the lab cluster, which needs the Kafka
client library, or `kbatch lab up --help` would wait for it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from producer_core.brokers.lab.cluster import Lab
    from producer_core.brokers.lab.delay import DelayModel
    from producer_core.brokers.lab.layout import Layout, Node
    from producer_core.brokers.lab.shape import MAX_BROKERS, validate_shape

_HOMES = {
    "Lab": "cluster",
    "DelayModel": "delay",
    "Layout": "layout",
    "Node": "layout",
    "MAX_BROKERS": "shape",
    "validate_shape": "shape",
}

__all__ = ["MAX_BROKERS", "DelayModel", "Lab", "Layout", "Node", "validate_shape"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
