"""The documentation site builds strictly, offline, with reference tables that follow the code.

`mkdocs build --strict` fails on a broken link or anchor, a page missing from the nav, or a
reference table the hook cannot generate (docs/hooks/reference.py imports the code's tables
by their public names, so a refactor that moves one fails here, not silently in the docs).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# Any HTTP(S) fetch during the build goes to a closed loopback port and fails: the build must
# not need the network (material's Google Fonts are off in mkdocs.yml, no plugin fetches).
NO_NETWORK = {name: "http://127.0.0.1:9" for name in
              ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **NO_NETWORK, "NO_PROXY": "", "no_proxy": "", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(config), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=config.parent,
                          env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook",
                                                  ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "reference/cli/index.html",
                 "reference/settings/index.html", "findings/index.html",
                 "architecture/index.html"):
        assert (site / page).is_file(), page


def test_site_needs_no_network(site: Path) -> None:
    """material fetches Google Fonts unless `font: false`; nothing may point off the machine
    to render a page (links in the text are fine, stylesheets and scripts are not)."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text, page
        for tag in re.findall(r"<(?:link|script)[^>]*>", text):
            assert "://" not in tag or "localhost" in tag, (page, tag)


def test_generated_reference_is_in_the_built_site(site: Path) -> None:
    from producer_core.config import SETTINGS
    from producer_core.engine.modes import REGISTRY

    settings = (site / "reference/settings/index.html").read_text()
    for name in SETTINGS:
        assert f"<code>{name}</code>" in settings, name
    modes = (site / "reference/modes/index.html").read_text()
    for spec in REGISTRY:
        assert f"<code>{spec.name}</code>" in modes, spec.name
    assert "<!-- kbatch:generate" not in settings


def test_generated_tables_follow_the_code() -> None:
    """Each generator lists every entry of the code's table it documents."""
    import click

    from cli.main import cli
    from producer_core.results.metric_catalog import METRICS, TOPIC_METRICS

    hook = load_hook()
    metrics = hook.metrics_table()
    for metric in METRICS:
        assert f"`{metric.path}`" in metrics, metric.path
    for metric in TOPIC_METRICS:
        assert f"`{metric.field}`" in metrics, metric.field
    reference = hook.cli_reference()
    for name, command in cli.commands.items():
        assert f"## `kbatch {name}`" in reference, name
        ctx = click.Context(command, info_name=name)
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in reference, (name, param.opts[0])
    schema = hook.schema_tables()
    for field in ("requests_sent", "msgs_per_req", "latency", "messages.acknowledged"):
        assert f"`{field}`" in schema, field
    codes = hook.exit_code_table()
    for code in (0, 1, 2, 3, 4, 130, 143):
        assert f"| `{code}` |" in codes, code


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "getting-started.md"
    page.write_text(page.read_text() + "\nSee [nowhere](guides/no-such-page.md).\n")
    done = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr


def test_a_missing_generated_table_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "reference" / "modes.md"
    page.write_text(page.read_text().replace("<!-- kbatch:generate modes -->", ""))
    done = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "modes" in done.stdout + done.stderr


def test_readme_is_short_and_links_inside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    test_command = ci[ci.index("# The README's test command, verbatim:") + 1]
    assert test_command in readme.splitlines()
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links, "the README links into the docs"
    for link in links:
        assert "://" not in link, link
        assert (ROOT / link.split("#")[0]).exists(), link
    last = [line for line in readme.splitlines() if line.strip()][-1]
    assert "://" not in last
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", readme), "dated figures belong in docs/findings"
