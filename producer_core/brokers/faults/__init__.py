"""Faults injected into a cluster kbatch started, during a run (``--fault SPEC``)."""

from producer_core.brokers.faults.spec import ACTIONS, FaultSpec, parse_fault, parse_faults

__all__ = ["ACTIONS", "FaultSpec", "parse_fault", "parse_faults"]
