"""The sweep of bad inputs (issue 17): every one is refused with a clear error and exit 2
before any work starts (or is handled, exit 0), never "Internal error", never a traceback,
never a hang. In-process (click's CliRunner) with a time bound per case, so it is fast.

`{tmp}` in an argument is replaced by a temporary directory holding the files below
(workload files, a saved results directory and damaged copies of it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from producer_core.results.results_io import RunRecorder, add_facts, write_results_dir
from producer_core.results.run_facts import run_document
from tests.cli.sweep_support import run_kbatch
from tests.results_fakes import fake_comparison, fake_results

P = ["produce", "--no-progress"]
C = ["compare-modes", "--no-progress", "--modes", "partition,broker"]
GATES_OK = '[[rule]]\ncheck = "partition.requests_sent >= 1"\n'

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n" for i in range(8)) + "topics:\n  - {*i: 1}\n"

WORKLOADS = {
    "ok.yaml": "duration_s: 0.2\ntopics:\n  - {name: ok, partitions: 1, rate: {constant: 50}}\n",
    "laughs.yaml": LAUGHS,
    "alias_key.yaml": "duration_s: 1\nx: &k name\ntopics:\n"
                      "  - {*k : t, partitions: 1, rate: {constant: 10}}\n",
    "tag.yaml": "duration_s: 1\ntopics:\n  - name: !!python/name:os.system t\n"
                "    partitions: 1\n    rate: {constant: 10}\n",
    "tag_obj.yaml": "duration_s: 1\ntopics:\n  - name: t\n    partitions: !!python/object:"
                    "builtins.int 1\n    rate: {constant: 10}\n",
    "local_tag.yaml": "duration_s: 1\ntopics:\n  - name: t\n    partitions: !x 1\n"
                      "    rate: {constant: 10}\n",
    "binary.yaml": "duration_s: 1\ntopics:\n  - name: !!binary aGVsbG8=\n"
                   "    partitions: 1\n    rate: {constant: 10}\n",
    "zero_step.yaml": "duration_s: 0.5\ntopics:\n"
                      "  - {name: z, partitions: 1, rate: {step: [[0, 1], [0, 1]]}}\n",
    "huge_rate.yaml": "duration_s: 1\ntopics:\n  - {name: t, partitions: 1, "
                      "rate: {constant: 1.0e+300}}\n",
    "huge_duration.yaml": "duration_s: 1.0e+308\ntopics:\n  - {name: t, partitions: 1, "
                          "rate: {constant: 10}}\n",
    "huge_keys.yaml": "duration_s: 1\ntopics:\n  - {name: t, partitions: 1, "
                      "rate: {constant: 10}, keys: {uniform: 100000000}}\n",
    "neg_seed.yaml": "duration_s: 1\nseed: -5\ntopics:\n  - {name: t, partitions: 1, "
                     "rate: {constant: 10}}\n",
    "huge_seed.yaml": "duration_s: 1\nseed: 1000000000000000000000000000000\ntopics:\n"
                      "  - {name: t, partitions: 1, rate: {constant: 10}}\n",
    "nan_warmup.yaml": "duration_s: 1\nwarmup_s: .nan\ntopics:\n  - {name: t, partitions: 1, "
                       "rate: {constant: 10}}\n",
    "inf_ramp.yaml": "duration_s: 1\ntopics:\n  - {name: t, partitions: 1, "
                     "rate: {ramp: {from: 0, to: .inf, over_s: 1}}}\n",
    "huge_bursts.yaml": "duration_s: 100000\ntopics:\n  - {name: t, partitions: 1, "
                        "rate: {bursts: {rate: 10, on_s: 0.000001, off_s: 0.000001}}}\n",
    "many_steps.yaml": "duration_s: 1\ntopics:\n  - {name: t, partitions: 1, rate: {step: ["
                       + ", ".join(["[1, 0.001]"] * 3000) + "]}}\n",
    "huge_weighted.yaml": "duration_s: 1\ntopics:\n  - name: t\n    partitions: 1\n"
                          "    rate: {constant: 10}\n    value_size: {weighted: [[1, 1e308], "
                          "[2, 1e308]]}\n",
    "group_topics.yaml": "duration_s: 1\ntopics:\n  - {name: 't-{i}', count: 10000, "
                         "partitions: 100000, rate: {constant: 100}}\n",
    "dotdot.yaml": "duration_s: 1\ntopics:\n  - {name: '..', partitions: 1, "
                   "rate: {constant: 10}}\n",
    "list_root.yaml": "- 1\n- 2\n",
    "not_yaml.yaml": "topics: [\n",
    "binary_garbage.yaml": "\x00\x01\x02\xff",
    "headers_map.yaml": "duration_s: 1\ntopics:\n  - name: t\n    partitions: 1\n"
                        "    rate: {constant: 10}\n    headers: {a: {b: c}}\n",
    "rate_limit_big.yaml": "duration_s: 1\ntopics:\n  - name: t\n    partitions: 1\n"
                           "    rate: {constant: 10}\n"
                           "    rate_limit: {interval_ms: 1e30, max_messages: 1}\n",
}

BAD_RESULTS = {
    "nan": lambda d: d.__setitem__("requests_sent", float("nan")),
    "inf": lambda d: d.__setitem__("requests_sent", float("inf")),
    "nan_latency": lambda d: d["latency"].__setitem__("p99_ms", float("nan")),
}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    for name, text in WORKLOADS.items():
        (root / name).write_text(text)
    (root / "ok.toml").write_text(GATES_OK)
    (root / "huge.toml").write_text('[[rule]]\ncheck = "partition.requests_sent <= 1e999"\n')
    (root / "nan.toml").write_text('[[rule]]\ncheck = "partition.requests_sent <= nan"\n')
    (root / "inf.toml").write_text('[[rule]]\ncheck = "partition.requests_sent <= inf"\n')
    (root / "bad.toml").write_text("[[rule]\n")
    run = RunRecorder(lambda: fake_results("partition"))()
    document = run_document(run, files=True)
    add_facts(document, embedded=False)
    write_results_dir(root / "run", document, [run])
    for name, damage in BAD_RESULTS.items():
        shutil.copytree(root / "run", root / f"run_{name}")
        path = root / f"run_{name}" / "results.json"
        data = json.loads(path.read_text())
        damage(data)
        path.write_text(json.dumps(data))
    shutil.copytree(root / "run", root / "run_badjson")
    (root / "run_badjson" / "results.json").write_text('{"schema_version": 1, ')
    shutil.copytree(root / "run", root / "run_truncated")
    log = next((root / "run_truncated").rglob("requests.parquet"))
    log.write_bytes(log.read_bytes()[: len(log.read_bytes()) // 2])
    shutil.copytree(root / "run", root / "run_garbage_parquet")
    log = next((root / "run_garbage_parquet").rglob("requests.parquet"))
    log.write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    _issue35_files(root)
    comparison, results = fake_comparison(files=True)
    write_results_dir(root / "cmp", comparison, results)
    (root / "afile").write_text("x")
    (root / "other_mode_out").mkdir()
    other = RunRecorder(lambda: fake_results("broker"))()
    other_doc = run_document(other, files=True)
    add_facts(other_doc, embedded=False)
    write_results_dir(root / "other_mode_out", other_doc, [other])
    return root


def _issue35_files(root: Path) -> None:
    """Inputs of the newer surfaces (issue 35): special and huge files, two properties files,
    damaged results directories, absurd numbers in results, huge metric names."""
    os.mkfifo(root / "fifo")
    (root / "big.properties").write_text("linger.ms=5\n" * 200_000)
    (root / "a.properties").write_text("linger.ms=5\n")
    (root / "b.properties").write_text("linger.ms=6\n")
    (root / "dup.properties").write_text("linger.ms=5\nacks=all\nlinger.ms=50\n")
    (root / "payload.bin").write_bytes(b"x" * 100)
    shutil.copytree(root / "run", root / "run_nolog")
    next((root / "run_nolog").rglob("requests.parquet")).unlink()
    for name, text in (("bigint", "9" * 400), ("e999", "1e999"), ("neg_e999", "-1e999")):
        shutil.copytree(root / "run", root / f"run_{name}")
        path = root / f"run_{name}" / "results.json"
        data = json.loads(path.read_text())
        if name == "bigint":  # an integer field: a valid JSON integer, absurdly large
            data["requests_sent"] = 123456789
        else:  # a number field: JSON reads 1e999 as infinity
            data["latency"]["p99_ms"] = 123456789
        path.write_text(json.dumps(data).replace("123456789", text))
    shutil.copytree(root / "run", root / "run_interval0")
    path = root / "run_interval0" / "results.json"
    data = json.loads(path.read_text())
    data["intervals"] = {**data.get("intervals", {}), "interval_s": 0}
    path.write_text(json.dumps(data))
    long_name = "partition." + "a." * 100_000 + "b"
    (root / "long.toml").write_text(f'[[rule]]\ncheck = "{long_name} >= 1"\n')
    (root / "long_metric.toml").write_text(f'[[rule]]\nmetric = "{long_name}"\n'
                                           'max_increase = "10%"\n')
    (root / "long_rhs.toml").write_text(f'[[rule]]\ncheck = "partition.p99_ms <= 2 * '
                                        f'{long_name}"\n')


P5 = [*P, "--messages", "5"]

# Issue 35: the surfaces added since the first sweep (each failed on main before it).
CASES_35: list[tuple[str, list[str], tuple[int, ...]]] = [
    # -- special and huge files as inputs: regular files only, size caps, within seconds
    ("props-fifo", [*P5, "--command-config", "{tmp}/fifo"], (2,)),
    ("props-devzero", [*P5, "--command-config", "/dev/zero"], (2,)),
    ("props-devnull", [*P5, "--command-config", "/dev/null"], (2,)),
    ("props-huge", [*P5, "--command-config", "{tmp}/big.properties"], (2,)),
    ("payload-fifo", [*P5, "--payload-file", "{tmp}/fifo"], (2,)),
    ("payload-devzero", [*P5, "--payload-file", "/dev/zero"], (2,)),
    ("payload-devurandom", [*P5, "--payload-file", "/dev/urandom"], (2,)),
    ("wl-fifo", [*P, "--workload", "{tmp}/fifo"], (2,)),
    ("wl-devzero", [*P, "--workload", "/dev/zero"], (2,)),
    ("gate-gates-fifo", ["gate", "{tmp}/run", "--gates", "{tmp}/fifo"], (2,)),
    ("gate-gates-devzero", ["gate", "{tmp}/run", "--gates", "/dev/zero"], (2,)),
    ("gate-results-fifo", ["gate", "{tmp}/fifo", "--gates", "{tmp}/ok.toml"], (2,)),
    ("report-results-devzero", ["report", "/dev/zero", "--no-charts"], (2,)),
    # -- two values for one thing: refused, never silently resolved
    ("props-two-files", [*P5, "--command-config", "{tmp}/a.properties", "--producer.config",
                         "{tmp}/b.properties"], (2,)),
    ("props-key-twice", [*P5, "--command-config", "{tmp}/dup.properties"], (2,)),
    ("X-twice-different", [*P5, "-X", "linger.ms=5", "-X", "linger.ms=50"], (2,)),
    ("txn-id-and-X", [*P5, "--transactional-id", "a", "-X", "transactional.id=b"], (2,)),
    ("sweep-slo-twice", ["sweep", "--slo", "p99<=50ms", "--slo", "p99<=20ms", "--modes",
                         "partition", "--out", "{tmp}/sw"], (2,)),
    ("sweep-out-in-proc", ["sweep", "--modes", "partition", "--out", "/proc/kbatch-sweep"],
     (2,)),
    # -- very long identifiers (Kafka's own limits)
    ("txn-id-huge", [*P5, "--transactional-id", "t" * 40_000], (2,)),
    ("txn-id-ctrl", [*P5, "--transactional-id", "a\x07b"], (2,)),
    ("topic-249-plus", [*P5, "--topic", "t" * 10_000], (2,)),
    # -- Spark: impossible ports, and a setting that would replace the checked master
    ("spark-port-99999", [*P5, "--runner", "spark", "--spark-master",
                          "spark://127.0.0.1:99999"], (2,)),
    ("spark-port-0", [*P5, "--runner", "spark", "--spark-master", "spark://127.0.0.1:0"],
     (2,)),
    ("spark-conf-master", [*P5, "--runner", "spark", "--spark-conf",
                           "spark.master=spark://10.1.2.3:7077"], (2,)),
    # a master that refuses connections: Spark would retry it for a minute; said in seconds
    ("spark-master-refuses", [*P5, "--runner", "spark", "--spark-master",
                              "spark://127.0.0.1:1"], (1,)),
    # -- damaged results directories and absurd numbers in results
    ("gate-no-request-log", ["gate", "{tmp}/run_nolog", "--gates", "{tmp}/ok.toml"], (2,)),
    ("report-no-request-log", ["report", "{tmp}/run_nolog", "--no-charts", "--out",
                               "{tmp}/r35a"], (2,)),
    ("gate-truncated-log", ["gate", "{tmp}/run_truncated", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-garbage-log", ["gate", "{tmp}/run_garbage_parquet", "--gates", "{tmp}/ok.toml"],
     (2,)),
    ("gate-400-digit-int", ["gate", "{tmp}/run_bigint", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-1e999", ["gate", "{tmp}/run_e999", "--gates", "{tmp}/ok.toml"], (2,)),
    ("report-minus-1e999", ["report", "{tmp}/run_neg_e999", "--no-charts", "--out",
                            "{tmp}/r35b"], (2,)),
    ("gate-interval-0", ["gate", "{tmp}/run_interval0", "--gates", "{tmp}/ok.toml"], (2,)),
    # -- a gates rule with a huge metric name: refused at once (it took cubic time)
    ("gate-long-check", ["gate", "{tmp}/run", "--gates", "{tmp}/long.toml"], (2,)),
    ("gate-long-metric", ["gate", "{tmp}/run", "--gates", "{tmp}/long_metric.toml"], (2,)),
    ("gate-long-rhs", ["gate", "{tmp}/run", "--gates", "{tmp}/long_rhs.toml"], (2,)),
]


# (id, arguments, expected exit codes)
CASES: list[tuple[str, list[str], tuple[int, ...]]] = [
    # -- durations, rates, counts, seeds (the issue's first examples)
    ("duration-1e308", [*P, "--duration", "1e308"], (2,)),
    ("duration-inf", [*P, "--duration", "inf"], (2,)),
    ("duration-nan", [*P, "--duration", "nan"], (2,)),
    ("duration-neg", [*P, "--duration", "-1"], (2,)),
    ("duration-zero", [*P, "--duration", "0"], (2,)),
    ("duration-text", [*P, "--duration", "ten"], (2,)),
    ("duration-week+", [*P, "--duration", "1e7"], (2,)),
    ("rate-1e308", [*P, "--rate", "1e308", "--duration", "1"], (2,)),
    ("rate-1e12", [*P, "--rate", "1e12", "--duration", "1"], (2,)),
    ("rate-inf", [*P, "--rate", "inf"], (2,)),
    ("rate-nan", [*P, "--rate", "nan"], (2,)),
    ("rate-neg", [*P, "--rate", "-5"], (2,)),
    ("rate-zero", [*P, "--rate", "0"], (2,)),
    ("rate-text", [*P, "--rate", "fast"], (2,)),
    ("rate-tiny", [*P, "--rate", "1e-300", "--duration", "1"], (2,)),
    ("keys-1e8", [*P, "--keys", "100000000"], (2,)),
    ("keys-neg", [*P, "--keys", "-1"], (2,)),
    ("seed-neg", [*P, "--seed", "-5"], (2,)),
    ("seed-huge", [*P, "--seed", "1" + "0" * 40], (2,)),
    ("seed-float", [*P, "--seed", "1.5"], (2,)),
    ("warmup-nan", [*P, "--warmup", "nan", "--duration", "2"], (2,)),
    ("warmup-inf", [*P, "--warmup", "inf", "--messages", "5"], (2,)),
    ("warmup-neg", [*P, "--warmup", "-1"], (2,)),
    ("warmup-1e308-messages", [*P, "--warmup", "1e308", "--messages", "5"], (2,)),
    ("messages-zero", [*P, "--messages", "0"], (2,)),
    ("messages-huge", [*P, "--messages", "1" + "0" * 30], (2,)),
    ("messages-float", [*P, "--messages", "1e3"], (2,)),
    ("partitions-zero", [*P, "--partitions", "0"], (2,)),
    ("partitions-huge", [*P, "--partitions", "100001"], (2,)),
    ("message-size-neg", [*P, "--message-size", "-1"], (2,)),
    ("message-size-huge", [*P, "--message-size", "1000000000"], (2,)),
    ("message-size-over-request", [*P, "--message-size", "2000000", "--messages", "1"], (2,)),
    ("rate-max-no-stop", [*P, "--rate", "max", "--duration", "1e308"], (2,)),
    # -- topic names
    ("topic-empty", [*P, "--topic", ""], (2,)),
    ("topic-dotdot", [*P, "--topic", ".."], (2,)),
    ("topic-dot", [*P, "--topic", "."], (2,)),
    ("topic-space", [*P, "--topic", "a b"], (2,)),
    ("topic-dollar", [*P, "--topic", "$x"], (2,)),
    ("topic-slash", [*P, "--topic", "a/b"], (2,)),
    ("topic-long", [*P, "--topic", "x" * 250], (2,)),
    ("topic-unicode", [*P, "--topic", "tópico"], (2,)),
    ("topic-newline", [*P, "--topic", "a\nb"], (2,)),
    # -- lab shape
    ("brokers-zero", [*P, "--brokers", "0"], (2,)),
    ("brokers-neg", [*P, "--brokers", "-3"], (2,)),
    ("brokers-huge", [*P, "--brokers", "100000"], (2,)),
    ("rtt-nan", [*P, "--rtt-ms", "nan"], (2,)),
    ("rtt-inf", [*P, "--rtt-ms", "inf"], (2,)),
    ("rtt-neg", [*P, "--rtt-ms", "-1"], (2,)),
    ("rtt-huge", [*P, "--rtt-ms", "1e308"], (2,)),
    ("jitter-nan", [*P, "--jitter-ms", "nan"], (2,)),
    ("jitter-neg", [*P, "--jitter-ms", "-1"], (2,)),
    ("jitter-over-rtt", [*P, "--rtt-ms", "1", "--jitter-ms", "5"], (2,)),
    # -- producer settings (-X)
    ("X-no-equals", [*P, "-X", "linger.ms"], (2,)),
    ("X-empty", [*P, "-X", "="], (2,)),
    ("X-unknown", [*P, "-X", "linger=5"], (2,)),
    ("X-text", [*P, "-X", "linger.ms=abc"], (2,)),
    ("X-neg", [*P, "-X", "linger.ms=-1"], (2,)),
    ("X-huge", [*P, "-X", "linger.ms=1e308"], (2,)),
    ("X-nan", [*P, "-X", "linger.ms=nan"], (2,)),
    ("X-inf", [*P, "-X", "buffer.memory=inf"], (2,)),
    ("X-bigint", [*P, "-X", "batch.size=" + "9" * 400], (2,)),
    ("X-acks", [*P, "-X", "acks=2"], (2,)),
    ("X-compression", [*P, "-X", "compression.type=brotli"], (2,)),
    ("X-client-id-huge", [*P, "-X", "client.id=" + "c" * 40000], (2,)),
    ("X-client-id-ctrl", [*P, "-X", "client.id=a\x07b"], (2,)),
    ("X-bruce-topic", [*P, "--mode", "bruce", "-X", "bruce.topic..max_delay_ms=5"], (2,)),
    ("X-aimd-nan", [*P, "--mode", "aimd", "-X", "aimd.increase.ms=nan"], (2,)),
    ("mode-unknown", [*P, "--mode", "fast"], (2,)),
    # -- workload files
    ("wl-missing", [*P, "--workload", "{tmp}/nope.yaml"], (2,)),
    ("wl-dir", [*P, "--workload", "{tmp}"], (2,)),
    ("wl-laughs", [*P, "--workload", "{tmp}/laughs.yaml"], (2,)),
    ("wl-alias-key", [*P, "--workload", "{tmp}/alias_key.yaml"], (2,)),
    ("wl-python-tag", [*P, "--workload", "{tmp}/tag.yaml"], (2,)),
    ("wl-python-object", [*P, "--workload", "{tmp}/tag_obj.yaml"], (2,)),
    ("wl-local-tag", [*P, "--workload", "{tmp}/local_tag.yaml"], (2,)),
    ("wl-binary-tag", [*P, "--workload", "{tmp}/binary.yaml"], (2,)),
    ("wl-huge-rate", [*P, "--workload", "{tmp}/huge_rate.yaml"], (2,)),
    ("wl-huge-duration", [*P, "--workload", "{tmp}/huge_duration.yaml"], (2,)),
    ("wl-huge-keys", [*P, "--workload", "{tmp}/huge_keys.yaml"], (2,)),
    ("wl-neg-seed", [*P, "--workload", "{tmp}/neg_seed.yaml"], (2,)),
    ("wl-huge-seed", [*P, "--workload", "{tmp}/huge_seed.yaml"], (2,)),
    ("wl-nan-warmup", [*P, "--workload", "{tmp}/nan_warmup.yaml"], (2,)),
    ("wl-inf-ramp", [*P, "--workload", "{tmp}/inf_ramp.yaml"], (2,)),
    ("wl-huge-bursts", [*P, "--workload", "{tmp}/huge_bursts.yaml"], (2,)),
    ("wl-many-steps", [*P, "--workload", "{tmp}/many_steps.yaml"], (2,)),
    ("wl-huge-weights", [*P, "--workload", "{tmp}/huge_weighted.yaml"], (2,)),
    ("wl-group-topics", [*P, "--workload", "{tmp}/group_topics.yaml"], (2,)),
    ("wl-dotdot", [*P, "--workload", "{tmp}/dotdot.yaml"], (2,)),
    ("wl-list-root", [*P, "--workload", "{tmp}/list_root.yaml"], (2,)),
    ("wl-not-yaml", [*P, "--workload", "{tmp}/not_yaml.yaml"], (2,)),
    ("wl-binary-garbage", [*P, "--workload", "{tmp}/binary_garbage.yaml"], (2,)),
    ("wl-headers-map", [*P, "--workload", "{tmp}/headers_map.yaml"], (2,)),
    ("wl-rate-limit-huge", [*P, "--workload", "{tmp}/rate_limit_big.yaml"], (2,)),
    ("wl-with-topic-flag", [*P, "--workload", "{tmp}/ok.yaml", "--topic", "x"], (2,)),
    ("wl-duration-nan", [*P, "--workload", "{tmp}/ok.yaml", "--duration", "nan"], (2,)),
    ("wl-seed-neg", [*P, "--workload", "{tmp}/ok.yaml", "--seed", "-1"], (2,)),
    # -- output paths: refused before the run
    ("json-in-proc", [*P, "--messages", "5", "--json", "/proc/kbatch-sweep.json"], (2,)),
    ("json-under-file", [*P, "--messages", "5", "--json", "{tmp}/afile/x.json"], (2,)),
    ("json-is-dir", [*P, "--messages", "5", "--json", "{tmp}"], (2,)),
    ("out-in-proc", [*P, "--messages", "5", "--out", "/proc/kbatch-sweep"], (2,)),
    ("out-is-file", [*P, "--messages", "5", "--out", "{tmp}/afile"], (2,)),
    ("out-under-file", [*P, "--messages", "5", "--out", "{tmp}/afile/sub"], (2,)),
    ("out-other-mode", [*P, "--messages", "5", "--out", "{tmp}/other_mode_out"], (2,)),
    ("cmp-out-other-kind", [*C, "--messages", "5", "--out", "{tmp}/other_mode_out"], (2,)),
    ("cmp-json-in-proc", [*C, "--messages", "5", "--json", "/proc/x.json"], (2,)),
    # -- compare-modes
    ("cmp-modes-empty", ["compare-modes", "--modes", ""], (2,)),
    ("cmp-modes-unknown", ["compare-modes", "--modes", "partition,fast"], (2,)),
    ("cmp-modes-dup", ["compare-modes", "--modes", "partition,partition"], (2,)),
    ("cmp-repeat-zero", [*C, "--repeat", "0"], (2,)),
    ("cmp-linger-neg", [*C, "--linger-ms", "-1"], (2,)),
    ("cmp-mode-config-bad", [*C, "--mode-config", "partition"], (2,)),
    ("cmp-mode-config-unknown-mode", [*C, "--mode-config", "fast:linger.ms=1"], (2,)),
    ("cmp-mode-config-value", [*C, "--mode-config", "partition:linger.ms=nan"], (2,)),
    ("cmp-duration-1e308", [*C, "--duration", "1e308"], (2,)),
    ("cmp-keys-1e8", [*C, "--keys", "100000000"], (2,)),
    # -- spark runner flags
    ("spark-workers-zero", [*P, "--runner", "spark", "--workers", "0"], (2,)),
    ("spark-workers-local", [*P, "--workers", "2"], (2,)),
    ("spark-master-bad", [*P, "--runner", "spark", "--spark-master", "yarn"], (2,)),
    ("spark-master-remote", [*P, "--runner", "spark", "--spark-master",
                             "spark://10.1.2.3:7077"], (2,)),
    ("spark-lead-nan", [*P, "--runner", "spark", "--spark-start-lead", "nan"], (2,)),
    ("spark-lead-huge", [*P, "--runner", "spark", "--spark-start-lead", "1e308"], (2,)),
    ("spark-conf-bad", [*P, "--runner", "spark", "--spark-conf", "nokey"], (2,)),
    ("spark-local-huge", [*P, "--runner", "spark", "--spark-master", "local[100000000]"],
     (2,)),
    # -- gate
    ("gate-nan-results", ["gate", "{tmp}/run_nan", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-inf-results", ["gate", "{tmp}/run_inf", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-nan-latency", ["gate", "{tmp}/run_nan_latency", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-rule-1e999", ["gate", "{tmp}/run", "--gates", "{tmp}/huge.toml"], (2,)),
    ("gate-rule-nan", ["gate", "{tmp}/run", "--gates", "{tmp}/nan.toml"], (2,)),
    ("gate-rule-inf", ["gate", "{tmp}/run", "--gates", "{tmp}/inf.toml"], (2,)),
    ("gate-bad-toml", ["gate", "{tmp}/run", "--gates", "{tmp}/bad.toml"], (2,)),
    ("gate-missing-gates", ["gate", "{tmp}/run", "--gates", "{tmp}/none.toml"], (2,)),
    ("gate-missing-results", ["gate", "{tmp}/none", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-bad-json", ["gate", "{tmp}/run_badjson", "--gates", "{tmp}/ok.toml"], (2,)),
    ("gate-gates-is-results", ["gate", "{tmp}/run", "--gates", "{tmp}/run/results.json"],
     (2,)),
    ("gate-markdown-proc", ["gate", "{tmp}/run", "--gates", "{tmp}/ok.toml", "--markdown",
                            "/proc/kbatch-gate.md"], (2,)),
    ("gate-markdown-under-file", ["gate", "{tmp}/run", "--gates", "{tmp}/ok.toml",
                                  "--markdown", "{tmp}/afile/g.md"], (2,)),
    ("gate-baseline-nan", ["gate", "{tmp}/run", "--gates", "{tmp}/ok.toml", "--baseline",
                           "{tmp}/run_nan"], (2,)),
    # -- report
    ("report-truncated-parquet", ["report", "{tmp}/run_truncated", "--out", "{tmp}/r1"], (2,)),
    ("report-garbage-parquet", ["report", "{tmp}/run_garbage_parquet", "--out", "{tmp}/r2"],
     (2,)),
    ("report-bad-json", ["report", "{tmp}/run_badjson", "--out", "{tmp}/r3"], (2,)),
    ("report-nan", ["report", "{tmp}/run_nan", "--out", "{tmp}/r4", "--no-charts"], (2,)),
    ("report-markdown-proc", ["report", "{tmp}/run", "--markdown", "/proc/k.md",
                              "--no-charts"], (2,)),
    ("report-out-is-file", ["report", "{tmp}/run", "--out", "{tmp}/afile"], (2,)),
    ("report-out-under-file", ["report", "{tmp}/run", "--out", "{tmp}/afile/r"], (2,)),
    ("report-missing", ["report", "{tmp}/none"], (2,)),
    # -- analyze: everything here is refused before Spark starts
    ("analyze-subquery", ["analyze", "{tmp}/run", "--out", "{tmp}/a1", "--where",
                          "mode IN (SELECT value FROM text.`/etc/passwd`)"], (2,)),
    ("analyze-java-method", ["analyze", "{tmp}/run", "--out", "{tmp}/a2", "--where",
                             "java_method('java.io.File', 'createTempFile', 'a', 'b') "
                             "IS NOT NULL"], (2,)),
    ("analyze-function", ["analyze", "{tmp}/run", "--out", "{tmp}/a3", "--where",
                          "reflect('java.lang.System', 'exit', 1) = 1"], (2,)),
    ("analyze-unknown-column", ["analyze", "{tmp}/run", "--out", "{tmp}/a4", "--where",
                                "colour = 'red'"], (2,)),
    ("analyze-unterminated", ["analyze", "{tmp}/run", "--out", "{tmp}/a5", "--where",
                              "mode = 'broker"], (2,)),
    ("analyze-semicolon", ["analyze", "{tmp}/run", "--out", "{tmp}/a6", "--where",
                           "mode = 'x'; DROP TABLE runs"], (2,)),
    ("analyze-empty-where", ["analyze", "{tmp}/run", "--out", "{tmp}/a7", "--where", ""],
     (2,)),
    ("analyze-group-bad", ["analyze", "{tmp}/run", "--out", "{tmp}/a8", "--group-by",
                           "nope"], (2,)),
    ("analyze-master-bad", ["analyze", "{tmp}/run", "--out", "{tmp}/a9", "--spark-master",
                            "mesos://x"], (2,)),
    ("analyze-missing", ["analyze", "{tmp}/none", "--out", "{tmp}/a10"], (2,)),
    ("analyze-out-is-file", ["analyze", "{tmp}/run", "--out", "{tmp}/afile"], (2,)),
    # -- lab (refused before any broker starts)
    ("lab-brokers-zero", ["lab", "up", "--brokers", "0"], (2,)),
    ("lab-rtt-nan", ["lab", "up", "--rtt-ms", "nan"], (2,)),
    ("lab-rtt-neg", ["lab", "up", "--rtt-ms", "-5"], (2,)),
    ("lab-base-port", ["lab", "up", "--base-port", "70000"], (2,)),
    *CASES_35,
]


@pytest.mark.parametrize(("args", "expected"), [(a, e) for _, a, e in CASES],
                         ids=[name for name, _, _ in CASES])
def test_bad_input_is_refused_cleanly(tmp, args, expected):
    outcome = run_kbatch([a.replace("{tmp}", str(tmp)) for a in args], seconds=20)
    assert not outcome.timed_out, outcome.describe()
    assert not outcome.internal_error, outcome.describe()
    assert outcome.exit_code in expected, outcome.describe()
    if outcome.exit_code == 2:
        assert "Error" in outcome.output, outcome.describe()
        assert "Producing to" not in outcome.output, "refused only after the run started"
        assert outcome.seconds < 10, outcome.describe()


def test_a_companion_option_that_does_not_apply_is_warned_about():
    """--reference-mode without --slo changes nothing: said so, not silently ignored."""
    outcome = run_kbatch(["sweep", "--modes", "partition", "--reference-mode", "broker",
                          "--out", "/proc/kbatch-sweep"], seconds=20)
    assert outcome.exit_code == 2, outcome.describe()
    assert "--reference-mode applies only with --slo" in outcome.output


def test_ssl_endpoint_identification_accepts_its_documented_empty_value():
    from producer_core.config import parse_assignment

    assert parse_assignment("ssl.endpoint.identification.algorithm=") == (
        "ssl.endpoint.identification.algorithm", "")
    outcome = run_kbatch([*P5, "-X", "ssl.endpoint.identification.algorithm=",
                          "--json", "/proc/kbatch-x.json"], seconds=20)
    assert "Malformed setting" not in outcome.output and "--json /proc" in outcome.output


def test_the_sweep_covers_the_issue(tmp):
    """The issue's examples are all in the sweep, and it stays large."""
    names = {name for name, _, _ in CASES}
    for needed in ("duration-1e308", "rate-1e308", "keys-1e8", "seed-neg", "wl-laughs",
                   "wl-python-tag", "warmup-nan", "gate-nan-results", "gate-rule-1e999",
                   "report-truncated-parquet", "topic-dotdot", "topic-space", "topic-dollar",
                   "topic-empty", "X-client-id-huge", "out-other-mode", "analyze-subquery",
                   "analyze-java-method", "gate-markdown-proc"):
        assert needed in names
    assert len(CASES) >= 150
