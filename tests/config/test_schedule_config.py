"""``[[schedule]]`` and ``[operator]`` in splice.toml: a wrong entry is a load error naming the
file, the key and the fix; a right one reads as the operator uses it."""

from __future__ import annotations

import pytest

from splice.config.workspace import parse_config
from splice.errors import ConfigError

PROJECT = '[[projects]]\nname = "p"\nformat = "dbt"\npath = "p"\n'


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (
            'name = "m"\ncron = "0 25 * * *"',
            "schedule[0].cron: '0 25 * * *' is not a cron expression",
        ),
        ('name = "m"\ncron = "0 6 * *"', "is not a cron expression"),
        (
            'name = "m"\ncron = "0 6 * * *"\ntimezone = "Mars/Base"',
            "'Mars/Base' is not a time zone",
        ),
        ('name = "m"\ncron = "0 6 * * *"\ndo = "build"', "schedule[0].do"),
        ('cron = "0 6 * * *"', "missing key 'schedule[0].name'"),
        ('name = "m"\ncron = "0 6 * * *"\nwhen = "daily"', "unknown key 'schedule[0].when'"),
    ],
)
def test_a_wrong_schedule_is_a_load_error_naming_the_key(entry: str, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(PROJECT + "[[schedule]]\n" + entry + "\n")
    assert words in e.value.message


def test_two_schedules_of_one_name_are_refused() -> None:
    one = '[[schedule]]\nname = "m"\ncron = "0 6 * * *"\n'
    with pytest.raises(ConfigError, match="schedule name 'm' is used twice"):
        parse_config(PROJECT + one + one)


def test_a_schedule_reads_as_the_operator_uses_it() -> None:
    cfg = parse_config(PROJECT + '[[schedule]]\nname = "m"\ncron = "0  6 * * 1-5"\n'
                       'timezone = "Europe/Amsterdam"\ndo = "watch"\n'
                       '[operator]\nrun_during_stop = true\n')  # fmt: skip
    (s,) = cfg.schedule
    assert (s.cron, s.timezone, s.runs, s.watches) == (
        "0 6 * * 1-5",
        "Europe/Amsterdam",
        False,
        True,
    )
    assert cfg.operator.run_during_stop and cfg.operator.agent == "splice-operator"
