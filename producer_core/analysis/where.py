"""`kbatch analyze --where`: a small condition language on the run metadata, parsed and
checked here and turned into Spark column expressions, never handed to Spark SQL as text.

Spark SQL text can read files (`SELECT ... FROM text.`/etc/passwd``) and call JVM methods
(`java_method`, `reflect`); whoever sets `--where` (a CI parameter, say) could do both.
This language has no functions and no subqueries, only:

    condition  := or
    or         := and  (OR and)*
    and        := not  (AND not)*
    not        := NOT not | '(' condition ')' | predicate
    predicate  := value ( op value
                        | [NOT] IN '(' literal (',' literal)* ')'
                        | [NOT] BETWEEN value AND value
                        | IS [NOT] NULL )
    value      := column | settings['KEY'] | literal
    op         := = | == | != | <> | < | <= | > | >=
    literal    := 'text' ('' inside is one quote) | number | TRUE | FALSE | NULL

Keywords are case-insensitive. Columns are `WHERE_COLUMNS`; `settings['linger.ms']` is a
setting's value as text. Dates and timestamps compare with ISO text ('2025-06-01').
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from producer_core.analysis.columns import METADATA_COLUMNS
from producer_core.errors import UsageError

MAX_WHERE_CHARS = 4_000
MAX_DEPTH = 50

WHERE_COLUMNS: dict[str, str] = {
    name: kind for name, kind in METADATA_COLUMNS.items()
    if name not in ("settings", "requests_path")}
"""The run metadata columns a condition may use (producer_core.analysis.analyze's metadata row)."""

SETTINGS_COLUMN = "settings"
KEYWORDS = {"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE"}
REFUSED_WORDS = {"SELECT", "FROM", "WITH", "EXISTS", "UNION", "CASE", "CAST", "LIKE",
                 "RLIKE", "REGEXP", "INTERVAL"}
COMPARISONS = ("==", "!=", "<>", "<=", ">=", "=", "<", ">")


class WhereError(UsageError):
    """A `--where` condition outside the language; the message says what is allowed."""


def _help() -> str:
    return (f"Columns: {', '.join(WHERE_COLUMNS)}, settings['KEY']; operators = != < <= > >= "
            "AND OR NOT IN (...) BETWEEN x AND y IS [NOT] NULL; text in single quotes. "
            "See docs/guides/spark.md, 'kbatch analyze --where'.")


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class Token:
    kind: str  # name | keyword | number | string | op | punct | end
    text: str
    value: Any
    at: int


_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokenize(text: str) -> list[Token]:
    """Split a condition into tokens; anything outside the language is refused."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "'":
            j, parts = i + 1, []
            while True:
                end = text.find("'", j)
                if end < 0:
                    raise _error(text, i, "this text has no closing quote")
                parts.append(text[j:end])
                if text.startswith("''", end):
                    parts.append("'")
                    j = end + 2
                    continue
                break
            tokens.append(Token("string", text[i:end + 1], "".join(parts), i))
            i = end + 1
            continue
        number = _NUMBER.match(text, i)
        if number and (ch.isdigit() or ch == "."):
            literal = number.group()
            value: float | int = float(literal) if any(c in literal for c in ".eE") \
                else int(literal)
            tokens.append(Token("number", literal, value, i))
            i = number.end()
            continue
        name = _NAME.match(text, i)
        if name:
            word = name.group()
            upper = word.upper()
            if upper in REFUSED_WORDS:
                what = "subqueries" if upper in ("SELECT", "FROM", "WITH", "EXISTS",
                                                 "UNION") else f"{upper}"
                raise _error(text, i, f"{what} are not part of the --where language"
                             if what == "subqueries" else f"{what} is not part of the --where "
                             "language")
            kind = "keyword" if upper in KEYWORDS else "name"
            tokens.append(Token(kind, word, upper if kind == "keyword" else word, i))
            i = name.end()
            continue
        op = next((o for o in COMPARISONS if text.startswith(o, i)), None)
        if op:
            tokens.append(Token("op", op, op, i))
            i += len(op)
            continue
        if ch in "(),[]":
            tokens.append(Token("punct", ch, ch, i))
            i += 1
            continue
        raise _error(text, i, f"{ch!r} is not part of the --where language")
    tokens.append(Token("end", "", None, len(text)))
    return tokens


def _error(text: str, at: int, message: str) -> WhereError:
    return WhereError(f"--where {text!r}: at character {at + 1}: {message}. {_help()}")


# --------------------------------------------------------------------------- tree


@dataclass(frozen=True)
class Column:
    name: str
    key: str | None = None  # settings['KEY']

    @property
    def type(self) -> str:
        return "string" if self.key is not None else WHERE_COLUMNS[self.name]


@dataclass(frozen=True)
class Literal:
    value: Any  # str, int, float, bool or None


@dataclass(frozen=True)
class Compare:
    op: str
    left: Column | Literal
    right: Column | Literal


@dataclass(frozen=True)
class InList:
    operand: Column | Literal
    values: tuple[Literal, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    operand: Column | Literal
    low: Column | Literal
    high: Column | Literal
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    operand: Column | Literal
    negated: bool = False


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND | OR
    left: Condition
    right: Condition


@dataclass(frozen=True)
class Not:
    operand: Condition


Condition = Compare | InList | Between | IsNull | BoolOp | Not
Value = Column | Literal


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.pos]

    def fail(self, message: str, token: Token | None = None) -> WhereError:
        return _error(self.text, (token or self.token).at, message)

    def take(self, kind: str, text: str | None = None) -> Token | None:
        token = self.token
        if token.kind == kind and (text is None or token.value == text):
            self.pos += 1
            return token
        return None

    def expect(self, kind: str, text: str, what: str) -> Token:
        token = self.take(kind, text)
        if token is None:
            raise self.fail(f"expected {what}, found {self._found()}")
        return token

    def _found(self) -> str:
        return "the end" if self.token.kind == "end" else repr(self.token.text)

    def parse(self) -> Condition:
        condition = self.or_()
        if self.token.kind != "end":
            raise self.fail(f"unexpected {self._found()}: expected AND, OR or the end")
        return condition

    def or_(self) -> Condition:
        left = self.and_()
        while self.take("keyword", "OR"):
            left = BoolOp("OR", left, self.and_())
        return left

    def and_(self) -> Condition:
        left = self.not_()
        while self.take("keyword", "AND"):
            left = BoolOp("AND", left, self.not_())
        return left

    def not_(self) -> Condition:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"the condition nests deeper than {MAX_DEPTH} levels")
        try:
            if self.take("keyword", "NOT"):
                return Not(self.not_())
            if self.token.kind == "punct" and self.token.value == "(":
                self.pos += 1
                inner = self.or_()
                self.expect("punct", ")", "')'")
                return inner
            return self.predicate()
        finally:
            self.depth -= 1

    def predicate(self) -> Condition:
        operand = self.value()
        if self.token.kind == "op":
            op = self.token.value
            self.pos += 1
            return self._compare(op, operand, self.value())
        negated = bool(self.take("keyword", "NOT"))
        if self.take("keyword", "IN"):
            self.expect("punct", "(", "'(' after IN")
            values = [self.literal()]
            while self.take("punct", ","):
                values.append(self.literal())
            self.expect("punct", ")", "')' or ',' in the IN list")
            for value in values:
                self._check_types(operand, value)
            return InList(operand, tuple(values), negated)
        if self.take("keyword", "BETWEEN"):
            low = self.value()
            self.expect("keyword", "AND", "AND of BETWEEN x AND y")
            high = self.value()
            self._check_types(operand, low)
            self._check_types(operand, high)
            return Between(operand, low, high, negated)
        if negated:
            raise self.fail("expected IN or BETWEEN after NOT")
        if self.take("keyword", "IS"):
            negated = bool(self.take("keyword", "NOT"))
            self.expect("keyword", "NULL", "NULL after IS [NOT]")
            return IsNull(operand, negated)
        raise self.fail(f"expected a comparison (= != < <= > >=), IN, BETWEEN or IS NULL "
                        f"after the value, found {self._found()}")

    def _compare(self, op: str, left: Value, right: Value) -> Compare:
        if isinstance(left, Literal) and isinstance(right, Literal):
            raise self.fail("a comparison needs at least one column")
        if Literal(None) in (left, right):
            raise self.fail("compare with NULL using IS NULL or IS NOT NULL")
        self._check_types(left, right)
        return Compare({"==": "=", "<>": "!="}.get(op, op), left, right)

    def _check_types(self, left: Value, right: Value) -> None:
        kinds = [_kind(v) for v in (left, right)]
        if "any" in kinds or kinds[0] == kinds[1]:
            return
        column = left if isinstance(left, Column) else right
        name = column.name if isinstance(column, Column) else "value"
        raise self.fail(f"{_show(left)} and {_show(right)} cannot be compared: {name} is "
                        f"{_kind(column)}")

    def value(self) -> Value:
        token = self.token
        if token.kind == "name":
            self.pos += 1
            if self.token.kind == "punct" and self.token.value == "(":
                raise self.fail(f"functions such as {token.text}(...) are not part of the "
                                "--where language", token)
            if token.value == SETTINGS_COLUMN:
                self.expect("punct", "[", "[ after settings (settings['KEY'])")
                key = self.take("string")
                if key is None:
                    raise self.fail("expected a setting's name in quotes, e.g. "
                                    "settings['linger.ms']")
                self.expect("punct", "]", "']'")
                return Column(SETTINGS_COLUMN, key.value)
            if token.value not in WHERE_COLUMNS:
                raise self.fail(f"unknown column {token.text!r}", token)
            return Column(token.value)
        if token.kind == "punct" and token.value == "(":
            raise self.fail("a value was expected here; parentheses group conditions only")
        return self.literal()

    def literal(self) -> Literal:
        token = self.token
        if token.kind in ("string", "number"):
            self.pos += 1
            return Literal(token.value)
        if token.kind == "keyword" and token.value in ("TRUE", "FALSE", "NULL"):
            self.pos += 1
            return Literal({"TRUE": True, "FALSE": False, "NULL": None}[token.value])
        raise self.fail(f"expected a column or a value (text in single quotes, a number), "
                        f"found {self._found()}")


def _kind(value: Value) -> str:
    """'number', 'text' or 'bool' for type checks; dates and times compare with text."""
    if isinstance(value, Column):
        return "number" if value.type in ("int", "double") else "text"
    if value.value is None:
        return "any"
    if isinstance(value.value, bool):
        return "bool"
    return "number" if isinstance(value.value, int | float) else "text"


def _show(value: Value) -> str:
    if isinstance(value, Column):
        return value.name if value.key is None else f"settings[{value.key!r}]"
    return repr(value.value)


def parse_where(text: str) -> Condition:
    """Parse and check a `--where` condition (no Spark needed)."""
    if not text.strip():
        raise WhereError(f"--where is empty: give a condition. {_help()}")
    if len(text) > MAX_WHERE_CHARS:
        raise WhereError(f"--where has {len(text):,} characters; at most {MAX_WHERE_CHARS:,}.")
    return _Parser(text).parse()


# --------------------------------------------------------------------------- Spark


def to_spark(condition: Condition) -> Any:
    """The condition as a pyspark Column (built with pyspark.sql.functions only)."""
    from pyspark.sql import functions as F

    def value(node: Value) -> Any:
        if isinstance(node, Column):
            column = F.col(node.name)
            return column.getItem(node.key) if node.key is not None else column
        return F.lit(node.value)

    def build(node: Condition) -> Any:
        if isinstance(node, BoolOp):
            left, right = build(node.left), build(node.right)
            return left & right if node.op == "AND" else left | right
        if isinstance(node, Not):
            return ~build(node.operand)
        if isinstance(node, Compare):
            left, right = value(node.left), value(node.right)
            return {"=": left == right, "!=": left != right, "<": left < right,
                    "<=": left <= right, ">": left > right, ">=": left >= right}[node.op]
        if isinstance(node, InList):
            test = value(node.operand).isin([v.value for v in node.values])
            return ~test if node.negated else test
        if isinstance(node, Between):
            test = value(node.operand).between(value(node.low), value(node.high))
            return ~test if node.negated else test
        assert isinstance(node, IsNull)
        operand = value(node.operand)
        return operand.isNotNull() if node.negated else operand.isNull()

    return build(condition)
