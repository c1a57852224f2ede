"""`--command-config` / `--producer.config`, `--replication-factor`, `--topic-config` and the
librdkafka pass-through, end to end as a user runs them (real process, embedded broker)."""

from __future__ import annotations

import json
import time

import pytest

from tests.cli.test_produce_cli import kbatch


def one_paragraph_error(proc, code: int) -> str:
    """The run's error: exit `code`, no traceback, one `Error: ...` paragraph at the end."""
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Internal error" not in proc.stderr
    starts = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(starts) == 1, proc.stderr
    error = proc.stderr[proc.stderr.index(starts[0]):]
    assert error.endswith("\n") and "\n" not in error.rstrip("\n"), error
    return error


@pytest.mark.broker
def test_properties_file_settings_and_bootstrap_with_x_overriding(tansu_broker, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"# from the cluster admin\nbootstrap.servers = {tansu_broker.bootstrap}\n"
                     "linger.ms: 30\nacks all\nclient.id=from-\\\n    file\n")
    out = tmp_path / "run.json"
    topic = f"props-{int(time.time() * 1000)}"
    proc = kbatch("produce", "--producer.config", str(props), "-X", "linger.ms=15",
                  "--topic", topic, "--partitions", "2", "--messages", "200", "--rate", "2000",
                  "--replication-factor", "1", "--topic-config", "retention.ms=600000",
                  "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["bootstrap_servers"] == tansu_broker.bootstrap
    assert doc["settings"]["linger.ms"] == 15  # -X wins over the file
    assert doc["settings"]["acks"] == "all" and doc["settings"]["client.id"] == "from-file"
    assert doc["settings"]["topic.replication.factor"] == 1
    assert doc["settings"]["topic.config.retention.ms"] == "600000"
    assert doc["messages"]["acknowledged"] == 200

    # the topic exists now with replication factor 1: asking for 2 is refused, like
    # a partition count that differs
    proc = kbatch("produce", "--command-config", str(props), "--topic", topic,
                  "--partitions", "2", "--messages", "10", "--replication-factor", "2",
                  "--no-progress")
    error = one_paragraph_error(proc, 2)
    assert "already exists with replication factor 1" in error
    assert "--replication-factor 2 was asked for" in error


@pytest.mark.broker
def test_compare_modes_takes_the_file_for_every_mode(tansu_broker, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"bootstrap.servers={tansu_broker.bootstrap}\nlinger.ms=25\n")
    out = tmp_path / "cmp.json"
    proc = kbatch("compare-modes", "--modes", "librdkafka,partition", "--command-config",
                  str(props), "--mode-config", "librdkafka:queue.buffering.max.messages=50000",
                  "--messages", "100", "--rate", "1000", "--no-progress", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    runs = {run["mode"]: run for run in json.loads(out.read_text())["runs"]}
    assert runs["partition"]["settings"]["linger.ms"] == 25
    assert runs["librdkafka"]["settings"]["linger.ms"] == 25
    assert runs["librdkafka"]["settings"]["queue.buffering.max.messages"] == "50000"
    assert runs["librdkafka"]["librdkafka"]["config"]["queue.buffering.max.messages"] == "50000"


@pytest.mark.parametrize("content, message", [
    ("linger.ms=5\nbatch.size\n", r"line 2: 'batch.size' has no value"),
    ("\n\nlingr.ms=5\n", r"line 3: Unknown setting 'lingr.ms'"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=pw\n",
     "needs a cluster: give --bootstrap-servers"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "GSSAPI"),
    ("key=\\uZZZZ\n", r"line 1: malformed \\uXXXX"),
])
def test_file_errors_exit_2(tmp_path, content, message):
    props = tmp_path / "client.properties"
    props.write_text(content)
    error = one_paragraph_error(kbatch("produce", "--command-config", str(props)), 2)
    assert str(props) in error or "needs a cluster" in error or "GSSAPI" in error
    assert __import__("re").search(message, error), error
    assert "pw" not in error.replace("password", "")


def test_missing_file_exits_2(tmp_path):
    error = one_paragraph_error(
        kbatch("produce", "--producer.config", str(tmp_path / "none.properties")), 2)
    assert "does not exist" in error


def test_librdkafka_property_in_a_file_used_by_other_modes_says_how(tmp_path):
    props = tmp_path / "client.properties"
    # a name neither client's catalogue holds: librdkafka may know it, kbatch's engine not
    props.write_text("plugin.custom.knob=5\n")
    error = one_paragraph_error(kbatch("compare-modes", "--modes", "librdkafka,partition",
                                       "--command-config", str(props)), 2)
    assert "line 1" in error and "--mode-config librdkafka:KEY=VALUE" in error


def test_unknown_librdkafka_property_is_librdkafkas_own_error(tmp_path):
    error = one_paragraph_error(kbatch("produce", "--mode", "librdkafka", "-X",
                                       "plugin.custom.knob=5", "--messages", "1"), 2)
    assert 'No such configuration property: "plugin.custom.knob"' in error
    # a misspelt librdkafka name gets kbatch's "did you mean" before librdkafka sees it
    error = one_paragraph_error(kbatch("produce", "--mode", "librdkafka", "-X",
                                       "queue.buffering.max.mss=5", "--messages", "1"), 2)
    assert "Did you mean 'queue.buffering.max.ms'?" in error


@pytest.mark.broker
def test_librdkafka_passes_properties_through(tmp_path):
    out = tmp_path / "run.json"
    proc = kbatch("produce", "--mode", "librdkafka", "-X", "queue.buffering.max.ms=5",
                  "-X", "linger.ms=10", "--messages", "200", "--rate", "2000", "--no-progress",
                  "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["settings"]["queue.buffering.max.ms"] == "5"
    assert doc["librdkafka"]["config"]["queue.buffering.max.ms"] == "5"
    assert doc["messages"]["acknowledged"] == 200
