"""The workload: what to send, how fast, and when each message was *meant* to be sent.

Latency is measured from a message's intended send time on the rate schedule, not from
when the generator got round to it (wrk2's correction for coordinated omission). The
schedule is therefore a pure function of the message index: message `i` of a constant-rate
run is due at `start + i / rate`, whatever the generator was doing at the time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from producer_core import bounds
from producer_core.errors import UsageError
from producer_core.workload.payload import PayloadSpec, file_value_sizes
from producer_core.workload.slot_layout import SlotLayout

MAX_CLOSED_LOOP_SENDERS = 10_000
"""More synchronous senders than this is an open loop in all but name."""

ID_BYTES = 8
"""Each value starts with the message id (8 bytes, big-endian) so a reader can check it."""


RATE_KINDS = ("constant", "step", "ramp", "poisson", "bursts", "max")
KEY_KINDS = ("none", "uniform", "zipf", "sequential")
SIZE_KINDS = ("fixed", "uniform", "weighted")


@dataclass(frozen=True)
class RateSpec:
    """A topic's rate profile (see `producer_core.workload.schedule`)."""

    kind: str = "constant"
    rate: float | None = 1000.0  # constant, poisson (mean), bursts (while on)
    steps: tuple[tuple[float, float], ...] = ()  # step: (rate, seconds) ...
    rate_from: float = 0.0  # ramp
    rate_to: float = 0.0
    over_s: float = 0.0
    on_s: float = 0.0  # bursts
    off_s: float = 0.0

    @property
    def mean_rate(self) -> float | None:
        """The long-run rate, for targets and reports (None when unthrottled)."""
        if self.kind == "max":
            return None
        if self.kind == "step":
            return self.steps[-1][0] if self.steps else 0.0
        if self.kind == "ramp":
            return self.rate_to
        if self.kind == "bursts":
            assert self.rate is not None
            return self.rate * self.on_s / (self.on_s + self.off_s)
        return self.rate


@dataclass(frozen=True)
class KeySpec:
    """How keys are chosen: none (keyless, round-robin), uniform, zipf or sequential."""

    kind: str = "none"
    count: int = 0
    exponent: float = 1.0  # zipf


@dataclass(frozen=True)
class SizeSpec:
    """Value sizes: fixed, uniform between min and max, or weighted choices."""

    kind: str = "fixed"
    size: int = 100
    minimum: int = 0
    maximum: int = 0
    sizes: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()

    def describe(self) -> dict[str, Any]:
        """The distribution in the workload file's own syntax, with its mean."""
        if self.kind == "uniform":
            return {"uniform": [self.minimum, self.maximum],
                    "mean": (self.minimum + self.maximum) / 2}
        if self.kind == "weighted":
            total = sum(self.weights)
            return {"weighted": [[s, w] for s, w in zip(self.sizes, self.weights, strict=True)],
                    "mean": round(sum(s * w for s, w in zip(self.sizes, self.weights,
                                                              strict=True)) / total, 3)}
        return {"fixed": self.size, "mean": float(self.size)}

    @property
    def largest(self) -> int:
        if self.kind == "uniform":
            return self.maximum
        if self.kind == "weighted":
            return max(self.sizes)
        return self.size


@dataclass(frozen=True)
class TopicSpec:
    """One topic of a workload: layout, rate profile, keys, sizes, headers, and any
    per-topic options of a mode (Bruce's batching thresholds and rate limit)."""

    name: str
    partitions: int
    rate: RateSpec = field(default_factory=RateSpec)
    keys: KeySpec = field(default_factory=KeySpec)
    sizes: SizeSpec = field(default_factory=SizeSpec)
    headers: tuple[tuple[str, bytes], ...] = ()
    batching: tuple[tuple[str, int], ...] = ()
    rate_limit: tuple[int, int] | None = None  # (interval ms, max messages per interval)
    payload: PayloadSpec = field(default_factory=PayloadSpec)
    partitioner: str | None = None  # a workload file's per-topic name; None: -X partitioner


@dataclass(frozen=True)
class Workload:
    """The run's load. The flat fields describe the one-topic case of the command line;
    `topics` (from a workload file) replaces them with any number of topics.
    `rate=None` means unthrottled (as fast as the engine goes)."""

    topic: str = "kbatch"
    partitions: int = 16
    rate: float | None = 1000.0
    duration_s: float | None = 10.0
    messages: int | None = None
    message_size: int = 100
    keys: int = 0  # 0: keyless (round-robin); N: uniform over N keys, murmur2-partitioned
    seed: int = 1
    warmup_s: float = 0.0
    topics: tuple[TopicSpec, ...] = ()
    share_index: int = 0
    """This run's share of a distributed run (see `share`); ids carry it."""
    share_count: int = 1
    start_at: float | None = None
    """Wall-clock instant (epoch seconds) the schedule starts at, so shares line up."""
    payload: PayloadSpec = field(default_factory=PayloadSpec)
    """What values are made of (every topic; see `producer_core.workload.payload`)."""
    closed_loop: int | None = None
    """N synchronous senders, each sending when its previous message completed (see
    `producer_core.workload.closed_loop`); None: the open-loop rate schedule."""
    think_time_s: float = 0.0
    """A closed loop's pause between an acknowledgement and the sender's next send."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        self._check_closed_loop(problems)
        if self.topics:
            self._check_topics(problems)
            self._check_run_wide(problems)
            if problems:
                raise UsageError("Invalid workload: " + "; ".join(problems) + ".")
            return
        name_problem = bounds.topic_name_problem(self.topic)
        if name_problem:
            problems.append(f"--topic: {name_problem}")
        if self.partitions < 1 or self.partitions > bounds.MAX_PARTITIONS:
            problems.append(f"--partitions must be 1 to {bounds.MAX_PARTITIONS} "
                            f"(got {self.partitions})")
        if self.rate is not None and not (bounds.MIN_RATE <= self.rate <= bounds.MAX_RATE):
            problems.append(f"--rate must be {bounds.MIN_RATE:g} to {bounds.MAX_RATE:,.0f} "
                            f"messages per second, or 'max' (got {self.rate})")
        if self.message_size < 0 or self.message_size > 64 * 1024 * 1024:
            problems.append(f"--message-size must be 0 to 67108864 bytes (got {self.message_size})")
        if not 0 <= self.keys <= bounds.MAX_KEYS:
            problems.append(f"--keys must be 0 (keyless) to {bounds.MAX_KEYS:,} "
                            f"(got {self.keys})")
        self._check_run_wide(problems)
        if problems:
            raise UsageError("Invalid workload: " + "; ".join(problems) + ".")

    def _check_closed_loop(self, problems: list[str]) -> None:
        if self.closed_loop is None:
            if self.think_time_s:
                problems.append("--think-time-ms applies to --closed-loop only")
            return
        if not 1 <= self.closed_loop <= MAX_CLOSED_LOOP_SENDERS:
            problems.append(f"--closed-loop must be 1 to {MAX_CLOSED_LOOP_SENDERS:,} senders "
                            f"(got {self.closed_loop})")
        if not 0 <= self.think_time_s <= bounds.MAX_DURATION_S:
            problems.append(f"--think-time-ms must be 0 to {bounds.MAX_DURATION_S * 1000:,.0f} "
                            f"(got {self.think_time_s * 1000:g})")
        if len(self.topics) > 1:
            problems.append("--closed-loop drives one topic; this workload has "
                            f"{len(self.topics)}")

    def _check_topics(self, problems: list[str]) -> None:
        if len(self.topics) > bounds.MAX_TOPICS:
            problems.append(f"at most {bounds.MAX_TOPICS:,} topics (got {len(self.topics):,})")
        partitions = sum(t.partitions for t in self.topics)
        if partitions > bounds.MAX_PARTITIONS:
            problems.append(f"the topics have {partitions:,} partitions together; at most "
                            f"{bounds.MAX_PARTITIONS:,} are allowed")

    def _check_run_wide(self, problems: list[str]) -> None:
        if self.duration_s is None and self.messages is None:
            problems.append("give --duration or --messages")
        if self.duration_s is not None and not (
                0 < self.duration_s <= bounds.MAX_DURATION_S):
            problems.append(f"--duration must be more than 0 and at most "
                            f"{bounds.MAX_DURATION_S:,.0f} seconds (got {self.duration_s})")
        if self.messages is not None and not 1 <= self.messages <= bounds.MAX_MESSAGES:
            problems.append(f"--messages must be 1 to {bounds.MAX_MESSAGES:,} "
                            f"(got {self.messages})")
        if not 0 <= self.seed <= bounds.MAX_SEED * 1000 + 999:  # shares: seed * 1000 + index
            problems.append(f"--seed must be 0 to {bounds.MAX_SEED} (got {self.seed})")
        if not (0 <= self.warmup_s <= bounds.MAX_DURATION_S):
            problems.append(f"--warmup must be 0 to {bounds.MAX_DURATION_S:,.0f} seconds "
                            f"(got {self.warmup_s})")
        elif (
            self.duration_s is not None
            and self.messages is None
            and self.warmup_s >= self.duration_s
        ):
            problems.append("--warmup must be shorter than --duration")

    def slot_layout(self) -> SlotLayout:
        """Its topics' partitions numbered as every driver numbers them (slots)."""
        return SlotLayout.of_topics((spec.name, spec.partitions) for spec in self.topic_specs())

    def topic_specs(self) -> tuple[TopicSpec, ...]:
        """The topics to produce to; the command line's one topic if no file gave any."""
        if self.topics:
            topics = self.topics
        else:
            rate = RateSpec("max", None) if self.rate is None else RateSpec("constant",
                                                                             self.rate)
            keys = KeySpec("uniform", self.keys) if self.keys else KeySpec()
            topics = (TopicSpec(self.topic, self.partitions, rate, keys,
                                SizeSpec("fixed", self.message_size)),)
        if self.payload == PayloadSpec():
            return topics
        sizes = None
        if self.payload.kind == "file":  # the file's records decide the sizes
            values, weights = file_value_sizes(self.payload, ID_BYTES)
            sizes = SizeSpec("weighted", sizes=values, weights=weights)
        return tuple(replace(t, payload=self.payload, sizes=sizes or t.sizes) for t in topics)

    def with_topic_suffix(self, suffix: str) -> Workload:
        """The same workload on fresh topics (compare-modes runs each mode on its own)."""
        if not self.topics:
            return replace(self, topic=f"{self.topic}{suffix}")
        return replace(self, topic=f"{self.topic}{suffix}", topics=tuple(
            replace(t, name=f"{t.name}{suffix}") for t in self.topics))

    def share(self, index: int, count: int, start_at: float | None) -> Workload:
        """Share `index` of `count`: every rate divided by `count`, the message cap split,
        its own seed, ids tagged with the share, and a common start instant."""
        def scale(rate: RateSpec) -> RateSpec:
            f = 1.0 / count
            return replace(
                rate,
                rate=None if rate.rate is None else rate.rate * f,
                steps=tuple((r * f, t) for r, t in rate.steps),
                rate_from=rate.rate_from * f, rate_to=rate.rate_to * f,
            )
        topics = tuple(replace(t, rate=scale(t.rate)) for t in self.topic_specs())
        messages = None
        if self.messages is not None:
            messages = self.messages // count + (1 if index < self.messages % count else 0)
        senders = self.closed_loop
        if senders is not None:  # the senders split as the messages are
            senders = max(1, senders // count + (1 if index < senders % count else 0))
        return replace(
            self, topics=topics, messages=messages, seed=self.seed * 1000 + index,
            rate=None if self.rate is None else self.rate / count,
            share_index=index, share_count=count, start_at=start_at, closed_loop=senders,
        )

    @property
    def target_rate(self) -> float | None:
        """Sum of the topics' long-run rates (None if any is unthrottled, or in a closed
        loop, where the rate is an outcome)."""
        if self.closed_loop is not None:
            return None
        rates = [t.rate.mean_rate for t in self.topic_specs()]
        return None if any(r is None for r in rates) else float(
            sum(r for r in rates if r is not None))

    @property
    def total_messages(self) -> int | None:
        """How many messages the run sends, if known in advance."""
        if self.topics or self.closed_loop is not None:
            return self.messages
        if self.messages is not None:
            if self.rate is not None and self.duration_s is not None:
                return min(self.messages, int(self.rate * self.duration_s))
            return self.messages
        if self.rate is not None and self.duration_s is not None:
            return int(self.rate * self.duration_s)
        return None

    def as_dict(self) -> dict[str, Any]:
        """The workload for the results JSON; `value_size` per topic is its distribution
        (a file's topics draw sizes, so one `message_size` would misreport them)."""
        data = asdict(self)
        data["value_size"] = {t.name: t.sizes.describe() for t in self.topic_specs()}
        if self.topics:
            data["message_size"] = None
        for topic in data["topics"]:
            topic["headers"] = [[k, v.decode("utf-8", "replace")] for k, v in topic["headers"]]
        return data


def message_id_of(value: bytes) -> int:
    """The id a value carries (see `message_source.TopicSource.values`; sizes >= 8)."""
    return int.from_bytes(value[:ID_BYTES], "big")


def values_carry_ids(spec: TopicSpec) -> bool:
    """Whether every value of the topic starts with its whole message id, so that
    `message_id_of` names the message a client reports on (values shorter than 8 bytes
    carry only the id's last bytes)."""
    sizes = spec.sizes
    smallest = {"uniform": sizes.minimum,
                "weighted": min(sizes.sizes, default=0)}.get(sizes.kind, sizes.size)
    return spec.payload.kind == "file" or smallest >= ID_BYTES
