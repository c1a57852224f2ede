"""CRC-32C (Castagnoli), the checksum of a Kafka RecordBatch v2, computed in hardware.

aiokafka's `calc_crc32c` is a table-driven loop: ~8.5 µs for a 16 KiB batch, ~55 ns of
every 100-byte record kbatch sends (docs/findings/performance.md, issue 23). google-crc32c uses
the CPU's CRC32 instruction (SSE 4.2 / ARMv8): ~0.7 µs for the same batch. Without its
C extension (a platform with no wheel) kbatch falls back to aiokafka's, same results.
"""

from __future__ import annotations

from aiokafka.record.util import calc_crc32c

try:
    import google_crc32c
except ImportError:  # pragma: no cover - google-crc32c is a dependency
    google_crc32c = None  # type: ignore[assignment]  # HARDWARE below checks for it

HARDWARE = google_crc32c is not None and google_crc32c.implementation == "c"
"""True when the fast implementation is in use."""


def crc32c(head: bytes, tail: bytes = b"") -> int:
    """The CRC-32C of `head` followed by `tail` (two pieces: a batch's header fields and
    its records, without joining them first)."""
    if HARDWARE:
        crc: int = google_crc32c.extend(google_crc32c.value(head), tail)  # untyped C module
        return crc
    fallback: int = calc_crc32c(head + tail)  # pragma: no cover - no google-crc32c extension
    return fallback
