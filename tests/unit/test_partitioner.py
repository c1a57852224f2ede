"""murmur2 must agree with the Java client, or keyed comparisons are meaningless."""

import pytest

from producer_core.workload.partitioners.partitioner import key_table, murmur2, partition_for_key

# Values from Apache Kafka's UtilsTest.testMurmur2 (Java).
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), JAVA_MURMUR2.items())
def test_murmur2_matches_java(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_partition_is_positive_hash_modulo_partitions() -> None:
    # toPositive(-973932308) = -973932308 & 0x7fffffff = 1173551340
    assert partition_for_key(b"21", 7) == 1173551340 % 7
    assert all(0 <= partition_for_key(k, 3) < 3 for k in JAVA_MURMUR2)


def test_key_table_is_stable_and_spread() -> None:
    keys, partitions = key_table(1000, 10)
    assert keys[5] == b"key-5"
    assert partitions == key_table(1000, 10)[1]
    counts = [partitions.count(p) for p in range(10)]
    assert min(counts) > 60  # roughly uniform: 100 expected per partition
