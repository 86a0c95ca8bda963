"""A threshold as upstream's test file defines it: the module-level literal (numbers, numeric
strings as upstream passes some to its CLI), the last assignment winning; anything else is no
threshold, so the gate table decides."""

from __future__ import annotations

import pytest

from omni_tasks.gates.history import threshold_in_source


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("_MIN_DAILY_OMNI_ACCURACY = 0.78\n", 0.78),
        ('_CI_MIN_DAILY_OMNI_ACCURACY = "0.685"\n', 0.685),
        ("_MIN_RTD: float = 0.0  # record mode\n", None),  # another name
        ("_MIN_DAILY_OMNI_ACCURACY: float = 0.77\n", 0.77),
        ("_MIN_DAILY_OMNI_ACCURACY = 0.64\n_MIN_DAILY_OMNI_ACCURACY = 0.78\n", 0.78),
        ("_MIN_DAILY_OMNI_ACCURACY = -0.5\n", -0.5),
        ("_MIN_DAILY_OMNI_ACCURACY = float(os.environ['X'])\n", None),  # not a literal
        ("_MIN_DAILY_OMNI_ACCURACY = True\n", None),
        ("_MIN_DAILY_OMNI_ACCURACY = 'high'\n", None),
        ("_MIN_DAILY_OMNI_ACCURACY = 1e400\n", None),
        ("def f(:\n", None),  # not Python
        ("def f():\n    _MIN_DAILY_OMNI_ACCURACY = 0.1\n", None),  # not module level
    ],
)
def test_the_module_level_literal_is_the_threshold(source: str, value: float | None) -> None:
    name = "_MIN_RTD_X" if "_MIN_RTD:" in source else "_MIN_DAILY_OMNI_ACCURACY"
    if "_CI_" in source:
        name = "_CI_MIN_DAILY_OMNI_ACCURACY"
    assert threshold_in_source(source, name) == value
