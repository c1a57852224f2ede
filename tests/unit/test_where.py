"""`kbatch analyze --where`: the condition language is parsed and checked without Spark;
functions, subqueries and anything outside the language are refused with the columns
and operators that are allowed."""

from __future__ import annotations

import pytest

from producer_core.analysis.where import (
    WHERE_COLUMNS,
    Between,
    BoolOp,
    Column,
    Compare,
    InList,
    IsNull,
    Literal,
    Not,
    WhereError,
    parse_where,
)


def test_precedence_not_and_or():
    tree = parse_where("mode = 'a' OR NOT round > 1 AND workers <= 2")
    assert tree == BoolOp("OR", Compare("=", Column("mode"), Literal("a")), BoolOp(
        "AND", Not(Compare(">", Column("round"), Literal(1))),
        Compare("<=", Column("workers"), Literal(2))))


def test_parentheses_in_between_is_null_and_settings():
    tree = parse_where("(mode in ('a', 'it''s') or duration_s not between 1 and 2.5e1) "
                       "and settings['linger.ms'] is not null and date >= '2025-01-01'")
    assert tree == BoolOp("AND", BoolOp("AND", BoolOp(
        "OR", InList(Column("mode"), (Literal("a"), Literal("it's"))),
        Between(Column("duration_s"), Literal(1), Literal(25.0), negated=True)),
        IsNull(Column("settings", "linger.ms"), negated=True)),
        Compare(">=", Column("date"), Literal("2025-01-01")))


@pytest.mark.parametrize("op", ["=", "==", "!=", "<>", "<", "<=", ">", ">="])
def test_every_comparison(op):
    tree = parse_where(f"round {op} 3")
    assert isinstance(tree, Compare) and tree.op == {"==": "=", "<>": "!="}.get(op, op)


def test_every_listed_column_parses():
    for column, kind in WHERE_COLUMNS.items():
        literal = "1" if kind in ("int", "double") else "'x'"
        assert parse_where(f"{column} = {literal}") == Compare(
            "=", Column(column), parse_where(f"round = {literal}").right
            if kind in ("int", "double") else Literal("x"))


@pytest.mark.parametrize(("text", "fragment"), [
    ("java_method('java.io.File', 'createTempFile', 'a', 'b') IS NOT NULL",
     "functions such as java_method"),
    ("reflect('java.lang.System', 'exit', 1) = 1", "functions such as reflect"),
    ("mode IN (SELECT value FROM text.`/etc/passwd`)", "subqueries are not part"),
    ("EXISTS (SELECT 1)", "subqueries are not part"),
    ("mode = 'x'; DROP TABLE runs", "';' is not part"),
    ("mode = `x`", "'`' is not part"),
    ('mode = "x"', "'\"' is not part"),
    ("colour = 'red'", "unknown column 'colour'"),
    ("node = 1", "unknown column 'node'"),
    ("mode = 'broker", "no closing quote"),
    ("mode = ", "expected a column or a value"),
    ("mode", "expected a comparison"),
    ("mode = 1", "cannot be compared: mode is text"),
    ("round = 'one'", "cannot be compared: round is number"),
    ("round IN (1, 'x')", "cannot be compared"),
    ("mode = NULL", "IS NULL"),
    ("1 = 1", "at least one column"),
    ("mode = 'a' AND", "expected a column or a value"),
    ("(mode = 'a'", "expected ')'"),
    ("mode = 'a')", "unexpected ')'"),
    ("mode LIKE 'a%'", "LIKE is not part"),
    ("settings['linger.ms'", "expected ']'"),
    ("settings[linger] = '5'", "setting's name in quotes"),
    ("", "--where is empty"),
    ("   ", "--where is empty"),
    ("NOT " * 80 + "mode = 'a'", "nests deeper than 50"),
    ("(" * 80 + "mode = 'a'" + ")" * 80, "nests deeper than 50"),
    ("mode = '" + "x" * 5000 + "'", "at most 4,000"),
])
def test_refused_with_a_clear_error(text, fragment):
    with pytest.raises(WhereError) as info:
        parse_where(text)
    message = str(info.value)
    assert fragment in message
    if "at most" not in fragment:
        assert "Columns: run, results, mode" in message


def test_error_lists_exactly_the_usable_columns():
    with pytest.raises(WhereError) as info:
        parse_where("colour = 'red'")
    listed = str(info.value).split("Columns: ")[1].split(";")[0]
    names = [n.strip() for n in listed.split(",")]
    assert names[:-1] == list(WHERE_COLUMNS) and names[-1] == "settings['KEY']"
    for name in WHERE_COLUMNS:  # each listed column is usable
        parse_where(f"{name} IS NULL")
