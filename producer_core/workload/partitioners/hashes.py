"""Key hashes of both clients: Java's murmur2
(`producer_core.workload.partitioners.partitioner`) and librdkafka's CRC32
(`consistent`) and FNV-1a (`fnv1a`), each reduced to a partition as the client does."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from producer_core.workload.partitioners.partitioner import murmur2

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a(data: bytes) -> int:
    """32-bit FNV-1a, librdkafka's `rd_fnv1a` (unsigned)."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def crc32_partition(key: bytes, partitions: int) -> int:
    """librdkafka `consistent`: `rd_crc32(key) % n` (the zlib CRC-32)."""
    return zlib.crc32(key) % partitions


def murmur2_partition(key: bytes, partitions: int) -> int:
    """Java's default and librdkafka `murmur2`: `(murmur2(key) & 0x7fffffff) % n`."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def fnv1a_partition(key: bytes, partitions: int) -> int:
    """librdkafka `fnv1a`: the hash as a signed 32-bit int, its absolute value modulo n
    (Sarama-compatible; checked against librdkafka's own choices in the tests)."""
    h = fnv1a(key)
    return abs(h - (1 << 32) if h & 0x80000000 else h) % partitions


KEY_HASHES: dict[str, Callable[[bytes, int], int]] = {
    "consistent": crc32_partition,
    "consistent_random": crc32_partition,
    "murmur2": murmur2_partition,
    "murmur2_random": murmur2_partition,
    "fnv1a": fnv1a_partition,
    "fnv1a_random": fnv1a_partition,
}
"""librdkafka partitioner name -> the hash it applies to a non-empty key."""
