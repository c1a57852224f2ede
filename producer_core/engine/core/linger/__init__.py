"""Linger policies: one module per policy, each pure (see `base.LingerPolicy`; the
collector policies of modes broker, adaptive and aimd share `collector.CollectorPolicy`).

Which mode builds which policy from which settings is declared in the mode's module
(`producer_core.engine.modes`); this package knows nothing of settings.
"""

from __future__ import annotations

from producer_core.engine.core.linger.base import (
    LingerPolicy,
    PollContext,
    QueueView,
    RequestLimits,
    RequestPlan,
)

__all__ = ["LingerPolicy", "PollContext", "QueueView", "RequestLimits", "RequestPlan"]
