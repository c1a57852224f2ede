"""Partition choice: Java-compatible murmur2 for keyed messages, round-robin for keyless.

Keyed messages must land where the Java client (and librdkafka's `murmur2_random`) would
put them, or comparisons against real clients mean nothing. Keyless messages are spread
round-robin one message at a time: it loads every partition evenly, which is what a
per-partition linger policy must be measured against (a sticky partitioner would hide the
cost of linger by filling one partition at a time).
"""

from __future__ import annotations

_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: 32-bit MurmurHash2 with seed 0x9747b28c, as a signed int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    end = length & ~3
    for i in range(0, end, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The Java default partitioner for a non-null key: `toPositive(murmur2(key)) % n`."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def key_bytes(index: int) -> bytes:
    """The key kbatch sends for key number `index` (`key-<index>`), stable across runs."""
    return b"key-%d" % index


def key_table(num_keys: int, num_partitions: int) -> tuple[list[bytes], list[int]]:
    """Keys and their partitions, computed once so the hot path only indexes lists."""
    keys = [key_bytes(i) for i in range(num_keys)]
    return keys, [partition_for_key(k, num_partitions) for k in keys]
