"""`omni-tasks gate` in an 80-column terminal or log: every candidate's name, verdict and state
are whole (the figures' columns go instead, whole, and the caption names them)."""

from __future__ import annotations

import datetime as dt
import io

from rich.console import Console

from omni_tasks.contracts import Decision
from omni_tasks.reports.text import print_gate


def decision(candidate: str, verdict: str, confirmed: bool) -> Decision:
    return Decision(
        benchmark="seed_tts_en",
        nightly=dt.date(2026, 11, 28),
        candidate_branch=candidate,
        baseline_branch="main",
        variant="default",
        verdict=verdict,
        confirmed=confirmed,
        mcnemar_p=1.2e-12,
        mcnemar_p_holm=2.4e-12,
        delta_tail_fraction=0.057,
        delta_tail_fraction_ci=(0.04, 0.075),
        regressed=62,
        improved=9,
        n_paired=1088,
        reasons=[],
        mde=0.02,
        same_margin=None,
    )


def test_names_verdicts_and_states_are_whole_at_80_columns() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    rows = [
        decision("rebase-compiled-talker", "REGRESSED", True),
        decision("rebase", "IMPROVED", False),
    ]
    print_gate(console, dt.date(2026, 11, 28), rows)
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    for word in ("rebase-compiled-talker", "REGRESSED", "confirmed", "IMPROVED", "unconfirmed"):
        assert word in text, text
    assert "…" not in text
    assert "not shown at this width: variant, Δ tail [95 %], reg:imp, p" in text
