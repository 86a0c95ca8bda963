"""One way to write a fraction, used by the terminal, the report, Slack and Grafana texts."""

from __future__ import annotations

from omni_tasks.formatting import pct, pct_ci, pts, pts_ci, within_pts


def test_fractions_are_percentages_with_their_interval_in_brackets() -> None:
    assert pct(0.1389) == "13.9 %" and pct(0.1, 0) == "10 %" and pct(None) == "n/a"
    assert pct_ci(0.1389, (0.121, 0.1586)) == "13.9 % [12.1 %, 15.9 %]"
    assert pct_ci(0.1389, (None, None)) == "13.9 %"  # an interval that could not be computed


def test_differences_are_signed_percentage_points() -> None:
    assert pts(0.0566) == "+5.7 pts" and pts(-0.002) == "-0.2 pts"
    assert pts_ci(0.0566, (0.0398, 0.0751)) == "+5.7 pts [+4.0, +7.5]"
    assert within_pts(0.041) == "±4.1 pts"
