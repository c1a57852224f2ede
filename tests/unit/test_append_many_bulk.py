"""`Accumulator.append_many` (grouped by slot, records sized to fit appended in bulk) against
`append_each` (one record at a time, the reference): the same batches byte for byte, ids,
intended times, events and accounting, over keyed and keyless passes, fixed and varying
sizes, batch boundaries crossed, headers and compression, pass after pass."""

from __future__ import annotations

import random
import zlib

import pytest

from producer_core.engine.core.accumulator import (
    BULK_MIN_PER_SLOT,
    BULK_MIN_RECORDS,
    Accumulator,
    TopicPartition,
)

SLOTS = [TopicPartition("t", p) for p in range(8)]


def bulk_passes(seed: int, keyed: bool, sizes: str, slot_pattern: str, passes: int = 12):
    """Generator passes: (slots, ids, keys, values, intended, now, timestamp_ms)."""
    rng = random.Random(seed)
    next_id = 1000
    timestamp = 1_700_000_000_000
    for number in range(passes):
        count = rng.choice([BULK_MIN_RECORDS, BULK_MIN_RECORDS + 1, 100, 500, 1000, 3])
        if slot_pattern == "round_robin":
            start = rng.randrange(len(SLOTS))
            slots = [(start + i) % len(SLOTS) for i in range(count)]
        elif slot_pattern == "one":
            slots = [3] * count
        else:
            slots = [rng.randrange(len(SLOTS)) for _ in range(count)]
        if sizes == "fixed":
            values = [bytes([i % 251]) * 100 for i in range(count)]
        elif sizes == "varying":
            values = [rng.randbytes(rng.choice([0, 1, 10, 63, 64, 100, 900, 5000]))
                      for _ in range(count)]
        else:  # a record larger than the batch now and then: it goes alone
            values = [rng.randbytes(rng.choice([50, 3000])) for _ in range(count)]
        keys = ([rng.randbytes(rng.choice([0, 1, 8, 40])) for _ in range(count)]
                if keyed else None)
        ids = range(next_id, next_id + count)
        next_id += count
        now = 10.0 + number * 0.001
        intended = [now - rng.random() * 0.01 for _ in range(count)]
        # timestamps move back sometimes (wall clock), the deltas stay exact
        timestamp += rng.choice([0, 1, 7, 300_000, -5])
        yield slots, ids, keys, values, intended, now, timestamp


def accumulator_state(acc: Accumulator) -> list:
    """Everything a batch holds, built to bytes (sealing also closes the batches)."""
    out = []
    for queue in acc.queues:
        for batch in queue:
            out.append((batch.slot, batch.closed, batch.created, batch.record_bytes,
                        batch.ids.tolist(), batch.intended.tolist(), batch.size_bytes(),
                        bytes(batch.builder.build()) if batch.builder else batch.payload))
    return out


@pytest.mark.parametrize("compression", ["none", "zstd"])  # gzip stamps the time
@pytest.mark.parametrize("headers", [[], [("trace", b"abc"), ("nil", None)]])
@pytest.mark.parametrize("slot_pattern", ["round_robin", "random", "one"])
@pytest.mark.parametrize("sizes", ["fixed", "varying", "oversized"])
@pytest.mark.parametrize("keyed", [False, True])
def test_bulk_matches_record_by_record(keyed, sizes, slot_pattern, headers, compression):
    batch_size = 4096 if sizes != "oversized" else 2048
    bulk = Accumulator(SLOTS, batch_size, compression)
    each = Accumulator(SLOTS, batch_size, compression)
    seed = zlib.crc32(repr((keyed, sizes, slot_pattern, headers, compression)).encode())
    filled = 0
    for number, (slots, ids, keys, values, intended, now, ts) in enumerate(
            bulk_passes(seed, keyed, sizes, slot_pattern)):
        got = bulk.append_many(slots, ids, keys, values, intended, now, ts, headers)
        want = each.append_each(slots, ids, keys, values, intended, now, ts, headers)
        assert got == want, f"events differ in pass {number}"
        filled += sum(1 for _, event in want if event == 2)
        assert (bulk.queued_bytes, bulk.queued_records, bulk.queued_batches) == (
            each.queued_bytes, each.queued_records, each.queued_batches)
        if number % 4 == 3:  # drain some heads between passes, as the sender would
            for slot in range(0, len(SLOTS), 2):
                if bulk.head(slot) is not None:
                    a, b = bulk.pop_head(slot, now), each.pop_head(slot, now)
                    assert a.seal() == b.seal()
                    assert (a.ids, a.intended, a.record_bytes) == (b.ids, b.intended,
                                                                   b.record_bytes)
    assert filled > 0, "the inputs must cross batch boundaries"
    assert accumulator_state(bulk) == accumulator_state(each)
    assert (bulk.queued_bytes, bulk.queued_records) == (each.queued_bytes, each.queued_records)


def test_record_bytes_are_the_builders_record_sizes():
    """queued_bytes counts each record's size as the builder reports it (its metadata),
    independently of the reference loop."""
    acc = Accumulator(SLOTS, 1024)
    count = 300
    values = [b"v" * (i % 37) for i in range(count)]
    slots = [i % 3 for i in range(count)]
    acc.append_many(slots, range(count), None, values, [1.0] * count, 1.0, 5)
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    total = 0
    for queue in acc.queues:
        for batch in queue:
            probe = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1024)
            for offset, message_id in enumerate(batch.ids):
                total += probe.append(offset, 5, None, values[message_id], []).size
            assert batch.record_bytes == probe.size() - 61  # 61: the v2 batch header
            assert batch.size_bytes() == probe.size()
    assert acc.queued_bytes == total
    assert acc.queued_records == count


def test_lengths_must_agree():
    acc = Accumulator(SLOTS, 1024)
    with pytest.raises(ValueError):
        acc.append_many([0] * 999, range(1000), None, [b"x"] * 1000, [0.0] * 1000, 0.0, 0)
    with pytest.raises(ValueError):
        acc.append_many([0] * 1000, range(1001), None, [b"x"] * 1000, [0.0] * 1000, 0.0, 0)


def test_large_passes_take_the_grouped_path_small_ones_do_not(monkeypatch):
    """The equivalence test above compares the grouped path only if large passes use it."""
    acc = Accumulator(SLOTS, 1024)
    calls = []
    reference = acc.append_each
    monkeypatch.setattr(acc, "append_each", lambda *a: calls.append(len(a[3])) or reference(*a))
    big = BULK_MIN_PER_SLOT * len(SLOTS) + BULK_MIN_RECORDS
    for count in (big, 10):
        acc.append_many([i % len(SLOTS) for i in range(count)], range(count), None,
                        [b"x"] * count, [0.0] * count, 0.0, 0)
    assert calls == [10]
    assert acc.queued_records == big + 10
