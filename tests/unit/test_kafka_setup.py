"""Where --broker kafka gets Kafka from, and the errors when it cannot: exit 2, one paragraph
naming what to install, never a traceback; the Maven cache is filled atomically, once.

Maven itself is replaced by a small script here: what is tested is kbatch's handling of
its outcome (success, failure), not Maven."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from producer_core.brokers.kafka_dist import KAFKA_VERSION, KafkaUnavailable, resolve
from producer_core.errors import BrokerError

JAVA = shutil.which("java")


def _kbatch(env: dict[str, str | None], *args: str):
    result = CliRunner().invoke(cli, ["produce", *args, "--duration", "1", "--no-progress"],
                                env=env)
    assert "Traceback" not in result.output
    return result


def _bin_dir(tmp_path: Path, java: bool, mvn_script: str | None = None) -> Path:
    """A PATH directory with only what a test wants: java (linked) and/or a fake mvn."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if java and JAVA:
        (bin_dir / "java").symlink_to(JAVA)
    if mvn_script is not None:
        mvn = bin_dir / "mvn"
        mvn.write_text("#!/bin/sh\nPATH=/usr/bin:/bin\n" + mvn_script)
        mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _env(tmp_path: Path, bin_dir: Path) -> dict[str, str | None]:
    return {"PATH": str(bin_dir), "JAVA_HOME": None, "KAFKA_HOME": None,
            "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_no_java_and_no_kafka_home_says_what_to_install(tmp_path):
    result = _kbatch(_env(tmp_path, _bin_dir(tmp_path, java=False)), "--broker", "kafka")
    assert result.exit_code == 2
    assert "Java runtime" in result.output and "Maven" in result.output
    assert "KAFKA_HOME" in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.skipif(JAVA is None, reason="needs java on PATH to hide Maven only")
def test_no_maven_and_no_kafka_home_says_what_to_install(tmp_path):
    result = _kbatch(_env(tmp_path, _bin_dir(tmp_path, java=True)), "--broker", "kafka")
    assert result.exit_code == 2 and "Maven" in result.output and "apt-get install maven" in (
        result.output)
    assert not (tmp_path / "cache" / "kbatch").exists() or not any(
        (tmp_path / "cache" / "kbatch").iterdir())


def test_kafka_home_that_is_not_kafka_is_refused(tmp_path):
    result = _kbatch({"KAFKA_HOME": None}, "--broker", "kafka", "--kafka-home", str(tmp_path))
    assert result.exit_code == 2 and "not an Apache Kafka distribution" in result.output


@pytest.mark.parametrize("args, fragment", [
    (["--broker", "kafka", "--brokers", "2"], "1 node or of 3"),
    (["--broker", "kafka", "--bootstrap-servers", "127.0.0.1:1"], "--bootstrap-servers"),
    (["--kafka-home", "/opt/kafka"], "only applies with --broker kafka"),
])
def test_impossible_broker_choices_are_usage_errors(args, fragment):
    result = _kbatch({}, *args)
    assert result.exit_code == 2 and fragment in result.output


_FAKE_MVN_OK = """
echo run >> "$KBATCH_TEST_MVN_LOG"
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac
done
mkdir -p "$out" && touch "$out/kafka_2.13-VERSION.jar" "$out/kafka-tools-VERSION.jar"
""".replace("VERSION", KAFKA_VERSION)


@pytest.mark.skipif(JAVA is None, reason="resolve() needs a java on PATH")
def test_jars_are_fetched_once_into_the_cache(tmp_path, monkeypatch):
    log = tmp_path / "mvn.log"
    bin_dir = _bin_dir(tmp_path, java=True, mvn_script=_FAKE_MVN_OK)
    for key, value in _env(tmp_path, bin_dir).items():
        monkeypatch.setenv(key, value) if value is not None else monkeypatch.delenv(key, False)
    monkeypatch.setenv("KBATCH_TEST_MVN_LOG", str(log))
    messages: list[str] = []
    dist = resolve(progress=messages.append)
    target = tmp_path / "cache" / "kbatch" / f"kafka-{KAFKA_VERSION}"
    assert dist.libs == target / "libs" and dist.version == KAFKA_VERSION
    assert (target / "libs" / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file()
    assert "Fetching Apache Kafka" in messages[0] and len(messages) == 2
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temp left
    again: list[str] = []
    assert resolve(progress=again.append).libs == dist.libs
    assert again == [] and log.read_text().count("run") == 1  # later runs use the cache


@pytest.mark.skipif(JAVA is None, reason="resolve() needs a java on PATH")
def test_a_failed_fetch_leaves_no_cache_behind(tmp_path, monkeypatch):
    bin_dir = _bin_dir(tmp_path, java=True,
                       mvn_script="echo 'Could not resolve dependencies' ; exit 1\n")
    for key, value in _env(tmp_path, bin_dir).items():
        monkeypatch.setenv(key, value) if value is not None else monkeypatch.delenv(key, False)
    with pytest.raises(BrokerError, match="Could not resolve dependencies") as info:
        resolve(progress=lambda _: None)
    assert not isinstance(info.value, KafkaUnavailable)
    cache = tmp_path / "cache" / "kbatch"
    assert list(cache.iterdir()) == []  # neither the target nor a temp dir



def _properties(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line)
    return dict(pairs)


def test_node_configs_form_one_quorum_and_take_extra_listeners_and_properties(tmp_path):
    from producer_core.brokers.kafka import KafkaCluster
    from producer_core.brokers.kafka_dist import KafkaDist

    cluster = KafkaCluster(
        nodes=3, advertised_ports={2: 40002},
        extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
        server_properties={"sasl.enabled.mechanisms": "PLAIN",
                           "log.dirs": "{data_dir}/custom",
                           "kbatch.test.port": "{port:SASL_PLAINTEXT}-{node_id}"},
        dist=KafkaDist("java", tmp_path, "4.4.0", "test"))
    cluster._root = tmp_path
    cluster._plan()
    configs = {n: _properties(tmp_path / f"node-{n}" / "server.properties") for n in (1, 2, 3)}
    voters = {c["controller.quorum.voters"] for c in configs.values()}
    assert len(voters) == 1 and len(next(iter(voters)).split(",")) == 3
    ports = [cluster.port(n, name) for n in (1, 2, 3)
             for name in ("CLIENT", "INTERNAL", "CONTROLLER", "SASL_PLAINTEXT")]
    assert len(set(ports)) == 12  # every listener of every node has its own port
    two = configs[2]
    assert two["node.id"] == "2" and two["process.roles"] == "broker,controller"
    assert f"CLIENT://127.0.0.1:{cluster.port(2)}" in two["listeners"]
    assert "CLIENT://127.0.0.1:40002" in two["advertised.listeners"]
    assert "CONTROLLER" not in two["advertised.listeners"]
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in two["listener.security.protocol.map"]
    assert two["sasl.enabled.mechanisms"] == "PLAIN"
    assert two["log.dirs"] == f"{tmp_path / 'node-2'}/custom"
    assert two["kbatch.test.port"] == f"{cluster.port(2, 'SASL_PLAINTEXT')}-2"
    assert all(c["listeners"].count("127.0.0.1") == 4 for c in configs.values())
    assert cluster.bootstrap.split(",")[1] == "127.0.0.1:40002"


def test_cluster_ids_never_start_with_a_dash() -> None:
    """The storage tool would read an id starting with '-' as an option (1 in 64 random
    UUIDs encode that way): such a draw is replaced, as Kafka's Uuid.randomUuid does."""
    import base64
    import uuid

    from producer_core.brokers.node_cluster import new_cluster_id

    dashed = uuid.UUID(bytes=base64.urlsafe_b64decode("-" + "A" * 21 + "=="))
    plain = uuid.UUID(int=12345)
    draws = iter([dashed, dashed, plain])
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    cluster_id = new_cluster_id(lambda: next(draws))
    assert cluster_id == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")
    assert len(cluster_id) == 22
