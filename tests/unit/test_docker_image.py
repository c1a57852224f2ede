"""The image recipe and the container route's pure parts: which apt mirror debootstrap
uses, what the recipe hash covers, Kafka property names as environment variables, and the
paragraph a missing Docker gets."""

from __future__ import annotations

import pytest

from producer_core.brokers import docker_image
from producer_core.brokers.docker import DockerUnavailable, docker_client, property_variable
from producer_core.brokers.docker_image import apt_mirror, recipe_hash
from producer_core.brokers.kafka_dist import KAFKA_VERSION
from producer_core.errors import UsageError


def write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_mirror_and_suite_come_from_debian_sources_not_security_or_updates(tmp_path):
    write(tmp_path, "etc/apt/sources.list.d/debian.sources", """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.example.org/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://deb.example.org/debian-security
Suites: bookworm-security
Components: main
""")
    write(tmp_path, "etc/apt/sources.list.d/other.list",
          "deb [arch=amd64] https://packages.example.com/apt cloud-sdk main\n")
    assert apt_mirror(tmp_path) == ("http://deb.example.org/debian", "bookworm")


def test_one_line_sources_and_the_fallback(tmp_path):
    write(tmp_path, "etc/apt/sources.list",
          "deb http://security.debian.org/debian-security trixie-security main\n"
          "deb http://ftp.de.debian.org/debian/ trixie main contrib\n")
    assert apt_mirror(tmp_path) == ("http://ftp.de.debian.org/debian", "trixie")
    # no apt source: no guessed mirror, but an error that says what to do (issue 47)
    assert docker_image.apt_source(tmp_path / "nothing") is None
    with pytest.raises(UsageError, match="needs a Debian apt source") as error:
        apt_mirror(tmp_path / "nothing")
    assert "--kafka-image" in str(error.value) and "--broker kafka" in str(error.value)


def test_the_recipe_hash_covers_every_recipe_file_and_the_kafka_version(tmp_path, monkeypatch):
    recipe = tmp_path / "recipe"
    write(recipe, "Dockerfile", "FROM base\n")
    write(recipe, "bin/start.sh", "exec kafka\n")
    monkeypatch.setattr(docker_image, "RECIPE_DIR", recipe)
    first = recipe_hash(("m", "bookworm"))
    assert first == recipe_hash(("another mirror", "bookworm"))  # same packages either way
    assert first != recipe_hash(("m", "trixie"))
    write(recipe, "bin/start.sh", "exec kafka --changed\n")
    second = recipe_hash(("m", "bookworm"))
    assert second != first
    monkeypatch.setattr(docker_image, "KAFKA_VERSION", "9.9.9")
    assert recipe_hash(("m", "bookworm")) not in (first, second)


def test_the_local_image_is_tagged_by_version_and_recipe():
    name = docker_image.local_image_name()
    assert name == f"kbatch/kafka:{KAFKA_VERSION}-{recipe_hash()}"
    assert f"apache/kafka:{KAFKA_VERSION}" == docker_image.OFFICIAL_IMAGE
    assert docker_image._version_of(name) == KAFKA_VERSION
    assert docker_image._version_of("apache/kafka:3.9.1") == "3.9.1"
    assert docker_image._version_of("registry:5000/kafka") == KAFKA_VERSION


@pytest.mark.parametrize("key, variable", [
    ("node.id", "KAFKA_NODE_ID"),
    ("listener.security.protocol.map", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"),
    ("some_key.with-dash", "KAFKA_SOME__KEY_WITH___DASH"),
])
def test_properties_become_apache_kafka_image_variables(key, variable):
    assert property_variable(key) == variable


def test_the_image_start_script_reads_the_same_convention_back():
    script = (docker_image.RECIPE_DIR / "bin" / "kbatch-kafka-start.sh").read_text()
    assert "s/___/-/g" in script and "s/__/@/g" in script and "s/_/./g" in script


def test_a_daemon_that_does_not_answer_gets_one_paragraph(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailable) as error:
        docker_client()
    text = str(error.value)
    assert text.startswith("--broker docker needs a Docker engine")
    assert "docker info" in text and "--broker kafka" in text and "\n" not in text


def test_a_missing_python_module_is_named_as_one(monkeypatch):
    """Issue 47: "(docker is missing)" read as Docker the engine; the error names the
    Python module and the interpreter it is missing from."""
    import builtins

    real_import = builtins.__import__

    def no_docker(name, *args, **kwargs):
        if name == "docker":
            raise ImportError("No module named 'docker'", name="docker")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_docker)
    with pytest.raises(DockerUnavailable) as error:
        docker_client()
    text = str(error.value)
    assert "the Python module `docker` is missing" in text and "testcontainers" in text


def test_the_jvm_under_a_containers_main_process_is_found(tmp_path):
    """Broker cost reads a container node's CPU from its JVM's host pid (issue 47): the
    main process itself when it is Java, else the Java process under it."""
    from producer_core.brokers.docker import jvm_of

    def process(pid: int, cmdline: bytes, children: list[int]) -> None:
        task = tmp_path / str(pid) / "task" / str(pid)
        task.mkdir(parents=True)
        (tmp_path / str(pid) / "cmdline").write_bytes(cmdline)
        (task / "children").write_text(" ".join(map(str, children)))

    process(10, b"/bin/bash\0/etc/kafka/docker/run\0", [11])
    process(11, b"sh\0-c\0start\0", [12])
    process(12, b"/usr/bin/java\0-Xmx1g\0kafka.Kafka\0", [])
    process(20, b"/usr/bin/java\0kafka.Kafka\0", [])
    assert jvm_of(10, tmp_path) == 12
    assert jvm_of(20, tmp_path) == 20
    assert jvm_of(99, tmp_path) == 99  # nothing readable: the pid itself
