"""The detectors' registry: one ordered tuple, in the order the package documents, each entry a
function with its contract, and each detector switched off alone by its name."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from tests.watch.test_detectors import _days, _panel, _rates

import splice.watch.detectors as detectors
from splice.watch.detectors import DETECTORS, Finding, Panel, detect
from splice.watch.metrics import KIND_DETECTORS

ORDER = [
    "stopped_moving",
    "jump",
    "rate_rise",
    "spike",
    "level_shift",
    "domain_change",
    "slice_drop",
    "missing",
]


def test_the_registry_is_in_the_documented_order() -> None:
    assert [d.name for d in DETECTORS] == ORDER
    doc = detectors.__doc__ or ""
    listed = re.findall(r"^- ``(\w+)`` \(:mod:", doc, flags=re.MULTILINE)
    assert listed == ORDER


def test_each_detector_is_one_function_with_its_contract() -> None:
    for d in DETECTORS:
        doc = d.judge.__doc__ or ""
        assert all(word in doc for word in ("Reads", "Fires", "Returns")), d.name
    assert len({d.judge for d in DETECTORS}) == len(DETECTORS)


def test_every_kind_detector_name_is_given_by_a_registered_detector() -> None:
    names = set().union(*(d.names for d in DETECTORS))
    assert {n for kind in KIND_DETECTORS.values() for n in kind} <= names


def _four_faults() -> Panel:
    """Four independent value series: one stops moving, a random walk is inverted for a day,
    a steady series spikes, another drops 5% and stays there."""
    values = _rates(150, n_series=4)
    values[0] *= 1.0 + 1e-9 * np.arange(150)  # a cross rate: full precision, never repeats
    on = [i for i in range(120, 150) if np.isfinite(values[0, i])]
    values[0, on[1]] = values[0, on[2]] = values[0, on[0]]
    values[1, on[7]] = 1.0 / values[1, on[7]]
    rng = np.random.default_rng(5)
    for r in (2, 3):
        values[r] = np.where(np.isfinite(values[r]), 100 * rng.normal(1, 0.01, 150), np.nan)
    values[2, on[0]] *= 1.5
    values[3, 125:] *= 0.95
    return _panel(values, "value")


def _cells(found: list[Finding]) -> list[tuple[int, int, str]]:
    return [(f.row, f.col, f.detector) for f in found]


def test_the_four_faults_are_found_each_by_its_detector() -> None:
    found = _cells(detect(_four_faults()))
    assert {(r, det) for r, _, det in found} == {
        (0, "stopped_moving"),
        (1, "jump"),
        (2, "spike"),
        (3, "spike"),
        (3, "level_shift"),
    }
    assert found[0][0] == 2 and _days(150)[found[0][1]].isoformat() == "2025-05-02"


@pytest.mark.parametrize("name", KIND_DETECTORS["value"])
def test_switching_one_detector_off_leaves_the_other_series_alone(name: str) -> None:
    panel = _four_faults()
    every = _cells(detect(panel))
    off = _cells(detect(replace(panel, detectors=tuple(d for d in panel.detectors if d != name))))
    assert name not in {det for _, _, det in off}
    its_rows = {r for r, _, det in every if det == name}
    assert [c for c in off if c[0] not in its_rows] == [c for c in every if c[0] not in its_rows]


def test_switching_stopped_moving_off_stops_only_its_anomalies() -> None:
    panel = _four_faults()
    every = _cells(detect(panel))
    off = replace(panel, detectors=("spike", "level_shift", "jump"))
    assert _cells(detect(off)) == [c for c in every if c[2] != "stopped_moving"]


def test_a_registry_entry_runs_alone() -> None:
    panel = _four_faults()
    jump = [d for d in DETECTORS if d.name == "jump"]
    assert {(r, det) for r, _, det in _cells(detect(panel, jump))} == {(1, "jump")}
