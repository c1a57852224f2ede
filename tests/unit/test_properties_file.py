"""Java .properties syntax, as `java.util.Properties.load` reads it, and its errors."""

from __future__ import annotations

import pytest

from producer_core.errors import UsageError
from producer_core.properties import load_properties, parse_properties


def entries(text: str) -> dict[str, str]:
    return {p.key: p.value for p in parse_properties(text)}


def test_the_three_separators_comments_and_blank_lines():
    text = ("# a comment\n! another\n\n   \nlinger.ms=5\nacks: all\nclient.id   kbatch\n"
            "batch.size = 100\n  retries\t=\t3  \n")
    assert entries(text) == {"linger.ms": "5", "acks": "all", "client.id": "kbatch",
                             "batch.size": "100", "retries": "3  "}


def test_continuation_lines_drop_leading_blanks():
    text = ("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n"
            "    required username=\"alice\" \\\n"
            "    password=\"a b\";\n"
            "next=1\n")
    assert entries(text) == {
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                            'required username="alice" password="a b";',
        "next": "1"}


def test_an_even_number_of_backslashes_does_not_continue():
    assert entries("path=C:\\\\\nnext=1\n") == {"path": "C:\\", "next": "1"}


def test_escapes_in_keys_and_values():
    text = "my\\ key=tab\\there\\u00e9\\=\\:\\\\\nk\\:x=v\n"
    assert entries(text) == {"my key": "tab\there\u00e9=:\\", "k:x": "v"}


def test_empty_value_after_a_separator_is_allowed():
    assert entries("ssl.endpoint.identification.algorithm=\nb:\n") == {
        "ssl.endpoint.identification.algorithm": "", "b": ""}


def test_a_comment_line_ending_in_backslash_does_not_continue():
    assert entries("# comment \\\nkey=value\n") == {"key": "value"}


def test_later_duplicate_wins_and_lines_are_numbered():
    props = parse_properties("a=1\n\n# c\nb=2\\\n  3\na=4\n")
    assert [(p.key, p.value, p.line) for p in props] == [
        ("a", "1", 1), ("b", "23", 4), ("a", "4", 6)]
    assert entries("a=1\na=4\n") == {"a": "4"}


def test_crlf_line_endings():
    assert entries("a=1\r\nb=2\r\n") == {"a": "1", "b": "2"}


def test_a_bare_word_is_an_error_with_its_line_number():
    with pytest.raises(UsageError, match=r"client.properties, line 3: 'linger.ms' has no value"):
        parse_properties("a=1\n# x\nlinger.ms\n", "client.properties")


def test_a_bare_word_that_may_be_a_secret_is_not_shown():
    with pytest.raises(UsageError) as info:
        parse_properties("hunter2Secret!\n", "f")
    assert "hunter2" not in str(info.value) and "line 1" in str(info.value)


def test_a_line_without_key_is_an_error():
    with pytest.raises(UsageError, match="line 2: the line has no key"):
        parse_properties("a=1\n=value\n", "f")


def test_malformed_unicode_escape():
    with pytest.raises(UsageError, match=r"line 1: malformed \\uXXXX escape"):
        parse_properties("a=\\u12g4\n", "f")


def test_missing_unreadable_and_directory(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_properties(tmp_path / "nope.properties")
    with pytest.raises(UsageError, match="is a directory"):
        load_properties(tmp_path)
    locked = tmp_path / "locked.properties"
    locked.write_text("a=1\n")
    locked.chmod(0)
    try:
        try:
            locked.read_bytes()
        except PermissionError:
            with pytest.raises(UsageError, match="cannot be read"):
                load_properties(locked)
        else:  # running as root: permissions do not stop reads
            assert load_properties(locked)[0].value == "1"
    finally:
        locked.chmod(0o600)


def test_latin1_file_is_read(tmp_path):
    path = tmp_path / "c.properties"
    path.write_bytes("client.id=caf\u00e9\n".encode("latin-1"))
    assert load_properties(path)[0].value == "caf\u00e9"
