"""A multi-broker Kafka lab on one machine (see ``cluster.Lab``)."""

from producer_core.brokers.lab.cluster import MAX_BROKERS, Lab, validate_shape
from producer_core.brokers.lab.delay import DelayModel
from producer_core.brokers.lab.layout import Layout, Node

__all__ = ["MAX_BROKERS", "DelayModel", "Lab", "Layout", "Node", "validate_shape"]
