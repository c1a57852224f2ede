"""What message values are made of: random bytes, text-like bytes, or records from a file.

A real producer's values do not compress like one pad repeated in every record, so by
default every value is incompressible: seeded random bytes. Values are slices of one
large pre-generated buffer, so making them costs a slice and one concatenation (the
message id in the first 8 bytes), not a random draw per byte. The slice of message `seq`
starts at a multiplicative hash of `seq`: deterministic per message whatever the
generator's pass boundaries, and spread so that the records of one batch do not overlap
(which an LZ codec would find).

`compressibility R` mixes text into that buffer: each 256-byte block is text with
probability R (words of a fixed Zipf-distributed vocabulary, like log lines or JSON
fields), else random bytes, so the compression ratio grows with R (docs/findings/compression.md).

`file`: values are the records of a file (one per line, or split at a delimiter), as
kafka-producer-perf-test's --payload-file; message `seq` carries record `hash(seq) mod
count`, prefixed with its 8-byte id so delivery can still be verified.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from producer_core.errors import UsageError
from producer_core.input_files import read_regular_file

PAYLOAD_KINDS = ("random", "file")
BUFFER_BYTES = 16 << 20
"""Random buffer per seed (shared by the topics of a run); values are slices of it."""
RUN = 256
"""Consecutive messages whose payloads are adjacent slices (see `offsets`)."""
BLOCK = 256
"""Granularity of the text/random mix of `compressibility`."""
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive sequences


@dataclass(frozen=True)
class PayloadSpec:
    """How values are made: `random` (with `compressibility` 0..1 of text) or `file`."""

    kind: str = "random"
    compressibility: float = 0.0
    file: str | None = None
    delimiter: str = "\n"

    def __post_init__(self) -> None:
        if self.kind not in PAYLOAD_KINDS:
            raise UsageError(f"Unknown payload kind {self.kind!r}: use one of "
                             f"{', '.join(PAYLOAD_KINDS)}.")
        if not 0.0 <= self.compressibility <= 1.0:
            raise UsageError(f"--compressibility must be between 0 and 1 (got "
                             f"{self.compressibility}): the share of the payload that is "
                             "text-like rather than random.")
        if self.kind == "file":
            if not self.file:
                raise UsageError("A file payload needs --payload-file FILE.")
            if not self.delimiter:
                raise UsageError("--payload-delimiter must not be empty.")
            if self.compressibility:
                raise UsageError("--compressibility applies to generated payloads, not to "
                                 "--payload-file (whose records are sent as they are).")


def offsets(seqs: np.ndarray, salt: int, span: int, stride: int = 0) -> np.ndarray:
    """A deterministic, well-spread position in [0, span) for each sequence number.

    With a `stride`, each run of `RUN` consecutive sequences gets one hashed base and its
    members follow each other `stride` apart: neighbours never overlap, and reading them
    walks memory in order (random positions per value cost a cache miss each, 3x slower).
    """
    if stride <= 0 or span <= RUN * stride:
        mixed = (seqs.astype(np.uint64) + np.uint64(salt)) * _MIX
        return ((mixed >> np.uint64(20)) % np.uint64(max(span, 1))).astype(np.int64)
    runs = (seqs // RUN).astype(np.uint64)
    mixed = (runs + np.uint64(salt)) * _MIX
    bases = ((mixed >> np.uint64(20)) % np.uint64(span - RUN * stride)).astype(np.int64)
    return bases + (seqs % RUN) * stride


def run_slices(first: int, stop: int, salt: int, span: int, stride: int
               ) -> list[tuple[int, int, int]]:
    """`offsets(seqs, salt, span, stride)` for `range(first, stop)` with a stride, per run:
    (first seq, stop seq, offset of the first) for each run of `RUN` sequences the range
    touches, in plain integers. A pass of a few messages then costs no numpy call (each
    costs microseconds), and the values of a run are one contiguous slice of the buffer."""
    assert stride > 0 and span > RUN * stride
    room = span - RUN * stride
    pieces = []
    seq = first
    while seq < stop:
        run = seq // RUN
        end = min(stop, (run + 1) * RUN)
        base = ((((run + salt) * _MIX_INT) & _MASK) >> 20) % room
        pieces.append((seq, end, base + (seq - run * RUN) * stride))
        seq = end
    return pieces


_MASK = (1 << 64) - 1
_MIX_INT = int(_MIX)


@functools.lru_cache(maxsize=4)
def random_buffer(seed: int, compressibility: float, size: int = BUFFER_BYTES) -> bytes:
    """`size` seeded bytes: random, with a share `compressibility` of text blocks."""
    rng = np.random.default_rng([seed, 0x9A71])
    data = np.frombuffer(rng.bytes(size), dtype=np.uint8).copy()
    if compressibility > 0:
        blocks = data[: size - size % BLOCK].reshape(-1, BLOCK)
        chosen = rng.random(len(blocks)) < compressibility
        text = np.frombuffer(_text(rng, max(BLOCK, min(size, 4 << 20))), dtype=np.uint8)
        rows = text[: len(text) - len(text) % BLOCK].reshape(-1, BLOCK)
        blocks[chosen] = rows[rng.integers(0, len(rows), int(chosen.sum()))]
    return data.tobytes()


def _text(rng: np.random.Generator, size: int) -> bytes:
    """Word-like text: a 500-word vocabulary drawn Zipf-like, spaces and line breaks."""
    letters = np.frombuffer(b"etaoinshrdlucmfwypvbgkjqxz", dtype=np.uint8)
    lengths = rng.integers(2, 10, 500)
    vocabulary = [
        bytes(letters[np.minimum(rng.geometric(0.2, n) - 1, 25)]) for n in lengths
    ]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    picks = rng.choice(len(vocabulary), size // 5, p=weights / weights.sum())
    words = [vocabulary[i] for i in picks]
    for i in range(11, len(words), 12):
        words[i] += b"\n"
    text = b" ".join(words)
    while len(text) < size:
        text += text
    return text[:size]


MAX_PAYLOAD_FILE_BYTES = 512 * 1024 * 1024
"""Every record of a payload file is held in memory for the run's whole length."""


def read_records(path: str, delimiter: str) -> list[bytes]:
    """The records of a payload file (empty records dropped), or a clear error."""
    data = read_regular_file(path, "--payload-file", MAX_PAYLOAD_FILE_BYTES)
    sep = unescape(delimiter).encode("utf-8")
    records = [r for r in data.split(sep) if r]
    if not records:
        raise UsageError(f"--payload-file {path} has no records (split at "
                         f"{delimiter!r}): give a file with at least one.")
    return records


def unescape(text: str) -> str:
    """`\\n`, `\\t`, `\\r` and `\\0` as typed on a command line, as the characters."""
    for escaped, char in (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ("\\0", "\0")):
        text = text.replace(escaped, char)
    return text


@functools.lru_cache(maxsize=4)
def cached_records(path: str, delimiter: str) -> tuple[bytes, ...]:
    return tuple(read_records(path, delimiter))


def file_value_sizes(spec: PayloadSpec, id_bytes: int) -> tuple[tuple[int, ...],
                                                                tuple[float, ...]]:
    """The value sizes a payload file yields (record length + the id) and their shares:
    records are drawn uniformly, so this is exactly the values' size distribution."""
    assert spec.file is not None
    lengths = np.array([len(r) for r in cached_records(spec.file, spec.delimiter)])
    sizes, counts = np.unique(lengths + id_bytes, return_counts=True)
    return tuple(int(s) for s in sizes), tuple(float(c) for c in counts / counts.sum())
