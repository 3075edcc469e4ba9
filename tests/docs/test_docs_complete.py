"""Every CLI command and option, and every splice.toml setting, is documented (datasette-style)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from pydantic import BaseModel

from splice.cli.main import cli, register_commands
from splice.config import workspace as cfg

register_commands()

ROOT = Path(__file__).resolve().parents[2]


def _walk(group: click.Group, prefix: str = "splice"):
    yield prefix, group
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, f"{prefix} {name}")
        else:
            yield f"{prefix} {name}", cmd


def test_every_command_and_option_is_in_the_cli_reference():
    text = (ROOT / "docs" / "cli.md").read_text()
    missing = []
    for path, cmd in _walk(cli):
        if path != "splice" and f"## `{path}" not in text:
            missing.append(f"section for `{path}`")
        section = (
            text.split(f"## `{path}", 1)[-1].split("\n## ", 1)[0] if path != "splice" else text
        )
        for p in cmd.params:
            if isinstance(p, click.Option):
                for opt in p.opts:
                    if opt.startswith("--") and f"`{opt}" not in section:
                        missing.append(f"{path} {opt}")
    assert not missing, "undocumented in docs/cli.md: " + ", ".join(missing)


def _block(text: str, section: str) -> str | None:
    for head in (f"## `[{section}]`", f"## `[[{section}]]`", f"## `[{section}.NAME]`"):
        if head in text:
            return text.split(head, 1)[1].split("\n## ", 1)[0]
    return None


@pytest.mark.parametrize("section", list(cfg.WorkspaceConfig.model_fields))
def test_every_setting_is_in_the_configuration_reference(section):
    text = (ROOT / "docs" / "configuration.md").read_text()
    block = _block(text, section)
    assert block is not None, f"docs/configuration.md has no section for [{section}]"
    ann = cfg.WorkspaceConfig.model_fields[section].annotation
    models = [
        t
        for t in (ann, *(getattr(ann, "__args__", None) or ()))
        if isinstance(t, type) and issubclass(t, BaseModel)
    ]
    missing = [f"{section}.{k}" for m in models for k in m.model_fields if f"`{k}`" not in block]
    assert not missing, "undocumented in docs/configuration.md: " + ", ".join(missing)


@pytest.mark.parametrize("table", ["dagster", "airflow"])
def test_every_orchestrator_setting_is_in_the_configuration_reference(table):
    from splice.config.orchestrators import AirflowDag, DagsterJob

    model = {"dagster": DagsterJob, "airflow": AirflowDag}[table]
    text = (ROOT / "docs" / "configuration.md").read_text()
    block = _block(text, f"ingestion.{table}")
    assert block is not None, f"docs/configuration.md has no section for [ingestion.{table}]"
    missing = [k for k in model.model_fields if f"`{k}`" not in block]
    assert not missing, f"undocumented in [ingestion.{table}]: " + ", ".join(missing)
