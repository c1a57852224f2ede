"""librdkafka's C sources for the tests of own builds, from a registry package that bundles
them: the rdkafka-sys crate (cargo fetches it from the machine's crate registry; the crate
keeps librdkafka's tree under `librdkafka/`). None when cargo is not there."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

CRATE = "rdkafka-sys"
CRATE_VERSION = "4.10.0"
"""Bundles librdkafka 2.12.1."""


def fetch_tree(work: Path) -> Path | None:
    """A fresh copy of librdkafka's tree under `work` (None: no cargo)."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not Path(cargo).is_file():
        return None
    project = work / "fetch"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "Cargo.toml").write_text(
        '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n'
        f'{CRATE} = {{ version = "={CRATE_VERSION}", default-features = false }}\n')
    (project / "src" / "lib.rs").write_text("")
    subprocess.run([cargo, "fetch", "--manifest-path", str(project / "Cargo.toml")],
                   check=True, timeout=900, capture_output=True)
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    crate = next(iter(sorted((home / "registry" / "cache").glob(
        f"*/{CRATE}-{CRATE_VERSION}+*.crate"))))
    with tarfile.open(crate) as archive:
        archive.extractall(work / "crate", filter="data")
    tree = next(iter((work / "crate").glob(f"{CRATE}-*"))) / "librdkafka"
    (tree / "configure").chmod(0o755)
    return tree
