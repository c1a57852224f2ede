"""InitProducerId requests with the fields an idempotent producer needs.

aiokafka only has version 0 (transactional id and timeout). Brokers such as Tansu want a
producer id and epoch in the request (version 3+, KIP-360: -1/-1 for a new producer, the
current ones to bump the epoch), so versions 3 and 4 are declared here with aiokafka's own
protocol types; version negotiation picks the highest both sides know.
"""

from __future__ import annotations

from typing import Any

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.transaction import InitProducerIdRequest_v0
from aiokafka.protocol.types import CompactString, Int16, Int32, Int64, Schema, TaggedFields


class InitProducerIdResponse_v3(Response):
    API_KEY = 22
    API_VERSION = 3
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("tags", TaggedFields),
    )


class InitProducerIdResponse_v4(InitProducerIdResponse_v3):
    API_VERSION = 4


class InitProducerIdRequest_v3(RequestStruct):
    API_KEY = 22
    API_VERSION = 3
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = InitProducerIdResponse_v3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("transaction_timeout_ms", Int32),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("tags", TaggedFields),
    )


class InitProducerIdRequest_v4(InitProducerIdRequest_v3):
    API_VERSION = 4
    RESPONSE_TYPE = InitProducerIdResponse_v4


class IdempotentInitProducerId(
    Request[InitProducerIdRequest_v0 | InitProducerIdRequest_v3 | InitProducerIdRequest_v4]
):
    """InitProducerId for an idempotent producer (no transactional id). With a producer
    id and epoch (v3+), the broker bumps that epoch; v0 always gives a new producer id."""

    API_KEY = 22

    def __init__(self, producer_id: int = -1, epoch: int = -1, timeout_ms: int = 60_000,
                 transactional_id: str | None = None):
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        self.timeout_ms = timeout_ms

    def build(self, request_struct_class: type[Any]) -> RequestStruct:
        if request_struct_class.API_VERSION < 3:
            return request_struct_class(self.transactional_id, self.timeout_ms)
        return request_struct_class(self.transactional_id, self.timeout_ms, self.producer_id,
                                    self.epoch, {})
