"""The Kafka image ``--broker docker`` runs: ``apache/kafka:<pinned>``, or one built here.

Where no container registry answers, ``apache/kafka`` cannot be pulled, so kbatch builds
an image of its own in two steps, both reused once present:

1. a base: a Debian root filesystem made with ``debootstrap`` from the mirror and suite
   this machine's apt uses, with a headless JRE inside, ``docker import``-ed as
   ``kbatch/debian-jre:<suite>-<hash>``;
2. the Kafka image: ``kafka_image/Dockerfile`` FROM that base, adding the Kafka jars kbatch
   already caches from Maven Central (``kafka_dist``), tagged
   ``kbatch/kafka:<version>-<hash>``, the hash covering the recipe (Dockerfile, scripts,
   base packages), so a changed recipe never reuses a stale image.

The image takes apache/kafka's configuration (``CLUSTER_ID`` and ``KAFKA_*`` variables), so
``--broker docker`` and docker-compose.yml run either image alike.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from producer_core.brokers.kafka_dist import KAFKA_VERSION, resolve
from producer_core.errors import BrokerError, UsageError

RECIPE_DIR = Path(__file__).with_name("kafka_image")
OFFICIAL_IMAGE = f"apache/kafka:{KAFKA_VERSION}"
LOCAL_REPOSITORY = "kbatch/kafka"
BASE_REPOSITORY = "kbatch/debian-jre"
JRE_PACKAGE = "openjdk-17-jre-headless"
BASE_PACKAGES = (JRE_PACKAGE, "ca-certificates", "procps", "iproute2")
PULL_TIMEOUT_S = 120
DEBOOTSTRAP_TIMEOUT_S = 1800

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageChoice:
    """The image a run uses and where it came from (for results and messages)."""

    name: str
    kafka_version: str
    origin: str  # "present", "pulled", "built"


def apt_mirror(root: Path = Path("/")) -> tuple[str, str]:
    """(mirror URI, suite) of this machine's first plain Debian apt source; a UsageError
    that says what to do when it has none (no mirror is guessed: the image is built from
    what this machine's apt already trusts)."""
    found = apt_source(root)
    if found is None:
        raise UsageError(
            f"Building kbatch's Kafka image needs a Debian apt source on this machine to "
            f"debootstrap from, and {root / 'etc' / 'apt'} names none (a `deb URI SUITE "
            "main` line in sources.list, or a deb822 .sources file). Add the Debian mirror "
            f"you use there, or load {OFFICIAL_IMAGE} into Docker (or pass another with "
            "--kafka-image), or use --broker kafka (needs a JDK).")
    return found


def apt_source(root: Path = Path("/")) -> tuple[str, str] | None:
    """(mirror URI, suite) of this machine's first plain Debian apt source, or None.

    Reads deb822 ``*.sources`` files and one-line ``sources.list`` entries; skips the
    security and updates suites (debootstrap needs the main archive)."""
    candidates: list[tuple[str, str]] = []
    apt = root / "etc" / "apt"
    for path in sorted((apt / "sources.list.d").glob("*.sources")):
        for stanza in path.read_text(errors="replace").split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                if ":" in line and not line.lstrip().startswith("#"):
                    key, _, value = line.partition(":")
                    fields[key.strip().lower()] = value.split()
            if "deb" in fields.get("types", []) and fields.get("uris") and fields.get("suites"):
                candidates += [(fields["uris"][0], s) for s in fields["suites"]]
    for path in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            words = [w for w in line.split() if not w.startswith("[")]
            if len(words) >= 3 and words[0] == "deb":
                candidates.append((words[1], words[2]))
    for uri, suite in candidates:
        if "debian" in uri and "security" not in uri and "-" not in suite:
            return uri.rstrip("/"), suite
    return None


def recipe_hash(mirror_suite: tuple[str, str] | None = None) -> str:
    """12 hex digits over everything that decides the image's content."""
    digest = hashlib.sha256()
    _, suite = mirror_suite or apt_mirror()
    digest.update(f"{KAFKA_VERSION}\n{suite}\n{' '.join(BASE_PACKAGES)}\n".encode())
    for path in sorted(p for p in RECIPE_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(RECIPE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def local_image_name() -> str:
    return f"{LOCAL_REPOSITORY}:{KAFKA_VERSION}-{recipe_hash()}"


def _base_image_name(mirror_suite: tuple[str, str]) -> str:
    suite = mirror_suite[1]
    digest = hashlib.sha256(f"{suite}\n{' '.join(BASE_PACKAGES)}".encode()).hexdigest()[:12]
    return f"{BASE_REPOSITORY}:{suite}-{digest}"


def _docker(*args: str, timeout: float = 600, input_bytes: bytes | None = None,
            ) -> subprocess.CompletedProcess[bytes]:
    docker = shutil.which("docker")
    if docker is None:
        raise UsageError("--broker docker builds and inspects images with the `docker` command, "
                         "which is not on PATH. Install Docker (Debian: `apt-get install "
                         "docker.io`) and check `docker info`.")
    return subprocess.run([docker, *args], capture_output=True, timeout=timeout,
                          input=input_bytes, check=False)


def image_present(name: str) -> bool:
    return _docker("image", "inspect", name, timeout=60).returncode == 0


def try_pull(name: str, progress: Progress) -> bool:
    """Pull ``name``; False (not an error) when no registry gives it."""
    progress(f"Pulling {name}...")
    try:
        proc = _docker("pull", name, timeout=PULL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        progress(f"Pulling {name} did not finish in {PULL_TIMEOUT_S} s.")
        return False
    if proc.returncode != 0:
        reason = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        progress(f"Could not pull {name}: {reason[0]}")
        return False
    return True


def choose_image(requested: str | None, progress: Progress) -> ImageChoice:
    """The image to run: ``requested`` (``--kafka-image``) or the pinned apache/kafka,
    present or pulled; the pinned one falls back to kbatch's local build."""
    name = requested or OFFICIAL_IMAGE
    version = _version_of(name)
    if image_present(name):
        return ImageChoice(name, version, "present")
    # without an apt source there is no local image to name: pull, else say so (build)
    local = local_image_name() if apt_source() is not None else None
    if requested is None and local is not None and image_present(local):
        return ImageChoice(local, KAFKA_VERSION, "present")
    if try_pull(name, progress):
        return ImageChoice(name, version, "pulled")
    if requested is not None and requested != local:
        raise UsageError(
            f"--kafka-image {requested} is not on this machine and could not be pulled. "
            "Pull or load it with Docker first, or leave --kafka-image out: kbatch then "
            f"uses {OFFICIAL_IMAGE}, or builds its own Kafka {KAFKA_VERSION} image where "
            "that cannot be pulled (`kbatch image build`).")
    return ImageChoice(build_image(progress), KAFKA_VERSION, "built")


def _version_of(image: str) -> str:
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    return tag.split("-", 1)[0] if tag and tag[0].isdigit() else KAFKA_VERSION


def build_image(progress: Progress, force: bool = False) -> str:
    """Build (or reuse) kbatch's Kafka image; return its name."""
    name = local_image_name()
    if not force and image_present(name):
        progress(f"Image {name} is already built.")
        return name
    mirror_suite = apt_mirror()
    base = _base_image_name(mirror_suite)
    if force or not image_present(base):
        build_base(base, mirror_suite, progress)
    dist = resolve(None, progress)
    began = time.monotonic()
    progress(f"Building {name} FROM {base} with the Kafka {dist.version} jars of {dist.libs}...")
    with tempfile.TemporaryDirectory(prefix="kbatch-image-") as tmp:
        context = Path(tmp)
        shutil.copytree(RECIPE_DIR, context, dirs_exist_ok=True)
        shutil.copytree(dist.libs, context / "libs")
        proc = _docker("build", "--build-arg", f"BASE={base}", "-t", name,
                       "--label", "kbatch.recipe=" + recipe_hash(mirror_suite), str(context),
                       timeout=DEBOOTSTRAP_TIMEOUT_S)
    if proc.returncode != 0:
        raise BrokerError(f"docker build of {name} failed:\n{_tail(proc)}")
    progress(f"Built {name} in {time.monotonic() - began:.0f} s.")
    return name


def build_base(name: str, mirror_suite: tuple[str, str], progress: Progress) -> None:
    """debootstrap a minimal Debian with a headless JRE and ``docker import`` it."""
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise UsageError(
            "Building kbatch's Kafka image needs debootstrap, which is not installed "
            "(`apt-get install debootstrap`, as root). Or load an apache/kafka image into "
            "Docker and pass it with --kafka-image.")
    if os.geteuid() != 0:
        raise UsageError("Building kbatch's base image runs debootstrap, which needs root. "
                         "Run `kbatch image build` as root once; later runs reuse the image.")
    mirror, suite = mirror_suite
    began = time.monotonic()
    progress(f"Building base image {name}: debootstrap {suite} from {mirror} with "
             f"{JRE_PACKAGE} (a few minutes, once)...")
    with tempfile.TemporaryDirectory(prefix="kbatch-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        proc = subprocess.run(
            [debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
             suite, str(rootfs), mirror],
            capture_output=True, timeout=DEBOOTSTRAP_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise BrokerError(f"debootstrap of {suite} from {mirror} failed:\n{_tail(proc)}")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / junk).glob("*"):
                if path.is_file():
                    path.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        imported = subprocess.run(["docker", "import", "-", name], stdin=tar.stdout,
                                  capture_output=True, timeout=600, check=False)
        tar.stdout.close()
        tar.wait()
    if imported.returncode != 0:
        raise BrokerError(f"docker import of {name} failed:\n{_tail(imported)}")
    progress(f"Built base image {name} in {time.monotonic() - began:.0f} s.")


def _tail(proc: subprocess.CompletedProcess[bytes]) -> str:
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()
    return "\n".join(text.splitlines()[-20:])


if __name__ == "__main__":  # `python -m producer_core.brokers.docker_image`: .ci/run's step
    import sys

    print(build_image(lambda message: print(message, file=sys.stderr, flush=True)))
