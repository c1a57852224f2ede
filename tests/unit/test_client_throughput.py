"""benchmarks/client_throughput.py and profile_engine.py, the pure parts: the order runs take,
the settings each row gets, the tools' summary lines (as they printed them in this project's
runs), the report rendered from a saved document, and the profile's shares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import client_throughput as ct
from benchmarks.client_tools import parse_perf, parse_rdkafka, perf_command, rdkafka_command
from benchmarks.profile_engine import collapsed_shares

# printed by rdkafka_performance (librdkafka 2.12.1) and ProducerPerformance (Kafka 4.4.0)
# against the embedded Tansu broker
RDKAFKA_LINE = ("% 100 messages produced (10000 bytes), 100 delivered (offset 23, 0 failed) in "
                "5ms: 17021 msgs/s and 1.70 MB/s, 0 produce failures, 0 in queue, no "
                "compression")
PERF_LINES = (
    "Option --producer-props has been deprecated and will be removed in a future version. "
    "Use --command-property instead.\n"
    "100 records sent, 109.289617 records/sec (0.01 MB/sec), 34.68 ms avg latency, 891.00 ms "
    "max latency, 22 ms 50th, 35 ms 95th, 891 ms 99th, 891 ms 99.9th.\n")


def test_rounds_interleave_every_acks_and_rotate_the_rows() -> None:
    steps = ct.plan(["a", "b", "c"], ["1", "all"], 3)
    assert steps[:6] == [(1, "1", "a"), (1, "1", "b"), (1, "1", "c"),
                         (1, "all", "a"), (1, "all", "b"), (1, "all", "c")]
    assert [row for number, acks, row in steps if number == 2 and acks == "1"] == ["b", "c", "a"]
    assert [row for number, acks, row in steps if number == 3 and acks == "1"] == ["c", "a", "b"]
    assert len(steps) == 18


def test_idempotence_goes_with_acks_all_except_where_the_client_has_none() -> None:
    assert ct.kbatch_settings("kbatch-none", "all") == [("acks", "all"),
                                                        ("enable.idempotence", "true")]
    assert ct.kbatch_settings("franz-go", "1") == [("acks", "1"),
                                                   ("enable.idempotence", "false")]
    assert ct.kbatch_settings("kafka-go", "all") == [("acks", "all")]
    assert ct.kbatch_settings("kafka-go-fed", "all") == [("acks", "all")]
    assert ct.kbatch_settings("sarama-fed", "1") == [("acks", "1"),
                                                     ("enable.idempotence", "false")]
    rdkafka = rdkafka_command(Path("/x/rdkafka_performance"), "h:1", "t", 10, 100, "all")
    assert rdkafka[-4:] == ["-X", "linger.ms=5", "-X", "enable.idempotence=true"]
    assert rdkafka[rdkafka.index("-a"):rdkafka.index("-a") + 2] == ["-a", "all"]


def test_the_tools_summary_lines_are_read() -> None:
    assert parse_rdkafka("% Sending messages\n" + RDKAFKA_LINE + "\n") == {
        "produced": 100, "acked": 100, "failed": 0, "seconds": 0.005, "msgs_per_s": 17021.0}
    perf = parse_perf(PERF_LINES)
    assert perf is not None
    assert perf["acked"] == 100 and perf["msgs_per_s"] == pytest.approx(109.289617)
    assert parse_rdkafka("nothing") is None and parse_perf("5 records sent, 1.0 rec") is None


def test_java_gets_acks_and_idempotence_off_with_acks_1() -> None:
    class Dist:
        java, classpath = "java", "/libs/*"

    cmd = perf_command(Dist(), "h:1", "t", 5, 100, "1", ("a=b",))  # type: ignore[arg-type]
    assert cmd[cmd.index("--throughput") + 1] == "-1"
    assert cmd[cmd.index("--producer-props") + 1:] == [
        "bootstrap.servers=h:1", "acks=1", "a=b", "enable.idempotence=false"]


def test_a_failed_java_send_counts_once_per_exception() -> None:
    stderr = ("org.apache.kafka.common.errors.TimeoutException: Expiring 3 record(s)\n"
              "\tat org.apache.kafka.Foo(Foo.java:1)\n"
              "Caused by: java.io.IOException: x\n"
              "org.apache.kafka.common.errors.TimeoutException: Expiring 3 record(s)\n")
    parsed = ct.parse_output("ProducerPerformance", PERF_LINES, stderr, 100)
    assert parsed is not None and parsed["failed"] == 2


def test_bad_arguments_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--acks", "2"], ["--rows", "kbatch-none,aiokafka"], ["--messages", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            ct.parse_args(argv)
        assert exit_info.value.code == 2
    assert "--rows takes a comma-separated list of" in capsys.readouterr().err
    assert ct.parse_args(["--acks", "all,1,all"]).acks == ["all", "1"]


def _run(row: str, acks: str, msgs_per_s: float, wall_s: float, cpu_s: float,
         **extra: object) -> dict[str, object]:
    return {"broker": "tansu", "acks": acks, "row": row, "messages": 1000, "acked": 1000,
            "failed": 0, "msgs_per_s": msgs_per_s, "seconds": 1000 / msgs_per_s,
            "wall_s": wall_s, "producer_cpu_s": cpu_s, "broker_cpu_s": 0.001,
            "load_1min": 1.0, **extra}


def document() -> dict[str, object]:
    rows = ["kbatch-none", "rdkafka_performance", "franz-go"]
    return {
        "config": {"messages": 1000, "runs": 3, "acks": ["1"], "brokers": ["tansu", "kafka"],
                   "rows": rows, "partitions": 64, "size": 100, "startup": True},
        "machine": {"cpu_cores": 2, "python": "3.11.7", "platform": "Linux"},
        "load": {"before": "load average: 0.10", "after": "load average: 0.20"},
        "brokers": {"tansu": "one embedded Tansu broker"},
        "startup": [_run("kbatch-none", "1", 1.0, 1.0, 0.4),
                    _run("rdkafka_performance", "1", 1.0, 0.1, 0.01)],
        "runs": [_run("kbatch-none", "1", 2000, 2.0, 0.5),
                 _run("kbatch-none", "1", 1000, 3.0, 0.6),
                 _run("kbatch-none", "1", 3000, 1.0, 0.7),
                 _run("rdkafka_performance", "1", 2600, 0.5, 0.02),
                 _run("rdkafka_performance", "1", 1600, 0.5, 0.02),
                 _run("franz-go", "1", 900, 2.0, 0.5),
                 {**_run("franz-go", "1", 1, 1, 1), "error": "exit 1, no result printed: x"}],
    }


def test_go_fed_adds_the_pipe_fed_twin_of_each_go_row_asked_for(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert ct.parse_args([]).rows == list(ct.ROWS)  # the Go rows generate their own
    args = ct.parse_args(["--rows", "kbatch-none,sarama", "--go-fed"])
    assert args.rows == ["kbatch-none", "sarama", "sarama-fed"]
    assert ct.mode_of("sarama-fed") == "sarama" and ct.mode_of("kbatch-none") == "none"
    assert ct.parse_args(["--rows", "franz-go-fed"]).rows == ["franz-go-fed"]
    with pytest.raises(SystemExit) as exit_info:
        ct.parse_args(["--rows", "kbatch-none", "--go-fed"])
    assert exit_info.value.code == 2
    assert "--rows names none of franz-go" in capsys.readouterr().err


def test_the_fastest_client_is_a_client_on_its_own() -> None:
    """A pipe-fed Go row is kbatch's feeder plus the client: never 'the fastest client'."""
    summaries = {"kbatch-none": {"tool": [1000.0]}, "franz-go-fed": {"tool": [900.0]},
                 "franz-go": {"tool": [800.0]}}
    lines = ct.verdict(summaries)
    assert "  - kbatch-none / fastest client (franz-go): 1.25x (target >= 1: met)" in lines


def test_the_report_renders_from_a_saved_document(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "figures.json"
    saved.write_text(json.dumps(document()))
    assert ct.main(["--render", str(saved)]) == 0
    text = capsys.readouterr().out
    assert "## one embedded Tansu broker, acks=1" in text
    assert "Apache Kafka" not in text  # asked for, never started: no table
    # median (min-max) of the tools' msg/s, producer CPU per message, net of the startup
    assert "| kbatch-none | 3 | 2,000 (1,000-3,000) | 500 (333-1,000) | 600.00 (500.00-700.00)"\
        " | 200.00 (100.00-300.00) | 0.40 |" in text
    assert "| franz-go | 1 | 900 |" in text and "1 run(s) failed: exit 1" in text
    assert "fastest row **rdkafka_performance** (2,100)" in text
    assert "kbatch-none / fastest client (rdkafka_performance): 0.95x (target >= 1: not met)"\
        in text
    assert "By wall-time msg/s: fastest row **rdkafka_performance** (2,000)" in text
    assert "kbatch-none / fastest client (rdkafka_performance): 0.25x (target >= 1: not met)"\
        in text


def test_a_file_that_is_no_document_exits_2(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text("{}")
    assert ct.main(["--render", str(tmp_path / "x.json")]) == 2
    assert "is not a document this script wrote" in capsys.readouterr().err


def test_profile_shares_count_the_engine_run_only() -> None:
    stacks = "\n".join([
        "<module> (p.py:1);main (p.py:2);engine_run (p.py:3);Engine._run (e.py:9);fill (a.py:5) 6",
        "<module> (p.py:1);main (p.py:2);engine_run (p.py:3);Engine._run (e.py:9);fill (a.py:7) 2",
        "<module> (p.py:1);main (p.py:2);engine_run (p.py:3);send (s.py:1) 2",
        "<module> (p.py:1);main (p.py:2);engine_run (p.py:3);Engine._setup (e.py:4) 5",
        "<module> (p.py:1);_find_and_load (<frozen>:1) 9",
        "garbage",
    ])
    kept, left, by_cum, by_self = collapsed_shares(stacks, 5)
    assert (kept, left) == (10, 14)
    assert by_self[0] == ("fill (a.py)", 8, 0.8)  # its two lines, one function
    assert ("Engine._run (e.py)", 8, 0.8) in by_cum
    assert by_cum[0][2] == 1.0
