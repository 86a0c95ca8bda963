"""Every client rule a harness row states, replayed: each case of `replay.CASES` (scripted
server answers that exercise one `ClientRules` field) through upstream's released request
function and through ours under the release's row, and the two end alike — same success, same
number of requests, same text and samples. A release without a row is held to the nearest row
(`conftest.nearest_row`), so `make conformance-latest` can say "no row; rules agree"."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_tasks.harness import CLIENT_032, client_rules
from tests.conformance import replay
from tests.conformance.replay import CASES, Case
from tests.conformance.upstream import Upstream


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_replayed_rule_agrees(upstream: Upstream, row: str, prompt_wav: Path, case: Case) -> None:
    ours = replay.ours(case, client_rules(row), prompt_wav)
    theirs = replay.theirs(case, upstream, prompt_wav)
    assert not replay.differences(ours, theirs), (case.rule, replay.differences(ours, theirs))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_exercises_its_rule(prompt_wav: Path, case: Case) -> None:
    """Under 0.32.0rc1's rules our client ends each case as written out by hand: a script
    that broke (both clients failing alike on it) would pass the agreement check unseen."""
    got = replay.ours(case, CLIENT_032, prompt_wav)
    success, requests, seconds = case.expect
    assert (got.success, got.requests) == (success, requests), got.detail
    if success:
        assert got.audio_s == seconds, got.detail
