"""splice.toml validation: errors name the file and the key."""

from __future__ import annotations

import pytest

from splice.config.workspace import parse_config
from splice.errors import ConfigError

PROJECT = '[[projects]]\nname = "a"\nformat = "dbt"\npath = "."\n'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (PROJECT * 2, "project name 'a' is used twice"),
        (
            '[[metrics]]\nname = "m"\nnode = "p:x"\ntime = "t"\nvalue = "sum(a)"\n' * 2,
            "metric name 'm'",
        ),
        ('[[projects]]\nname = "a"\nformat = "dbtt"\npath = "."\n', "projects[0].format"),
        ('[[projects]]\nname = "a"\nformat = "dbt"\n', "missing key 'projects[0].path'"),
        ("[workspace\n", "not valid TOML"),
        ('[warehouse]\ntype = "spark"\nremote = "thrift://spark:10000"\n', "Spark Connect only"),
        ('[warehouse]\ntype = "spark"\n', 'needs remote = "sc://HOST:PORT"'),
        (
            '[[ingestion]]\nname = "fx"\nrunner = "dagster"\n',
            "ingestion 'fx' has runner = \"dagster\" but no [ingestion.dagster] table",
        ),
        (
            '[[ingestion]]\nname = "fx"\n[ingestion.dagster]\nurl = "http://h:1"\n',
            'set runner = "dagster"',
        ),
        (
            '[[ingestion]]\nname = "fx"\nrunner = "dagster"\n[ingestion.dagster]\nurl = "h:1"\n',
            "is not an http(s):// URL of the orchestrator's webserver",
        ),
        (
            '[[ingestion]]\nname = "fx"\nrunner = "dagster"\n[ingestion.dagster]\n'
            'url = "http://h:1"\ndays = "weekly"\n',
            "ingestion[0].dagster.days",
        ),
    ],
)
def test_bad_config_is_a_clear_error(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        parse_config(text, "ws/splice.toml")
    assert needle in str(info.value)
    assert str(info.value).startswith("ws/splice.toml")
