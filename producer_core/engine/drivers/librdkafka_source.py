"""librdkafka's pristine C sources, from a registry package that bundles them: the
rdkafka-sys crate, which keeps librdkafka's tree under ``librdkafka/``. cargo fetches the
crate from the machine's configured crate registry into its own cache (``cargo fetch``
of a throw-away manifest), and the tree is unpacked from the ``.crate`` archive.

Why a crate: no Python package ships librdkafka's sources (confluent-kafka's wheels ship
the built library, its sdist none), and rdkafka-sys pins one librdkafka release per crate
version (`CRATE_VERSION` bundles 2.12.1, the release the project's patch series is for).
Mode librdkafka-broker fetches it on first use (`librdkafka_patched`); the tests of own
builds use it too. Without cargo the error says what to install, or to give a tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from producer_core.errors import BrokerError, UsageError

CRATE = "rdkafka-sys"
CRATE_VERSION = "4.10.0"
LIBRDKAFKA_VERSION = "2.12.1"
"""The librdkafka release `CRATE` `CRATE_VERSION` bundles."""
FETCH_TIMEOUT_S = 900
TREE_ENV = "KBATCH_LIBRDKAFKA_TREE"
"""A pristine librdkafka tree of `LIBRDKAFKA_VERSION` to use instead of fetching one."""


def find_cargo() -> str | None:
    """cargo on PATH, else rustup's default place (``~/.cargo/bin``), else None."""
    found = shutil.which("cargo")
    if found:
        return found
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    candidate = home / "bin" / "cargo"
    return str(candidate) if candidate.is_file() else None


def no_cargo_message(why: str) -> str:
    """The one paragraph a user without cargo gets."""
    return (f"{why} needs librdkafka {LIBRDKAFKA_VERSION}'s C sources, which kbatch takes "
            f"from the {CRATE} {CRATE_VERSION} crate with cargo, and cargo is not installed "
            "(not on PATH nor in ~/.cargo/bin). Install Rust's cargo (rustup, or your "
            "system's cargo package), or give a librdkafka source tree of that release "
            f"yourself: {TREE_ENV}=DIR. Nothing was started.")


def fetch_tree(work: Path, progress: Callable[[str], None] | None = None,
               cargo: str | None = None) -> Path:
    """A fresh, unpacked copy of librdkafka's tree under `work`; UsageError without
    cargo, BrokerError when cargo cannot fetch the crate."""
    cargo = cargo or find_cargo()
    if cargo is None:
        raise UsageError(no_cargo_message("This"))
    if progress is not None:
        progress(f"Fetching librdkafka {LIBRDKAFKA_VERSION}'s sources (the {CRATE} "
                 f"{CRATE_VERSION} crate, with cargo; first use only)...")
    project = work / "fetch"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "Cargo.toml").write_text(
        '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n'
        f'{CRATE} = {{ version = "={CRATE_VERSION}", default-features = false }}\n')
    (project / "src" / "lib.rs").write_text("")
    try:
        proc = subprocess.run([cargo, "fetch", "--manifest-path", str(project / "Cargo.toml")],
                              timeout=FETCH_TIMEOUT_S, capture_output=True, text=True,
                              check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"cargo did not fetch the {CRATE} {CRATE_VERSION} crate within "
                          f"{FETCH_TIMEOUT_S} s.") from exc
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-5:])
        raise BrokerError(f"cargo could not fetch the {CRATE} {CRATE_VERSION} crate (exit "
                          f"code {proc.returncode}): {tail}")
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    crates = sorted((home / "registry" / "cache").glob(f"*/{CRATE}-{CRATE_VERSION}+*.crate"))
    if not crates:
        raise BrokerError(f"cargo fetched the {CRATE} {CRATE_VERSION} crate but it is not in "
                          f"{home / 'registry' / 'cache'}.")
    with tarfile.open(crates[0]) as archive:
        archive.extractall(work / "crate", filter="data")
    tree = next(iter((work / "crate").glob(f"{CRATE}-*"))) / "librdkafka"
    (tree / "configure").chmod(0o755)
    return tree
