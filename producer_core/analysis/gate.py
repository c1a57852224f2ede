"""Performance gates: rules over saved results, each with a measured value, limit and verdict.

A gates file is TOML (see docs/guides/gate-ci.md); every rule is one comparison::

    METRIC OP LIMIT        OP: <= < >= > == !=
                           LIMIT: NUMBER | METRIC | NUMBER * METRIC | METRIC * NUMBER

A METRIC is ``MODE.NAME``: NAME is a summary metric of compare-modes (``p99_ms``,
``requests_sent``, ... , optionally ``.median``/``.min``/``.max`` over the rounds; median
by default) or a dotted path into a run's JSON (``latency.p999_ms``,
``collector.partitions_per_send.mean``; the median over rounds). ``baseline.MODE.NAME``
reads the baseline results instead. MODE is a run's mode label as the results name it,
with a client version or build after ``@`` (``kafka-java.p99_ms``,
``librdkafka@2.10.0.p99_ms``, ``franz-go@v1.18.0.requests_sent``,
``librdkafka@build-<hex>.failed``): a version's own dots stay in the mode (`split_metric`).
Names the results schema does not know are errors,
as are metrics absent from these results: a gate never passes by not looking.

Pure: no click, no printing. The CLI (`kbatch gate`) renders verdicts and exits
0 (all pass), 1 (a rule fails) or 2 (malformed gates file, unknown or missing metric).
"""

from __future__ import annotations

import math
import operator
import re
import statistics
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from producer_core.config import MODES
from producer_core.errors import UsageError
from producer_core.input_files import read_regular_file
from producer_core.results.metric_catalog import SUMMARY, SUMMARY_METRICS
from producer_core.results.results_io import GROUPED_KINDS, run_group
from producer_core.results.schema_check import resolve_ref

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAIL",
    "EXIT_PASS",
    "GateFileError",
    "Gates",
    "MetricError",
    "MetricSource",
    "Rule",
    "Verdict",
    "evaluate",
    "exit_code",
    "format_number",
    "load_gates",
    "parse_check",
    "parse_gates",
    "split_metric",
]

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2

OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt,
    "==": operator.eq, "!=": operator.ne,
}
STATS = ("median", "min", "max")
BASELINE = "baseline"

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_METRIC = r"(?:baseline\.)?[A-Za-z_][\w-]*(?:@[0-9A-Za-z][\w.+-]*)?(?:\.\w+)*"
"""``MODE.NAME``: a mode label may hold ``-`` (``kafka-java``) and a version after ``@``
whose dots are its own (``librdkafka@2.10.0.p99_ms``; `split_metric` tells them apart)."""
_CHECK = re.compile(rf"^\s*(?P<lhs>{_METRIC})\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<rhs>.*?)\s*$")
_RHS_FORMS = (
    re.compile(rf"^(?P<num>{_NUM})$"),
    re.compile(rf"^(?P<metric>{_METRIC})$"),
    re.compile(rf"^(?P<num>{_NUM})\s*\*\s*(?P<metric>{_METRIC})$"),
    re.compile(rf"^(?P<metric>{_METRIC})\s*\*\s*(?P<num>{_NUM})$"),
)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_TOP_KEYS = {"baseline", "description", "rule"}
_RULE_KEYS = {"check", "why", "metric", "max_increase", "max_decrease"}

CHECK_HELP = (
    "expected METRIC OP LIMIT, where OP is one of <= < >= > == != and LIMIT is a number, "
    "a metric, or NUMBER * METRIC; for example 'broker.p99_ms <= 600' or "
    "'broker.requests_sent <= 0.05 * partition.requests_sent'"
)


class GateFileError(UsageError):
    """The gates file cannot be read or a rule in it is malformed."""


class MetricError(UsageError):
    """A rule names a metric that does not exist, or that these results do not hold."""


@dataclass(frozen=True)
class Limit:
    """The right-hand side of a rule: ``factor * metric``, or ``factor`` alone."""

    factor: float
    metric: str | None = None

    def __str__(self) -> str:
        if self.metric is None:
            return format_number(self.factor)
        if self.factor == 1.0:
            return self.metric
        return f"{format_number(self.factor)} * {self.metric}"


@dataclass(frozen=True)
class Rule:
    number: int
    """1-based position in the gates file, for messages."""
    check: str
    lhs: str
    op: str
    limit: Limit
    why: str = ""

    @property
    def metrics(self) -> list[str]:
        return [self.lhs] + ([self.limit.metric] if self.limit.metric else [])


@dataclass(frozen=True)
class Gates:
    rules: list[Rule]
    baseline: Path | None = None
    description: str = ""


@dataclass
class Verdict:
    rule: Rule
    measured: float | None = None
    limit: float | None = None
    passed: bool | None = None
    error: str | None = None
    limit_detail: str = ""

    @property
    def status(self) -> str:
        if self.error is not None:
            return "ERROR"
        return "pass" if self.passed else "FAIL"

    def limit_text(self) -> str:
        if self.limit is None:
            return "-"
        text = f"{self.rule.op} {format_number(self.limit)}"
        return f"{text} = {self.limit_detail}" if self.limit_detail else text

    def reason(self) -> str:
        """One sentence a person can act on."""
        rule = self.rule
        if self.error is not None:
            return f"rule {rule.number} ({rule.check}): {self.error}"
        # without an error both are set
        measured = format_number(self.measured)  # type: ignore[arg-type]  # see above
        limit = format_number(self.limit)  # type: ignore[arg-type]  # see above
        detail = f" = {self.limit_detail}" if self.limit_detail else ""
        verb = "holds" if self.passed else "fails"
        text = (f"rule {rule.number} {verb}: {rule.lhs} = {measured} is "
                f"{'' if self.passed else 'not '}{rule.op} {limit}{detail}")
        return text + (f". {rule.why}" if rule.why and not self.passed else "")


def format_number(value: float) -> str:
    """Integers with thousands separators, others with up to 3 decimals."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


# --------------------------------------------------------------------------- parsing


MAX_METRIC_CHARS = 256
"""The longest metric name kbatch's results have is under 80 characters; a dotted name is
looked up longest key first (keys may hold dots), so its length must be bounded."""
MAX_KEY_DOTS = 8
"""Dots one results key may hold (settings such as ``broker.batch.max.partitions``)."""


def check_metric_length(metric: str, where: str) -> None:
    if len(metric) > MAX_METRIC_CHARS:
        raise GateFileError(f"{where}: the metric name {metric[:40]!r}... has {len(metric):,} "
                            f"characters; metric names have at most {MAX_METRIC_CHARS}.")


def parse_check(text: str, where: str = "check") -> tuple[str, str, Limit]:
    """Split ``METRIC OP LIMIT`` into its parts; GateFileError if it is not that."""
    if len(text) > 4 * MAX_METRIC_CHARS:
        raise GateFileError(f"{where} {text[:40]!r}... has {len(text):,} characters; a check "
                            f"is METRIC OP LIMIT with metric names of at most "
                            f"{MAX_METRIC_CHARS} characters.")
    match = _CHECK.match(text)
    if not match:
        raise GateFileError(f"{where} {text!r} cannot be parsed: {CHECK_HELP}.")
    rhs = match["rhs"]
    for pattern in _RHS_FORMS:
        form = pattern.match(rhs)
        if form:
            groups = form.groupdict()
            num = float(groups["num"]) if groups.get("num") is not None else 1.0
            if not math.isfinite(num) or abs(num) > 1e300:
                raise GateFileError(f"{where} {text!r}: the limit {groups['num']} is not a "
                                    "finite number a metric can be compared with; give a "
                                    "number up to 1e300.")
            check_metric_length(match["lhs"], where)
            check_metric_length(groups.get("metric") or "", where)
            return match["lhs"], match["op"], Limit(num, groups.get("metric"))
    raise GateFileError(f"{where} {text!r}: the limit {rhs!r} cannot be parsed: {CHECK_HELP}.")


def _percent(value: Any, where: str) -> float:
    match = _PERCENT.match(value) if isinstance(value, str) else None
    if not match:
        raise GateFileError(f"{where} must be a percentage string such as \"10%\", "
                            f"got {value!r}.")
    return float(match[1]) / 100.0


def _rule(number: int, table: Any) -> Rule:
    where = f"rule {number}"
    if not isinstance(table, dict):
        raise GateFileError(f"{where} must be a table ([[rule]] with check = \"...\").")
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise GateFileError(f"{where} has unknown key(s) {', '.join(unknown)}; allowed keys: "
                            f"{', '.join(sorted(_RULE_KEYS))}.")
    why = table.get("why", "")
    if not isinstance(why, str):
        raise GateFileError(f"{where}: why must be a string.")
    regression = [k for k in ("max_increase", "max_decrease") if k in table]
    if "check" in table:
        if "metric" in table or regression:
            raise GateFileError(f"{where} has both check and metric/max_increase/"
                                "max_decrease; use one form.")
        check = table["check"]
        if not isinstance(check, str):
            raise GateFileError(f"{where}: check must be a string, e.g. "
                                "check = \"broker.p99_ms <= 600\".")
    elif "metric" in table:
        metric = table["metric"]
        if isinstance(metric, str):
            check_metric_length(metric.strip(), where)
        if not isinstance(metric, str) or not re.fullmatch(_METRIC, metric.strip()):
            raise GateFileError(f"{where}: metric must be a metric name such as "
                                f"\"broker.p99_ms\", got {metric!r}.")
        metric = metric.strip()
        if metric.split(".")[0] == BASELINE:
            raise GateFileError(f"{where}: metric {metric!r} names the baseline; name the "
                                "metric of the results, the baseline is compared implicitly.")
        if len(regression) != 1:
            raise GateFileError(f"{where} with metric = {metric!r} needs exactly one of "
                                "max_increase = \"N%\" or max_decrease = \"N%\" (how far it "
                                "may move from the baseline).")
        fraction = _percent(table[regression[0]], f"{where}: {regression[0]}")
        if regression[0] == "max_increase":
            check = f"{metric} <= {1 + fraction:g} * {BASELINE}.{metric}"
        else:
            check = f"{metric} >= {1 - fraction:g} * {BASELINE}.{metric}"
    else:
        raise GateFileError(f"{where} needs check = \"METRIC OP LIMIT\" (or metric = ... with "
                            "max_increase/max_decrease against a baseline).")
    lhs, op, limit = parse_check(check, f"{where}: check")
    return Rule(number, check.strip(), lhs, op, limit, why.strip())


def parse_gates(text: str, where: str = "gates file", base_dir: Path | None = None) -> Gates:
    """Parse gates TOML text; relative baseline paths resolve against ``base_dir``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GateFileError(f"{where} is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise GateFileError(f"{where} has unknown top-level key(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(sorted(_TOP_KEYS))} (rules go in [[rule]] "
                            "tables).")
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise GateFileError(f"{where}: rules must be [[rule]] tables (an array), not [rule].")
    if not tables:
        raise GateFileError(f"{where} has no [[rule]] tables: a gate that checks nothing "
                            "would always pass.")
    rules = [_rule(index, table) for index, table in enumerate(tables, start=1)]
    baseline = data.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
        raise GateFileError(f"{where}: baseline must be a path string.")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise GateFileError(f"{where}: description must be a string.")
    baseline_path = None
    if baseline:
        baseline_path = Path(baseline)
        if base_dir is not None and not baseline_path.is_absolute():
            baseline_path = base_dir / baseline_path
    return Gates(rules, baseline_path, description)


MAX_GATES_BYTES = 1024 * 1024


def load_gates(path: Path) -> Gates:
    try:
        text = read_regular_file(path, "gates file", MAX_GATES_BYTES,
                                 GateFileError).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GateFileError(f"Cannot read gates file {path}: not UTF-8 text (byte "
                            f"{exc.start}).") from None
    return parse_gates(text, f"gates file {path}", path.parent)


# --------------------------------------------------------------------------- metrics


def _run_schema() -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    from producer_core.results.results_io import results_schema

    root = results_schema()
    return root["$defs"]["run"], root


def _deref(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        node = resolve_ref(root, node["$ref"])
    return node


def _is_container(node: Mapping[str, Any]) -> bool:
    return "properties" in node or (
        node.get("type") == "object" and isinstance(node.get("additionalProperties"), Mapping))


def schema_knows(parts: Sequence[str]) -> bool:
    """Whether a dotted path (split) names a field the run schema defines.

    Keys may themselves hold dots (settings such as ``linger.ms``), so each step tries the
    longest key first.
    """
    node, root = _run_schema()
    index = 0
    while index < len(parts):
        node = _deref(node, root)
        properties = node.get("properties", {})
        for end in range(min(len(parts), index + MAX_KEY_DOTS + 1), index, -1):
            key = ".".join(parts[index:end])
            if key in properties:
                node, index = properties[key], end
                break
        else:
            extra = node.get("additionalProperties")
            if not isinstance(extra, Mapping):
                return False
            extra = _deref(extra, root)
            index = index + 1 if _is_container(extra) else len(parts)
            node = extra
    return True


def _walk(document: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    """(found, value) of a dotted path in a JSON document; longest key first."""
    if not parts:
        return True, document
    if not isinstance(document, dict):
        return False, None
    for end in range(min(len(parts), MAX_KEY_DOTS + 1), 0, -1):
        key = ".".join(parts[:end])
        if key in document:
            return _walk(document[key], parts[end:])
    return False, None


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object with fields {', '.join(map(str, value)) or '(none)'}"
    return f"{type(value).__name__} {value!r:.40}"


def split_metric(name: str, labels: Sequence[str]) -> tuple[str, list[str]] | None:
    """``MODE.NAME`` -> (MODE, NAME's dotted parts), None where `name` starts with no mode.

    A mode label's version may hold dots (``librdkafka@2.10.0``, ``franz-go@v1.18.0``), so
    the mode is the longest of `labels` (the results' modes and the registry's) that `name`
    starts with; a label with ``@`` that none matches (a mode the results lack, named in
    the error) runs to its last dotted part that starts with a digit."""
    known = [label for label in labels if name == label or name.startswith(label + ".")]
    if known:
        mode = max(known, key=len)
        rest = name[len(mode) + 1:]
        return mode, rest.split(".") if rest else []
    parts = name.split(".")
    if "@" not in parts[0]:
        return None
    end = 1
    while end < len(parts) and parts[end][:1].isdigit():
        end += 1
    return ".".join(parts[:end]), parts[end:]


@dataclass
class MetricSource:
    """Run documents pooled by mode (from one comparison, or several runs/comparisons)."""

    runs: list[dict[str, Any]]
    label: str = "the results"
    by_mode: dict[str, list[dict[str, Any]]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_mode = {}
        for run in self.runs:
            self.by_mode.setdefault(run_group(run), []).append(run)

    @classmethod
    def from_documents(cls, documents: Sequence[Mapping[str, Any]],
                       label: str = "the results") -> MetricSource:
        runs: list[dict[str, Any]] = []
        for document in documents:
            if document.get("kind") in GROUPED_KINDS:
                runs.extend(document["runs"])
            else:
                runs.append(dict(document))
        return cls(runs, label)

    @property
    def modes(self) -> list[str]:
        return list(self.by_mode)

    def value(self, name: str) -> float:
        """The number a metric name stands for (median over the mode's rounds)."""
        parts = name.split(".")
        split = split_metric(name, [*self.by_mode, *MODES])
        if split is not None:
            mode, rest = split
        elif len(self.by_mode) == 1:
            mode, rest = self.modes[0], parts
        else:
            raise MetricError(
                f"metric {name!r} does not start with a mode, and {self.label} hold several "
                f"({', '.join(self.modes)}): write it as {self.modes[0]}.{name}.")
        if not rest:
            raise MetricError(f"metric {name!r} names mode {mode!r} but no metric; for "
                              f"example {mode}.p99_ms.")
        runs = self.by_mode.get(mode)
        if not runs:
            raise MetricError(
                f"missing metric {name!r}: {self.label} have no run of mode {mode!r} "
                f"(modes present: {', '.join(self.modes) or 'none'}).")
        path = ".".join(rest)
        stat = "median"
        if len(rest) == 2 and rest[0] in SUMMARY_METRICS and rest[1] in STATS:
            path, stat = rest[0], rest[1]
        if path in SUMMARY_METRICS:
            get = SUMMARY_METRICS[path]
            try:
                values = [float(get(run)) for run in runs]
            except (KeyError, TypeError):  # not measured, or results of an older kbatch
                declared = SUMMARY[path]
                why = (f"only {declared.needs} hold it" if declared.optional
                       else "results of an older kbatch")
                raise MetricError(
                    f"missing metric {name!r}: the {mode} runs in {self.label} do not hold "
                    f"{path!r} ({why}); rerun to gate on it.") from None
        else:
            found_all = [_walk(run, rest)[0] for run in runs]
            if not schema_knows(rest) and not all(found_all):
                # Fields newer than the schema file count once the results hold them.
                raise MetricError(
                    f"unknown metric {name!r}: {path!r} is neither a summary metric "
                    f"({', '.join(SUMMARY_METRICS)}) nor a field of the results schema "
                    "(dotted paths such as latency.p999_ms, rtt.p99_ms, "
                    "partitions_per_request.max, collector.partitions_per_send.mean; see "
                    "docs/reference/results.md).")
            values = []
            for run in runs:
                found, value = _walk(run, rest)
                if not found:
                    where = f" (round {run['round']})" if "round" in run else ""
                    raise MetricError(
                        f"missing metric {name!r}: the {mode} run{where} in {self.label} has "
                        f"no field {path!r}" + (" (collector fields exist only in mode broker)"
                                                if rest[0] == "collector" else "") + ".")
                if value is None:  # a figure the run could not give: missing, never 0
                    where = f" (round {run['round']})" if "round" in run else ""
                    raise MetricError(
                        f"missing metric {name!r}: the {mode} run{where} in {self.label} "
                        f"holds null for {path!r} (not measured, or no answer: e.g. a "
                        "capacity search that sustained no rate); a gate does not read it "
                        "as 0.")
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise MetricError(f"metric {name!r} is not a number in {self.label}: it "
                                      f"is {_describe(value)}.")
                values.append(float(value))
        if stat == "min":
            return min(values)
        if stat == "max":
            return max(values)
        return float(statistics.median(values))


# --------------------------------------------------------------------------- evaluation


def _resolve(name: str, results: MetricSource, baseline: MetricSource | None) -> float:
    parts = name.split(".")
    if parts[0] == BASELINE and len(parts) > 1:
        if baseline is None:
            raise MetricError(
                f"{name!r} refers to the baseline, but no baseline results were given: pass "
                "--baseline PATH or set baseline = \"PATH\" in the gates file.")
        return baseline.value(".".join(parts[1:]))
    return results.value(name)


def evaluate(gates: Gates, results: MetricSource,
             baseline: MetricSource | None = None) -> list[Verdict]:
    """Every rule's verdict; unresolvable metrics give ERROR verdicts, never passes."""
    verdicts = []
    for rule in gates.rules:
        verdict = Verdict(rule)
        try:
            verdict.measured = _resolve(rule.lhs, results, baseline)
            if rule.limit.metric is None:
                verdict.limit = rule.limit.factor
            else:
                other = _resolve(rule.limit.metric, results, baseline)
                verdict.limit = rule.limit.factor * other
                factor = "" if rule.limit.factor == 1 else (
                    f"{format_number(rule.limit.factor)} × ")
                verdict.limit_detail = f"{factor}{rule.limit.metric} ({format_number(other)})"
            for what, number in (("measured", verdict.measured), ("limit", verdict.limit)):
                if not math.isfinite(number):
                    raise MetricError(f"the {what} value of {rule.check!r} is {number}, not a "
                                      "finite number, so the rule cannot be evaluated.")
            verdict.passed = OPS[rule.op](verdict.measured, verdict.limit)
        except MetricError as exc:
            verdict.error = str(exc)
        verdicts.append(verdict)
    return verdicts


def exit_code(verdicts: Sequence[Verdict]) -> int:
    """2 if any rule could not be evaluated, else 1 if any failed, else 0."""
    if any(v.error is not None for v in verdicts):
        return EXIT_ERROR
    if any(not v.passed for v in verdicts):
        return EXIT_FAIL
    return EXIT_PASS
