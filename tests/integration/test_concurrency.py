"""Concurrency invariance as a paired experiment, on the simulator's batch-variant profile (a
planted share of items change when co-batched) and its clean one: every runnable family runs
through its own runner at each level; each item is paired with itself sent alone."""

from __future__ import annotations

import datetime as dt
import json

from typer.testing import CliRunner

from omni_tasks import benchmarks
from omni_tasks.benchmarks.request import RunRequest
from omni_tasks.cli import app
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.concurrency import ConcurrencyRequest, run_concurrency
from omni_tasks.reports.concurrency import concurrency_report
from omni_tasks.synthesis import batching
from omni_tasks.synthesis.profiles import load_profile


def test_a_batch_variant_server_flips_the_planted_multiple_choice_answers(db) -> None:
    req = ConcurrencyRequest("daily_omni", "simulator:batch-variant", (1, 8), control=True)
    result = run_concurrency(db, req, load_policy())
    assert result.verdict == "BATCH-VARIANT"
    (c8,) = result.comparisons
    assert c8.control_flips == 0  # alone, the server answers the same twice
    # The simulator's own planting, from the bodies upstream's request builder makes.
    suite = benchmarks.get("daily_omni").suite
    body_of = RunRequest(target="simulator:batch-variant", branch="main")
    profile = load_profile("batch-variant")
    planted = {
        item.key
        for item in suite.load("demo").items
        if batching.planted(profile, suite.request_body(item, body_of))
    }
    flipped = {f.item for f in c8.flipped}
    assert planted and flipped <= planted
    assert len(flipped) >= 0.9 * len(planted)  # recall on the planted flips
    assert all(f.alone and f.batched and f.alone != f.batched for f in c8.flipped)
    event = db.execute("SELECT text, tags FROM omni.event WHERE kind = 'concurrency'").fetchone()
    assert "BATCH-VARIANT" in event["tags"] and "daily_omni" in event["text"]
    runs = db.execute(
        "SELECT variant, trigger, execution ->> 'concurrency' AS c FROM omni.run ORDER BY run_id"
    ).fetchall()
    assert [(r["variant"], r["trigger"]) for r in runs] == [
        ("c1", "concurrency"),
        ("c8", "concurrency"),
        ("c1-control", "concurrency"),
    ]


def test_co_batched_speech_cut_short_is_a_content_regression(db) -> None:
    req = ConcurrencyRequest(
        "seed_tts_en", "simulator:batch-variant", (1, 8), options={"transcript_mode": True}
    )
    (c8,) = run_concurrency(db, req, load_policy()).comparisons
    assert c8.verdict == "BATCH-VARIANT" and c8.flipped
    for f in c8.flipped:  # what was heard co-batched is the start of what was heard alone
        assert f.alone is not None and f.batched is not None
        assert f.alone.startswith(f.batched) and len(f.batched) < len(f.alone)
    # An item that did not change cannot change its content: every regression is a flip.
    assert c8.regressed == sum(f.batched_broken and not f.alone_broken for f in c8.flipped)
    assert c8.improved == 0 and c8.p_regressed < 0.01


def test_a_clean_server_is_the_same_and_says_what_it_rules_out(db) -> None:
    out = CliRunner().invoke(
        app,
        ["concurrency", "--target", "simulator:main", "--benchmark", "daily_omni", "--json"],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "SAME"
    (c8,) = doc["comparisons"]
    n = c8["n"]
    assert c8["flipped"] == [] and n > 0
    assert abs(c8["flip_upper"] - (1 - 0.05 ** (1 / n))) < 1e-9  # exact bound for 0 of n


def test_a_family_without_the_capability_is_refused_before_anything_runs(db) -> None:
    out = CliRunner().invoke(
        app, ["concurrency", "--target", "simulator:main", "--benchmark", "duplex_eval"]
    )
    assert out.exit_code == 2 and "no 'concurrency' capability" in out.output
    bad = CliRunner().invoke(app, ["concurrency", "--target", "simulator:main", "--levels", "8,1"])
    assert bad.exit_code == 2 and "give 1 first" in bad.output
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone() == {"n": 0}


def _planted_leaks(profile: str, n: int) -> set[str]:
    """The simulator's own planting, from the bodies upstream's harness request makes (an
    item is identified by its messages)."""
    from omni_tasks.dataset import load_dataset
    from omni_tasks.synthesis import protocol

    template = protocol.prompt_template("seed-tts-default")
    return {
        u.utt_id
        for u in load_dataset("demo").utterances[:n]
        if batching.leaks(load_profile(profile), protocol.request_body(u.target_text, template))
    }


def test_speech_in_another_requests_voice_is_labelled_by_the_speaker_proxy(db) -> None:
    # Real speech (piper) in three reference voices round-robin, heard by Whisper, voices
    # labelled by the offline speaker embedder; the simulator leaks a planted share of
    # co-batched outputs into another request's reference voice.
    n = 32
    req = ConcurrencyRequest(
        "seed_tts_en", "simulator:batch-variant", (1, 8), limit=n, options={"voices": 3}
    )
    result = run_concurrency(db, req, load_policy())
    (c8,) = result.comparisons
    assert c8.verdict == "BATCH-VARIANT" and c8.voice is not None
    planted = _planted_leaks("batch-variant", n)
    found = {leak.item for leak in c8.voice.leaks}
    assert planted and len(found & planted) >= 0.9 * len(planted)  # recall
    assert len(found & planted) >= 0.9 * len(found)  # precision
    assert c8.voice.wrong_alone == 0  # alone, every output is in its own reference's voice
    assert all(leak.margin < 0 < leak.alone_margin for leak in c8.voice.leaks)
    assert all(leak.alone_audio and leak.batched_audio for leak in c8.voice.leaks)
    # The report plays each leaked item's two outputs side by side.
    page = concurrency_report(result, "leaks", simulated=True)
    table = page.split("In another request")[1].split("</table>")[0]
    assert table.count("<tr>") == len(c8.voice.leaks) + 1
    assert table.count("<audio controls") == 2 * len(c8.voice.leaks)


def test_a_clean_server_leaks_no_voice(db) -> None:
    req = ConcurrencyRequest(
        "seed_tts_en", "simulator:main", (1, 8), limit=12, options={"voices": 3}
    )
    (c8,) = run_concurrency(db, req, load_policy()).comparisons
    assert c8.voice is not None and c8.voice.n == 12
    assert c8.voice.leaks == () and c8.voice.wrong_batched == 0
    assert c8.verdict == "SAME"


def test_voices_are_refused_where_there_is_no_speech_to_label(db) -> None:
    out = CliRunner().invoke(
        app,
        ["concurrency", "--target", "simulator:main", "--benchmark", "daily_omni", "--voices", "3"],
    )
    assert out.exit_code == 2 and "has no run option 'voices'" in out.output


def test_a_night_s_check_posts_a_batch_variant_branch_with_its_rerun_command(db) -> None:
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.jobs.concurrency import nightly_concurrency

    params = NightlyParams(
        benchmark="daily_omni",
        branches=["main", "rebase"],
        targets={"main": "simulator:main", "rebase": "simulator:batch-variant"},
        concurrency=[1, 8],
    )
    night = dt.date(2026, 11, 27)
    lines = nightly_concurrency(db, [params], night, load_policy())
    assert [line.split(": ", 1)[1].split(" at ")[0] for line in lines] == ["SAME", "BATCH-VARIANT"]
    (message,) = db.execute("SELECT idempotency_key, payload FROM omni.alert_outbox").fetchall()
    assert message["idempotency_key"].startswith("concurrency|daily_omni|")
    text = json.dumps(message["payload"])
    assert "BATCH-VARIANT" in text and "rebase" in text
    assert "omni-tasks concurrency --benchmark daily_omni" in text
    # A retried task re-runs the same experiment: no second message, the same runs replaced.
    before = db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"]
    nightly_concurrency(db, [params], night, load_policy())
    assert db.execute("SELECT count(*) AS n FROM omni.alert_outbox").fetchone()["n"] == 1
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == before


def test_a_config_asks_for_levels_it_can_run() -> None:
    import pytest
    from pydantic import ValidationError

    from omni_tasks.deployment.schema import NightlyParams

    with pytest.raises(ValidationError, match="1 first"):
        NightlyParams(benchmark="daily_omni", concurrency=[8])
    with pytest.raises(ValidationError, match="vllm-serve"):
        NightlyParams(
            benchmark="daily_omni",
            targets={"main": "vllm-serve", "rebase": "simulator:rebase"},
            concurrency=[1, 8],
        )
