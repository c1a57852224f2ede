"""Buffer memory as the generator meets it: Java's batch accounting, and `max.block.ms`.

When the producer's memory is used up, the Java client's `send()` blocks (BufferPool
`allocate`) for at most `max.block.ms`, then throws for that record; the application's
next `send()` starts its own wait. kbatch's generator behaves the same way, so a message
that waited `max.block.ms` is counted as failed with reason `max.block.ms`, and the time
the generator spent blocked is reported, since it delays every later message.

Pure: no clock, no I/O; times come in as arguments (seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from producer_core.engine.core.record_batch import HEADER_SIZE
from producer_core.results.metrics import RunMetrics

MAX_BLOCK_REASON = "max.block.ms (buffer.memory exhausted)"
"""Failure reason of a message that waited `max.block.ms` for buffer memory."""


class BlockedGenerator:
    """Times the generator's waits for memory and fails messages whose wait ran out.

    An *episode* runs from the first time the generator has a message due and no memory,
    until it can append again. Within it, the first waiting message fails once it has
    waited `max.block.ms`; the next one's wait starts at that moment (as a thread calling
    Java's `send()` in order would see it). With `max.block.ms` 0 every message that meets
    exhausted memory fails at once.
    """

    def __init__(self, max_block_s: float, metrics: RunMetrics,
                 reason: str = MAX_BLOCK_REASON) -> None:
        self.max_block_s = max_block_s
        self.metrics = metrics
        self.reason = reason
        self.episode_start: float | None = None
        self.wait_start = 0.0

    @property
    def blocked(self) -> bool:
        return self.episode_start is not None

    def wait(self, now: float, waiting: int) -> int:
        """`waiting` messages are due and there is no memory: how many fail now.

        The failed messages are counted in the metrics with `reason`; the caller skips
        them (they are the first `n` of the waiting ones, in order).
        """
        if self.episode_start is None:
            self.episode_start = self.wait_start = now
            self.metrics.blocked_episodes += 1
        failed = 0
        # the same sum as `deadline()`: woken at the deadline, a message fails (a
        # difference `now - wait_start` can round below max.block.ms and spin)
        while failed < waiting and now >= self.wait_start + self.max_block_s:
            failed += 1
            self.wait_start += self.max_block_s
        if failed:
            self.metrics.fail(failed, self.reason)
        return failed

    def release(self, now: float) -> None:
        """Memory is available again (or the run ends): the episode is over."""
        if self.episode_start is None:
            return
        length = max(0.0, now - self.episode_start)
        self.metrics.blocked_s += length
        self.metrics.blocked_max_s = max(self.metrics.blocked_max_s, length)
        self.episode_start = None

    def deadline(self) -> float | None:
        """When the waiting message's `max.block.ms` runs out (None if not blocked)."""
        if self.episode_start is None:
            return None
        return self.wait_start + self.max_block_s


class BatchMemory:
    """Java's BufferPool accounting (mode java).

    Every batch holds `max(batch.size, one record)` bytes of `buffer.memory` from its
    creation until its response arrives (or it finally fails): queued batches, in-flight
    batches and batches waiting to be retried all count. A new batch needs a whole
    allocation, so memory is exhausted when one more allocation would not fit.
    """

    def __init__(self, limit: int, batch_bytes: int) -> None:
        self.limit = limit
        self.batch_bytes = batch_bytes
        self.held = 0
        """Batches drained from the accumulator whose outcome is not settled yet."""

    def used(self, queued_batches: int) -> int:
        return (queued_batches + self.held) * self.batch_bytes

    def exhausted(self, queued_batches: int) -> bool:
        return self.free(queued_batches) == 0

    def free(self, queued_batches: int) -> int:
        """New batches that still fit (each takes a whole allocation)."""
        return max(0, (self.limit - self.used(queued_batches)) // self.batch_bytes)


RECORD_OVERHEAD_MAX = 25
"""Most bytes a v2 record adds to its key, value and headers: its length, attributes,
timestamp and offset deltas and the field lengths, as varints (an upper bound)."""


def appendable(slots: Sequence[int], record_bytes: Sequence[int],
               open_room: Callable[[int], int | None], batch_size: int,
               free_batches: int) -> int:
    """How many of these records, in order, Java's `send()` appends before one blocks.

    A record goes into its partition's open batch while it fits there and needs no memory;
    one that does not fit needs a new batch, a whole allocation of `buffer.memory`
    (BufferPool `allocate`), and with none of the `free_batches` left, that `send()`
    blocks and every later record waits behind it. Blocking on any record once memory is
    used up would stop a generator whose next records all have room in open batches.
    `record_bytes` are upper bounds, so a record near a full batch may count as needing a
    new one. `open_room(slot)`: the bytes the slot's open batch can still take (a record
    fits when it is smaller), None when the slot has no open batch.
    """
    left: dict[int, int] = {}
    for index, (slot, size) in enumerate(zip(slots, record_bytes, strict=True)):
        space = left[slot] if slot in left else open_room(slot)
        if space is not None and size < space:
            left[slot] = space - size
            continue
        if free_batches == 0:
            return index
        free_batches -= 1
        left[slot] = batch_size - HEADER_SIZE - size  # the first record always fits
    return len(slots)
