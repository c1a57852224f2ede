"""The engine's run as a pure state machine: what each turn of its loop does, and when the
next turn is.

One run goes through phases: *generate* (append what the schedule says is due, let the
producer send, pace the passes), *flush a transaction* (when one is due, or the last one
at the end: the generator waits meanwhile, as kafka-producer-perf-test's send loop waits
in commitTransaction, so the cost shows in the latency of the messages due during it),
*await EndTxn*, *drain* (after the last message: send what is queued until every batch has
its outcome) and, after a stop request, *interrupt* (in-flight requests get a short grace,
then what is open ends `interrupted`).

`turn()` does one turn's work at the injected clock's time and answers what the shell does
next: sleep until a time or an event (`Turn.wake_at`), only let pending callbacks run
(`Turn.yield_only`), or stop (`Turn.done`). Commands go to the injected `execute` at once,
in order, as they are made (a written request changes what the next decision sees). No
asyncio, no socket: tests drive it with a synthetic clock (tests/unit/test_run_control.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto

from producer_core.engine.core.events import Command, Send, SendInputs, Stop
from producer_core.engine.core.memory import BlockedGenerator, appendable
from producer_core.engine.core.producer import Producer
from producer_core.engine.drivers.generator import Generator
from producer_core.engine.drivers.run_types import INTERRUPTED

GENERATOR_PASS_INTERVAL_S = 0.00025
"""Least time between two *small* generator passes that wait for the schedule. Each pass
costs tens of microseconds whatever it appends; at 20,000 msg/s a pass per message kept
the process busy (~9,000 passes/s, 0.75 of a core) and its broker, sharing the two cores,
answered more slowly. After a pass of fewer than `SMALL_PASS_MESSAGES` the next waits at
least this long, so it appends a few messages, each at most this much late (counted as
generator lag, and in latency, which starts at the intended time). Larger passes are not
paced: at 200,000 msg/s pacing them raised the lag p99 from ~0.45 to ~1 ms. Linger and
request deadlines are never paced."""
SMALL_PASS_MESSAGES = 8
"""A pass appending fewer messages than this is small: the next one is paced."""


@dataclass(frozen=True)
class Turn:
    """What the shell does after a turn: sleep until `wake_at` or an event (None: until an
    event), or with `yield_only` let pending callbacks run and turn again at once."""

    wake_at: float | None = None
    yield_only: bool = False
    done: bool = False


YIELD = Turn(yield_only=True)
DONE = Turn(done=True)


class Phase(Enum):
    GENERATE = auto()
    FLUSH_TRANSACTION = auto()
    AWAIT_END_TXN = auto()
    DRAIN = auto()
    FINISH = auto()
    INTERRUPT = auto()
    DONE = auto()


class RunControl:
    """One engine run's control flow around a `Producer` and a `Generator`."""

    def __init__(self, producer: Producer, generator: Generator, blocked: BlockedGenerator,
                 clock: Callable[[], float], execute: Callable[[list[Command]], None],
                 stop_grace_s: float) -> None:
        self.producer = producer
        self.generator = generator
        self.blocked = blocked
        self.clock = clock
        self.execute = execute
        self.stop_grace_s = stop_grace_s
        """After a stop request: how long in-flight requests may still be answered."""
        self.stop_requested = False
        """Set by the shell (a stop request): the run ends at the next turn."""
        self.phase = Phase.GENERATE
        self.inputs = SendInputs()
        """What this run tells the producer at each send (`Producer.send_ready`): the
        generator's backlog and memory as of its last pass, and whether it is done."""
        self._after_transaction = Phase.GENERATE
        self._catch_up = False
        self._next_pass_at = -math.inf
        """A small pass was the last: the next pass is not before this, even when a
        response or a linger deadline wakes the loop earlier (GENERATOR_PASS_INTERVAL_S)."""
        self._grace_end: float | None = None
        self._in_grace = False

    def begin(self, start: float, warmup_s: float = 0.0) -> None:
        """The schedule starts at `start`."""
        self.generator.begin(start)
        self.producer.begin(start, warmup_s)

    def turn(self) -> Turn:
        """Do what is due now; return what to wait for."""
        while True:
            if self.stop_requested and self.phase in (
                    Phase.GENERATE, Phase.FLUSH_TRANSACTION, Phase.DRAIN, Phase.FINISH):
                if self.phase is Phase.GENERATE:
                    self.inputs.flushing = True
                self._enter_interrupt()
            phase = self.phase
            if phase is Phase.GENERATE:
                result = self._generate()
            elif phase is Phase.FLUSH_TRANSACTION:
                result = self._flush_transaction()
            elif phase is Phase.AWAIT_END_TXN:
                result = self._await_end_txn()
            elif phase is Phase.DRAIN:
                result = self._drain()
            elif phase is Phase.FINISH:
                self.phase = Phase.DONE
                result = DONE
            elif phase is Phase.INTERRUPT:
                result = self._interrupt()
            else:
                result = DONE
            if result is not None:
                return result

    # ------------------------------------------------------------------ phases
    def _generate(self) -> Turn | None:
        """One generator pass: expire, append what is due (or wait for memory), send."""
        producer, generator, blocked = self.producer, self.generator, self.blocked
        now = self.clock()
        self.execute(producer.expire(now))
        paced = now < self._next_pass_at  # woken early by an event: send, do not append
        due = 0 if paced else generator.due(now)
        if not paced:
            appendable = self._appendable(now, due)
            if appendable:
                blocked.release(now)
                generator.generate(now, appendable)
            exhausted = appendable < due
            if exhausted:  # wait for memory; a message that waited max.block.ms fails
                failed = blocked.wait(now, due - appendable)
                if failed:
                    generator.skip(failed, now, "max.block.ms")
            self.inputs.memory_exhausted = exhausted
        if producer.txn is not None:
            self._raise_fatal()
            self.execute(producer.track_partitions())
            if producer.transaction_due(now) and not generator.finished(now):
                self._end_transaction(then=Phase.GENERATE)
                return None
        # the oldest message not appended yet; with an unthrottled topic one always is
        self.inputs.backlog = -math.inf if generator.unthrottled else generator.next_due()
        sends = producer.send_ready(now, self.inputs)
        self.execute(sends)
        if generator.finished(now):
            blocked.release(now)
            if producer.txn is not None:
                self._end_transaction(then=Phase.FINISH)
            else:
                self.inputs.flushing = True
                self.phase = Phase.DRAIN
            return None
        return self._pace(now, due, any(isinstance(c, Send) for c in sends), paced)

    def _appendable(self, now: float, due: int) -> int:
        """How many of the `due` messages can be appended before one waits for memory.

        Mode java counts Java's allocations: a message waits only when it needs a new batch
        and none fits (`appendable`); where the generator cannot tell the messages'
        partitions in advance, the whole pass waits once no new batch fits. The other
        modes count bytes: once they are used up, every message waits."""
        if due == 0:
            return 0
        producer = self.producer
        free = producer.free_batches()
        if free is None:
            return 0 if producer.memory_full() else due
        if free >= due:  # even one new batch per message fits
            return due
        records = self.generator.due_records(now)
        if records is None:
            return due if free else 0
        accumulator = producer.accumulator
        return appendable(*records, accumulator.open_room, accumulator.batch_size, free)

    def _pace(self, now: float, due: int, sent: bool, paced: bool) -> Turn | None:
        """When the next pass runs: at once (behind the schedule, or unthrottled), after
        the pass interval (small passes), at the next due message, policy or request
        deadline, or, blocked on memory, when max.block.ms runs out. `paced`: this turn
        came before the interval was over and made no pass: the interval stands."""
        producer, generator, blocked = self.producer, self.generator, self.blocked
        waiting = generator.due(now) if blocked.blocked else 0
        memory_full = waiting > 0 and self._appendable(now, waiting) == 0
        next_due = generator.next_due()
        if not paced:
            small = due < SMALL_PASS_MESSAGES
            self._next_pass_at = now + GENERATOR_PASS_INTERVAL_S if small else now
        pacing = self._next_pass_at > now
        pace = GENERATOR_PASS_INTERVAL_S if pacing else 0.0
        # behind: late by more than the pace (less waits for the paced pass below)
        behind = next_due is not None and next_due + pace <= self.clock()
        if not memory_full and (generator.unthrottled or behind):
            # after a send, one more pass appends what came due during it; then yield
            self._catch_up = sent and not self._catch_up
            return None if self._catch_up else YIELD
        wake = producer.next_wakeup()
        if next_due is not None and pacing:
            next_due = max(next_due, self._next_pass_at)
        if memory_full and (blocked.blocked or generator.unthrottled):
            # blocked on memory: wait for a response to free some, or max.block.ms
            next_due = blocked.deadline()
        candidates = [t for t in (wake, next_due) if t is not None]
        return Turn(min(candidates) if candidates else None)

    def _end_transaction(self, then: Phase) -> None:
        """The open transaction ends: flush it, then EndTxn; the generator waits."""
        self.producer.begin_transaction_end(self.clock())
        self._after_transaction = then
        self.phase = Phase.FLUSH_TRANSACTION

    def _flush_transaction(self) -> Turn | None:
        producer = self.producer
        waiting = self._drain_pass()
        if waiting is not None:
            return waiting
        self._raise_fatal()
        self.execute(producer.finish_transaction(self.clock()))
        if producer.adding_partitions:  # an AddPartitionsToTxn in flight must finish
            return Turn()
        self.phase = Phase.AWAIT_END_TXN
        return None

    def _await_end_txn(self) -> Turn | None:
        """EndTxn is in flight (a stop waits for it too)."""
        self._raise_fatal()
        if self.producer.transaction_ending:
            return Turn()
        self.phase = self._after_transaction
        return None

    def _drain(self) -> Turn | None:
        """After the last message: until every batch has its outcome (each is bounded by
        delivery.timeout.ms)."""
        waiting = self._drain_pass()
        if waiting is None:
            self.phase = Phase.FINISH
        return waiting

    def _drain_pass(self) -> Turn | None:
        """Expire, send what is ready; a turn to wait for, or None once nothing is left."""
        producer = self.producer
        now = self.clock()
        self.execute(producer.expire(now))
        if producer.txn is not None:
            self._raise_fatal()
            self.execute(producer.track_partitions())
        self.execute(producer.send_ready(now, self.inputs))
        if producer.idle:
            return None
        return Turn(producer.next_wakeup())

    # ---------------------------------------------------------------- stopping
    def _enter_interrupt(self) -> None:
        """Stopped: no more sends; in-flight requests get a short grace."""
        self.producer.metrics.complete = False
        self._grace_end = self.clock() + self.stop_grace_s
        self.execute(self.producer.handle(Stop(), self.clock()))
        self.phase = Phase.INTERRUPT

    def _interrupt(self) -> Turn | None:
        """Until the in-flight requests are answered or the grace ends; then what is still
        open is unknown (in flight) or failed (never sent)."""
        producer = self.producer
        assert self._grace_end is not None
        if self._in_grace:
            self.execute(producer.expire(self.clock()))
        if producer.requests_in_flight and self.clock() < self._grace_end:
            self._in_grace = True
            return Turn(self._grace_end)
        producer.close(INTERRUPTED, self.clock())
        self.phase = Phase.DONE
        return DONE

    def _raise_fatal(self) -> None:
        if self.producer.fatal is not None:
            raise self.producer.fatal
