"""Workload files: YAML describing topics, rates, keys, sizes and run-wide options.

YAML rather than TOML because its parser keeps the line of every node, so every error
names the file, the line and the field (`mix.yaml:14: topics[2].rate.ramp.over_s: must be
a positive number`). The format is documented in docs/guides/workloads.md ("Workload files").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from producer_core import bounds
from producer_core.errors import UsageError
from producer_core.input_files import read_regular_file
from producer_core.workload.partitioners import PARTITIONERS
from producer_core.workload.workload import KeySpec, RateSpec, SizeSpec, TopicSpec, Workload
from producer_core.workload.yaml_guard import LOADER, check_plain_yaml

MAX_PARTITIONS = bounds.MAX_PARTITIONS
MAX_FILE_BYTES = 1024 * 1024
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]+")
BATCHING_KEYS = ("max_delay_ms", "max_bytes", "max_messages")


class WorkloadFileError(UsageError):
    """A workload file is unreadable or invalid; the message names file, line and field."""


@dataclass
class Field:
    """A YAML node with where it came from, for precise error messages."""

    node: yaml.Node
    where: str
    file: str

    def fail(self, message: str) -> WorkloadFileError:
        line = self.node.start_mark.line + 1
        return WorkloadFileError(f"{self.file}:{line}: {self.where}: {message}.")

    @property
    def is_map(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    @property
    def is_list(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    def items(self) -> dict[str, Field]:
        if not self.is_map:
            raise self.fail("expected a mapping of key: value")
        out: dict[str, Field] = {}
        for key_node, value_node in self.node.value:
            key = str(key_node.value)
            if key in out:
                raise Field(key_node, self._sub(key), self.file).fail("given twice")
            out[key] = Field(value_node, self._sub(key), self.file)
        return out

    def elements(self) -> list[Field]:
        if not self.is_list:
            raise self.fail("expected a list")
        return [Field(n, f"{self.where}[{i}]", self.file) for i, n in enumerate(self.node.value)]

    def _sub(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.fail("expected a single value")
        return yaml.safe_load(yaml.serialize(self.node))

    def string(self) -> str:
        value = self.scalar()
        if not isinstance(value, str) or not value:
            raise self.fail("expected a non-empty text")
        return value

    def number(self, minimum: float = 0.0, positive: bool = True,
               maximum: float = 1e15) -> float:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value) or value < minimum or (positive and value <= 0) or value > maximum:
            want = "a positive number" if positive else f"a number >= {minimum:g}"
            top = f"{maximum:,.0f}" if 1000 <= maximum < 1e12 else f"{maximum:g}"
            raise self.fail(f"must be {want} up to {top} (got {value!r})")
        return float(value)

    def rate(self, positive: bool = True) -> float:
        """Messages per second, within kbatch's bounds (0 allowed unless `positive`)."""
        value = self.number(positive=positive, maximum=bounds.MAX_RATE)
        if positive and value < bounds.MIN_RATE:
            raise self.fail(f"must be at least {bounds.MIN_RATE:g} messages per second "
                            f"(got {value!r})")
        return value

    def seconds(self) -> float:
        return self.number(maximum=bounds.MAX_DURATION_S)

    def integer(self, minimum: int = 1, maximum: int | None = None) -> int:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
                maximum is not None and value > maximum):
            bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
            raise self.fail(f"must be a whole number {bound} (got {value!r})")
        return value


def _one_of(field: Field, kinds: tuple[str, ...]) -> tuple[str, Field | None]:
    """`kind` or `{kind: value}`: the form every choice in the file takes."""
    if isinstance(field.node, yaml.ScalarNode) and isinstance(field.scalar(), str):
        kind = field.scalar()
        if kind in kinds:
            return kind, None
    if field.is_map and len(field.node.value) == 1:
        kind, value = next(iter(field.items().items()))
        if kind in kinds:
            return kind, value
    raise field.fail(f"expected one of {', '.join(kinds)}, e.g. {{{kinds[0]}: ...}}")


def _rate(field: Field) -> RateSpec:
    kind, value = _one_of(field, ("constant", "poisson", "step", "ramp", "bursts", "max"))
    if kind == "max":
        return RateSpec("max", None)
    assert value is not None
    if kind in ("constant", "poisson"):
        return RateSpec(kind, value.rate())
    if kind == "step":
        steps = []
        elements = value.elements()
        if len(elements) > bounds.MAX_STEPS:
            raise value.fail(f"at most {bounds.MAX_STEPS} steps (got {len(elements)})")
        for element in elements:
            pair = element.elements()
            if len(pair) != 2:
                raise element.fail("each step is [rate, seconds]")
            steps.append((pair[0].rate(positive=False), pair[1].seconds()))
        if not steps:
            raise value.fail("give at least one [rate, seconds] step")
        return RateSpec("step", None, steps=tuple(steps))
    spec = value.items()
    _require(value, spec, {"ramp": ("from", "to", "over_s"),
                           "bursts": ("rate", "on_s", "off_s")}[kind])
    if kind == "ramp":
        return RateSpec("ramp", None, rate_from=spec["from"].rate(positive=False),
                        rate_to=spec["to"].rate(), over_s=spec["over_s"].seconds())
    return RateSpec("bursts", spec["rate"].rate(), on_s=spec["on_s"].seconds(),
                    off_s=spec["off_s"].seconds())


def _require(field: Field, spec: dict[str, Field], keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in spec]
    unknown = [k for k in spec if k not in keys]
    if missing:
        raise field.fail(f"missing {', '.join(missing)} (needs {', '.join(keys)})")
    if unknown:
        raise spec[unknown[0]].fail(f"unknown field; allowed: {', '.join(keys)}")


def _keys(field: Field) -> KeySpec:
    kind, value = _one_of(field, ("none", "uniform", "zipf", "sequential"))
    if kind == "none":
        return KeySpec()
    assert value is not None
    if kind == "zipf":
        spec = value.items()
        _require(value, spec, ("keys", "exponent"))
        return KeySpec("zipf", spec["keys"].integer(1, bounds.MAX_KEYS),
                       spec["exponent"].number(maximum=100))
    return KeySpec(kind, value.integer(1, bounds.MAX_KEYS))


def _sizes(field: Field) -> SizeSpec:
    if isinstance(field.node, yaml.ScalarNode):
        return SizeSpec("fixed", field.integer(0, 64 * 1024 * 1024))
    kind, value = _one_of(field, ("fixed", "uniform", "weighted"))
    assert value is not None
    if kind == "fixed":
        return SizeSpec("fixed", value.integer(0, 64 * 1024 * 1024))
    if kind == "uniform":
        pair = value.elements()
        if len(pair) != 2:
            raise value.fail("expected [min, max]")
        low, high = pair[0].integer(0), pair[1].integer(0, 64 * 1024 * 1024)
        if low > high:
            raise value.fail(f"min {low} is larger than max {high}")
        return SizeSpec("uniform", minimum=low, maximum=high)
    sizes, weights = [], []
    for element in value.elements():
        pair = element.elements()
        if len(pair) != 2:
            raise element.fail("each choice is [size, weight]")
        sizes.append(pair[0].integer(0, 64 * 1024 * 1024))
        weights.append(pair[1].number(maximum=1e9))
    if not sizes:
        raise value.fail("give at least one [size, weight]")
    return SizeSpec("weighted", sizes=tuple(sizes), weights=tuple(weights))


TOPIC_FIELDS = ("name", "partitions", "rate", "keys", "value_size", "headers", "batching",
                "rate_limit", "count", "rate_skew", "partitioner")


def _topics(field: Field) -> list[TopicSpec]:
    spec = field.items()
    unknown = [k for k in spec if k not in TOPIC_FIELDS]
    if unknown:
        raise spec[unknown[0]].fail(f"unknown field; allowed: {', '.join(TOPIC_FIELDS)}")
    for needed in ("name", "partitions", "rate"):
        if needed not in spec:
            raise field.fail(f"missing {needed}")
    name = spec["name"].string()
    if not TOPIC_NAME.fullmatch(name.replace("{i}", "0")) or len(name) > 240 or name in (
            ".", ".."):
        raise spec["name"].fail("a topic name has 1-240 of a-z A-Z 0-9 . _ - (and {i} in "
                                "a group), and is neither '.' nor '..'")
    partitions = spec["partitions"].integer(1, MAX_PARTITIONS)
    rate = _rate(spec["rate"])
    keys = _keys(spec["keys"]) if "keys" in spec else KeySpec()
    sizes = _sizes(spec["value_size"]) if "value_size" in spec else SizeSpec()
    headers: tuple[tuple[str, bytes], ...] = ()
    if "headers" in spec:
        headers = tuple((k, str(v.scalar()).encode()) for k, v in spec["headers"].items().items())
    batching: tuple[tuple[str, int], ...] = ()
    if "batching" in spec:
        items = spec["batching"].items()
        for key, value in items.items():
            if key not in BATCHING_KEYS:
                raise value.fail(f"unknown threshold; allowed: {', '.join(BATCHING_KEYS)}")
        batching = tuple((k, v.integer(1)) for k, v in items.items())
    rate_limit = None
    if "rate_limit" in spec:
        items = spec["rate_limit"].items()
        _require(spec["rate_limit"], items, ("interval_ms", "max_messages"))
        rate_limit = (items["interval_ms"].integer(1), items["max_messages"].integer(0))
    partitioner = None
    if "partitioner" in spec:
        partitioner = spec["partitioner"].string()
        if partitioner not in PARTITIONERS:
            raise spec["partitioner"].fail(f"unknown partitioner; allowed: "
                                           f"{', '.join(PARTITIONERS)}")
    count = spec["count"].integer(1, bounds.MAX_TOPICS) if "count" in spec else 1
    if count == 1 and "rate_skew" in spec:
        raise spec["rate_skew"].fail("only meaningful with count > 1")
    skew = spec["rate_skew"].number(positive=False, maximum=100) if "rate_skew" in spec else 0.0
    if count > 1 and "{i}" not in name:
        raise spec["name"].fail("with count > 1 the name needs {i}, e.g. orders-{i}")
    if count > 1 and rate.kind not in ("constant", "poisson"):
        raise spec["rate"].fail("a group (count > 1) splits a constant or poisson rate")
    if count * partitions > MAX_PARTITIONS:
        raise spec["count"].fail(f"{count} topics of {partitions} partitions make "
                                 f"{count * partitions:,} partitions; at most "
                                 f"{MAX_PARTITIONS:,} are allowed in a workload")
    weights = [1.0 / (i + 1) ** skew for i in range(count)]
    total_weight = sum(weights)
    out = []
    for i in range(count):
        share = rate if count == 1 else group_share(rate, weights[i] / total_weight, i, count)
        out.append(TopicSpec(name.replace("{i}", str(i)), partitions, share, keys, sizes,
                             headers, batching, rate_limit, partitioner=partitioner))
    return out


def group_share(rate: RateSpec, fraction: float, index: int, count: int) -> RateSpec:
    """Topic `index`'s part of a group's rate. A constant rate's first message is
    staggered by index/count of the topic's own period, so the group's messages
    interleave and its total rate holds from the first second (without it every topic's
    message 0 would be due at t=0: a burst of `count` messages). The delay is a silent
    first step; a poisson rate needs none (its first arrival is already random)."""
    own = (rate.rate or 0.0) * fraction
    delay = index / count / own if own > 0 else 0.0
    if rate.kind != "constant" or delay <= 0:
        return RateSpec(rate.kind, own)
    return RateSpec("step", own, steps=((0.0, delay), (own, 1.0)))


def is_staggered(rate: RateSpec) -> bool:
    """A group topic's staggered constant rate (see `group_share`): a step profile that
    also carries its rate (a profile written in a file has none)."""
    return rate.kind == "step" and rate.rate is not None


RUN_FIELDS = ("duration_s", "messages", "warmup_s", "seed", "topics")


def parse_workload(text: str, file: str = "<workload>") -> Workload:
    """Parse and validate a workload file's text."""
    if len(text) > MAX_FILE_BYTES:
        raise WorkloadFileError(f"{file}: {len(text):,} characters is too large for a workload "
                                f"file (at most {MAX_FILE_BYTES:,}).")
    try:
        check_plain_yaml(text, file)
        root = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise WorkloadFileError(f"{file}{line}: not valid YAML: "
                                f"{getattr(exc, 'problem', exc)}.") from None
    if root is None:
        raise WorkloadFileError(f"{file}: the file is empty; it needs at least `topics:`.")
    top = Field(root, "", file).items()
    unknown = [k for k in top if k not in RUN_FIELDS]
    if unknown:
        raise top[unknown[0]].fail(f"unknown field; allowed: {', '.join(RUN_FIELDS)}")
    if "topics" not in top:
        raise Field(root, "topics", file).fail("missing: list at least one topic")
    topics: list[TopicSpec] = []
    for element in top["topics"].elements():
        topics.extend(_topics(element))
    if not topics:
        raise top["topics"].fail("list at least one topic")
    names = [t.name for t in topics]
    seen: set[str] = set()
    duplicate = None
    for name in names:  # the first name seen a second time
        if name in seen:
            duplicate = name
            break
        seen.add(name)
    if duplicate:
        raise top["topics"].fail(f"topic {duplicate!r} appears twice")
    duration = top["duration_s"].seconds() if "duration_s" in top else None
    messages = top["messages"].integer(1, bounds.MAX_MESSAGES) if "messages" in top else None
    if duration is None and messages is None:
        raise Field(root, "duration_s", file).fail("give duration_s or messages")
    if duration is None and any(t.rate.kind == "bursts" for t in topics):
        raise Field(root, "duration_s", file).fail("a bursts profile needs duration_s")
    warmup = top["warmup_s"].number(positive=False, maximum=bounds.MAX_DURATION_S) \
        if "warmup_s" in top else 0.0
    if duration is not None and warmup >= duration:
        raise top["warmup_s"].fail("must be shorter than duration_s")
    seed = top["seed"].integer(0, bounds.MAX_SEED) if "seed" in top else 1
    for topic, element in zip(topics, _topic_fields(top["topics"]), strict=False):
        if topic.rate.kind == "bursts" and duration is not None and duration / (
                topic.rate.on_s + topic.rate.off_s) > bounds.MAX_BURST_CYCLES:
            raise element.fail(f"bursts of {topic.rate.on_s:g} s on and {topic.rate.off_s:g} s "
                               f"off make more than {bounds.MAX_BURST_CYCLES:,} cycles in "
                               f"{duration:g} s; lengthen them")
    if sum(t.partitions for t in topics) > MAX_PARTITIONS:
        raise top["topics"].fail(f"the topics have {sum(t.partitions for t in topics):,} "
                                 f"partitions together; at most {MAX_PARTITIONS:,} are allowed")
    total_rate = [t.rate.mean_rate for t in topics]
    return Workload(
        topic=topics[0].name if len(topics) == 1 else f"{len(topics)} topics",
        partitions=sum(t.partitions for t in topics),
        rate=None if any(r is None for r in total_rate) else float(
            sum(r for r in total_rate if r is not None)),
        duration_s=duration, messages=messages, seed=seed, warmup_s=warmup,
        topics=tuple(topics),
    )


def _topic_fields(topics: Field) -> list[Field]:
    """The `rate` field behind every topic (a group repeats its entry's field)."""
    out = []
    for element in topics.elements():
        spec = element.items()
        count = spec["count"].scalar() if "count" in spec else 1
        out.extend([spec["rate"]] * int(count))
    return out


def load_workload(path: Path) -> Workload:
    """Read and validate a workload file (docs/guides/workloads.md)."""
    try:
        text = read_regular_file(path, "workload file", MAX_FILE_BYTES,
                                 WorkloadFileError).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkloadFileError(f"Cannot read workload file {path}: not UTF-8 text "
                                f"(byte {exc.start}).") from None
    return parse_workload(text, str(path))


def silent_topics(workload: Workload) -> list[str]:
    """Names of the topics whose rate profile sends nothing within the run (for example
    `step: [[0, 1], [0, 1]]`, or a first silent step longer than duration_s)."""
    from producer_core.workload.message_source import make_schedule, scheduled_total

    silent = []
    for spec in workload.topics:
        rate = spec.rate
        if is_staggered(rate):  # a group's constant rate: it sends, later in the group
            continue
        never = rate.kind == "step" and all(r == 0 for r, _ in rate.steps)
        within = rate.kind in ("step", "ramp") and workload.duration_s is not None and \
            scheduled_total(make_schedule(spec, workload.duration_s, 0)) == 0
        if never or within:
            silent.append(spec.name)
    return silent


def check_sends_something(workload: Workload, file: str) -> list[str]:
    """Warnings for topics that send nothing; an error if no topic sends anything and only
    `messages` ends the run (it would wait for ever)."""
    silent = silent_topics(workload)
    if not silent:
        return []
    if len(silent) == len(workload.topics) and workload.duration_s is None:
        raise WorkloadFileError(
            f"{file}: no topic's rate profile ever sends a message, and without duration_s "
            "the run would wait for ever for its messages. Give a rate above 0.")
    names = ", ".join(silent[:5]) + (f" and {len(silent) - 5} more" if len(silent) > 5 else "")
    return [f"{file}: topic{'s' if len(silent) > 1 else ''} {names} send nothing within the "
            "run: every rate of the profile is 0 until duration_s ends."]
