"""Payloads: random by default, a compressibility knob, records from a file; ids stay first."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from producer_core.errors import UsageError
from producer_core.workload.message_source import TopicSource
from producer_core.workload.payload import PayloadSpec, unescape
from producer_core.workload.workload import ID_BYTES, SizeSpec, TopicSpec, Workload, message_id_of


def _source(size: int = 1000, payload: PayloadSpec | None = None, seed: int = 1,
            sizes: SizeSpec | None = None) -> TopicSource:
    spec = TopicSpec("t", 8, sizes=sizes or SizeSpec("fixed", size),
                     payload=payload or PayloadSpec())
    return TopicSource(spec, 0, seed)


def _ratio(values: list[bytes]) -> float:
    data = b"".join(values)
    return len(data) / len(zlib.compress(data, 6))


def test_default_values_are_incompressible_and_carry_their_id() -> None:
    source = _source(1000)
    ids = range(source.id_base + 5000, source.id_base + 5400)
    values = source.values(ids)
    assert [message_id_of(v) for v in values] == list(ids)
    assert all(len(v) == 1000 for v in values)
    assert _ratio(values) < 1.01  # gzip cannot shrink them (the old pad gave 12x)
    assert len({v[ID_BYTES:] for v in values}) == len(values)  # no shared pad


def test_values_depend_on_the_message_not_on_how_passes_are_cut() -> None:
    one, two = _source(300), _source(300)
    whole = one.values(range(0, 900))
    pieces = two.values(range(0, 123)) + two.values(range(123, 700)) + two.values(
        range(700, 900))
    assert whole == pieces
    assert _source(300, seed=2).values(range(0, 10)) != whole[:10]


def test_compressibility_raises_the_compression_ratio() -> None:
    ratios = [_ratio(_source(1000, PayloadSpec(compressibility=r)).values(range(2000)))
              for r in (0.0, 0.5, 0.9)]
    assert ratios[0] < 1.01
    assert 1.3 < ratios[1] < ratios[2]
    assert ratios[2] > 2.3


def test_variable_sizes_keep_ids_and_sizes() -> None:
    source = _source(sizes=SizeSpec("uniform", minimum=3, maximum=2000))
    values = source.values(range(0, 500))
    assert all(3 <= len(v) <= 2000 for v in values)
    assert [message_id_of(v) for v in values if len(v) >= ID_BYTES] == [
        i for i, v in zip(range(0, 500), values, strict=True) if len(v) >= ID_BYTES]


def test_payload_file_records_follow_the_id(tmp_path) -> None:
    path = tmp_path / "records.txt"
    path.write_bytes(b'{"a": 1}\n{"b": 22}\n\n{"c": 333}\n')
    source = _source(payload=PayloadSpec("file", file=str(path)))
    values = source.values(range(0, 300))
    assert [message_id_of(v) for v in values] == list(range(300))
    bodies = {v[ID_BYTES:] for v in values}
    assert bodies == {b'{"a": 1}', b'{"b": 22}', b'{"c": 333}'}  # empty record dropped
    assert source.values(range(0, 300)) == values  # deterministic


def test_payload_delimiter(tmp_path) -> None:
    path = tmp_path / "records.bin"
    path.write_bytes(b"x|yy|zzz")
    source = _source(payload=PayloadSpec("file", file=str(path), delimiter="|"))
    assert {v[ID_BYTES:] for v in source.values(range(100))} == {b"x", b"yy", b"zzz"}
    assert unescape("\\t") == "\t"


def test_bad_payload_input_is_a_usage_error(tmp_path) -> None:
    with pytest.raises(UsageError, match="between 0 and 1"):
        PayloadSpec(compressibility=1.5)
    with pytest.raises(UsageError, match="Cannot read --payload-file"):
        _source(payload=PayloadSpec("file", file=str(tmp_path / "missing")))
    empty = tmp_path / "empty"
    empty.write_bytes(b"\n\n")
    with pytest.raises(UsageError, match="has no records"):
        _source(payload=PayloadSpec("file", file=str(empty)))


def test_workload_payload_reaches_every_topic() -> None:
    payload = PayloadSpec(compressibility=0.5)
    workload = Workload(payload=payload)
    assert workload.topic_specs()[0].payload == payload
    assert workload.as_dict()["payload"]["compressibility"] == 0.5


def test_a_payload_file_decides_the_value_sizes(tmp_path) -> None:
    from producer_core.engine.drivers.run_checks import check_message_fits

    path = tmp_path / "records.txt"
    path.write_bytes(b"ab\nabcd\nab\n" + b"x" * 5000 + b"\n")
    workload = Workload(payload=PayloadSpec("file", file=str(path)))
    [spec] = workload.topic_specs()
    assert spec.sizes.kind == "weighted" and spec.sizes.sizes == (10, 12, 5008)
    assert spec.sizes.weights == (0.5, 0.25, 0.25)
    assert workload.as_dict()["value_size"]["kbatch"]["weighted"][2] == [5008, 0.25]
    with pytest.raises(UsageError, match="5008 bytes"):  # the largest record must fit
        check_message_fits(workload.topic_specs(), 4000, "max.request.size")


def test_fixed_size_fast_path_gives_the_bytes_offsets_defines() -> None:
    """The run-by-run path (no numpy) cuts exactly the slices `offsets` places, across run
    boundaries and for passes of any size."""
    from producer_core.workload.message_source import TopicSource
    from producer_core.workload.payload import RUN, offsets

    spec = Workload(topic="t", partitions=8, rate=1000, duration_s=1,
                    message_size=100).topic_specs()[0]
    source = TopicSource(spec, 3, seed=7)
    assert source._fixed_body == 92
    first, stop = RUN - 5, 3 * RUN + 7  # crosses three run boundaries
    seqs = np.arange(first, stop, dtype=np.int64)
    starts = offsets(seqs, source._salt, source._span, source._stride).tolist()
    expected = [(source.id_base + s).to_bytes(8, "big") + source.buffer[o:o + 92]
                for s, o in zip(range(first, stop), starts, strict=True)]
    base = source.id_base
    assert source.values(range(base + first, base + stop)) == expected
    for begin, end in ((0, 64), (0, 128), (5, 5 + 1000), (RUN - 5, RUN + 60)):
        # the bulk path cuts values 64 at a time, then the rest: whole chunks, a tail
        # and a pass below the bulk threshold give the same bytes
        want = [(base + s).to_bytes(8, "big") + source.buffer[o:o + 92] for s, o in zip(
            range(begin, end), offsets(np.arange(begin, end), source._salt, source._span,
                                       source._stride).tolist(), strict=True)]
        assert source.values(range(base + begin, base + end)) == want
    one_by_one = [source.values(range(base + s, base + s + 1))[0] for s in range(first, stop)]
    assert one_by_one == expected
