"""The freshness watchdog: a branch without a complete run for the night is an INFRA message,
queued once however often the watchdog runs."""

from __future__ import annotations

from pathlib import Path

from omni_tasks.jobs.freshness import check_freshness
from omni_tasks.series import Series
from tests.factories import SAME, store_night


def test_a_missing_branch_queues_one_infra_message(db, tmp_path: Path) -> None:
    night = store_night(db, tmp_path, 0, None)  # main only: rebase never reported
    assert check_freshness(db, Series("seed_tts_en"), ["main", "rebase"], night) == ["rebase"]
    assert check_freshness(db, Series("seed_tts_en"), ["main", "rebase"], night) == ["rebase"]
    sent = db.execute(
        "SELECT idempotency_key, payload FROM omni.alert_outbox "
        "WHERE idempotency_key LIKE '%%|freshness|%%'"
    ).fetchall()
    assert [m["idempotency_key"] for m in sent] == [
        f"seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|default|rebase|freshness|{night}"
    ]
    assert "no rebase results" in sent[0]["payload"]["text"]  # one message, however often

    later = store_night(db, tmp_path, 1, SAME)  # both branches have runs
    assert check_freshness(db, Series("seed_tts_en"), ["main", "rebase"], later) == []


def test_a_series_not_decided_by_the_deadline_queues_one_infra_message(db, tmp_path: Path) -> None:
    from omni_tasks.jobs.freshness import check_decided

    series = Series("seed_tts_en")
    decided = store_night(db, tmp_path, 0, SAME)  # both branches ran and the night was gated
    assert check_decided(db, series, "default", decided)
    undecided = decided.replace(day=decided.day + 5)  # nothing ran: no decision either
    assert not check_decided(db, series, "default", undecided)
    assert not check_decided(db, series, "default", undecided)
    assert not check_decided(db, series, "eager", decided)  # another variant was not decided
    sent = db.execute(
        "SELECT payload FROM omni.alert_outbox WHERE idempotency_key LIKE '%%|decision|freshness|%%'"
    ).fetchall()
    assert len(sent) == 2  # one per night, however often the watchdog runs
    assert "no nightly decided for" in sent[0]["payload"]["text"]
    assert "by 09:00 UTC" in sent[0]["payload"]["text"]
