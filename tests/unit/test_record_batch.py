"""`RecordBatchWriter` against aiokafka's C `DefaultRecordBatchBuilder`: the same refusals
and the same built bytes, record by record (`append`, any shape) and in runs
(`append_run`, same-sized keyless records), with every codec and producer state; and
`Accumulator.append_many(value_size=...)`, which builds writer batches, against the
record-by-record reference."""

from __future__ import annotations

import random
import time
import zlib

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from producer_core.engine.core.accumulator import COMPRESSION_CODES, Accumulator
from producer_core.engine.core.record_batch import NO_HEADERS_FIELD, RecordBatchWriter, varint
from tests.unit.test_append_many_bulk import SLOTS, accumulator_state, bulk_passes

CODECS = list(COMPRESSION_CODES)


@pytest.fixture
def fixed_clock(monkeypatch):
    """gzip writes the current time into its header: pin it so both builders agree."""
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)


def _builders(codec: str, batch_size: int):
    code = COMPRESSION_CODES[codec]
    return (RecordBatchWriter(code, batch_size),
            DefaultRecordBatchBuilder(2, code, 0, -1, -1, -1, batch_size))


def test_varint_is_kafkas_zigzag():
    assert [varint(v) for v in (0, -1, 1, 63, 64, -65, 100, 8191, 8192)] == [
        b"\x00", b"\x01", b"\x02", b"\x7e", b"\x80\x01", b"\x81\x01", b"\xc8\x01",
        b"\xfe\x7f", b"\x80\x80\x01"]


@pytest.mark.parametrize("codec", CODECS)
def test_any_record_as_the_c_builder(codec, fixed_clock):
    rng = random.Random(zlib.crc32(codec.encode()))
    for batch_size in (200, 1024, 16384):
        ours, theirs = _builders(codec, batch_size)
        timestamp = 1_700_000_000_000
        for offset in range(300):
            key = rng.choice([None, b"", rng.randbytes(rng.choice([1, 70, 300]))])
            value = rng.choice([None, b"", rng.randbytes(rng.choice([1, 63, 64, 500]))])
            headers = rng.choice([[], [("h", b"x")], [("trace-id", None), ("é", b"")]])
            timestamp += rng.choice([0, 1, 70, 10_000, -3])
            got = ours.append(offset, timestamp, key, value, headers)
            want = theirs.append(offset, timestamp, key, value, headers)
            assert (got is None) == (want is None)
            if want is None:
                break
            assert got.size == want.size
            assert ours.size() == theirs.size()
        ours.set_producer_state(4242, 7, 1_000)
        theirs.set_producer_state(4242, 7, 1_000)
        built = ours.build()
        assert built == bytes(theirs.build())
        assert DefaultRecordBatch(built).validate_crc()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("value_size", [0, 8, 50, 100, 1000])
def test_runs_as_the_c_builder_record_by_record(codec, value_size, fixed_clock):
    rng = random.Random(zlib.crc32(f"{codec}{value_size}".encode()))
    for batch_size in (100, 2048, 16384, 50_000):
        ours, theirs = _builders(codec, batch_size)
        timestamp = 1_700_000_000_000
        offset = 0
        full = False
        if rng.random() < 0.5:  # an open batch that already holds another shape
            assert ours.append(0, timestamp, b"k", b"v" * 3, [("h", None)]).size == \
                theirs.append(0, timestamp, b"k", b"v" * 3, [("h", None)]).size
            offset = 1
        while not full:
            count = rng.choice([1, 2, 15, 64, 200])
            values = [rng.randbytes(value_size) for _ in range(count + 4)]
            begin = rng.randrange(4)
            timestamp += rng.choice([0, 1, 63, 64, 9000, -2])
            taken = _run(ours, timestamp, values[begin:begin + count], value_size)
            want = 0
            for value in values[begin:begin + count]:
                if theirs.append(offset + want, timestamp, None, value, []) is None:
                    full = True
                    break
                want += 1
            assert taken == want
            assert ours.size() == theirs.size()
            offset += taken
        assert offset > 0
        ours.set_producer_state(9, 0, 2_147_483_000)
        theirs.set_producer_state(9, 0, 2_147_483_000)
        assert ours.build() == bytes(theirs.build())


def _run(writer: RecordBatchWriter, timestamp: int, values: list[bytes], value_size: int
         ) -> int:
    """What the accumulator does with a writer: plan, then append the framed records."""
    taken, prefixes, size = writer.plan(timestamp, len(values), value_size)
    framed = b"".join(p + v + NO_HEADERS_FIELD
                      for p, v in zip(prefixes, values[:taken], strict=True))
    assert len(framed) == size
    writer.chunks.append(framed)
    return taken


def test_a_wrong_value_size_is_refused():
    acc = Accumulator(SLOTS, 16384)
    values = [b"x" * 10] * 300 + [b"y" * 11]
    with pytest.raises(ValueError):
        acc.append_many([0] * 301, range(301), None, values, [0.0] * 301, 0.0, 1, [],
                        value_size=10)


def test_planned_records_must_be_appended_before_building():
    writer = RecordBatchWriter(0, 16384)
    assert writer.plan(1, 3, 10)[0] == 3
    with pytest.raises(RuntimeError):
        writer.build()


@pytest.mark.parametrize("compression", ["none", "lz4"])
@pytest.mark.parametrize("slot_pattern", ["round_robin", "random", "one"])
@pytest.mark.parametrize("batch_size", [300, 4096])
def test_append_many_in_runs_matches_record_by_record(compression, slot_pattern, batch_size):
    """Writer batches (large passes) and C-builder batches (small passes) mix in one
    slot's queue; every batch, id, intended time, event and count is the reference's."""
    runs = Accumulator(SLOTS, batch_size, compression)
    each = Accumulator(SLOTS, batch_size, compression)
    seed = zlib.crc32(repr((compression, slot_pattern, batch_size)).encode())
    writers = 0
    for number, (slots, ids, _, values, intended, now, ts) in enumerate(
            bulk_passes(seed, False, "fixed", slot_pattern, passes=16)):
        got = runs.append_many(slots, ids, None, values, intended, now, ts, [],
                               value_size=100)
        want = each.append_each(slots, ids, None, values, intended, now, ts, [])
        assert got == want, f"events differ in pass {number}"
        assert (runs.queued_bytes, runs.queued_records, runs.queued_batches) == (
            each.queued_bytes, each.queued_records, each.queued_batches)
        writers += sum(isinstance(b.builder, RecordBatchWriter)
                       for queue in runs.queues for b in queue)
        if number % 4 == 3:
            for slot in range(0, len(SLOTS), 2):
                if runs.head(slot) is not None:
                    a, b = runs.pop_head(slot, now), each.pop_head(slot, now)
                    a.stamp(77, 1, 5 * number)
                    b.stamp(77, 1, 5 * number)
                    assert a.seal() == b.seal()
                    assert (a.ids, a.intended, a.record_bytes) == (b.ids, b.intended,
                                                                   b.record_bytes)
    assert writers > 0, "large passes must build writer batches"
    assert accumulator_state(runs) == accumulator_state(each)


def test_transactional_stamp_patches_a_writer_batch():
    acc = Accumulator(SLOTS, 16384)
    count = 512
    acc.append_many([0] * count, range(count), None, [b"z" * 20] * count, [0.0] * count,
                    0.0, 1_000, [], value_size=20)
    batch = acc.pop_head(0, 0.0)
    assert isinstance(batch.builder, RecordBatchWriter)
    batch.stamp(5, 2, 40, transactional=True)
    parsed = DefaultRecordBatch(batch.payload)
    assert parsed.validate_crc() and parsed.is_transactional
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (5, 2, 40)
    assert [r.value for r in parsed] == [b"z" * 20] * count
