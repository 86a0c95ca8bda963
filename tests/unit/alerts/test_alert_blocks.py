"""Alert payloads stay within Slack's limits and defuse hostile text."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

from omni_tasks.alerts import blocks
from omni_tasks.alerts.blocks import MAX_BLOCKS, MAX_TEXT, AlertContext
from omni_tasks.contracts import Comparison
from omni_tasks.series import Series
from tests.factories import stored_decision

HOSTILE = "<!channel> <@U123> & *bold* `code` <https://evil.example|click> \u202e\x00"


def _texts(payload: dict) -> list[str]:
    out = []
    for b in payload["blocks"]:
        if "text" in b:
            out.append(b["text"]["text"])
        out.extend(e["text"] for e in b.get("elements", []))
    return out


def _side(tail: float, ci: list[float]) -> dict:
    return {
        "tau": 0.5,
        "n_expected": 1088,
        "n_scored": 1088,
        "n_failed": 0,
        "n_infra": 0,
        "coverage": 1.0,
        "n_broken": round(tail * 1088),
        "tail_fraction": tail,
        "tail_fraction_ci": ci,
    }


def _ctx(top: list[dict], **kw) -> AlertContext:
    top = [
        {
            "reference": "",
            "heard": None,
            "wer": 0.0,
            "baseline_heard": None,
            "baseline_wer": 0.0,
            **t,
        }
        for t in top
    ]
    comparison = Comparison.from_json(
        {
            "baseline": _side(0.082, [0.067, 0.1]),
            "candidate": _side(0.139, [0.12, 0.16]),
            "tau": 0.5,
            "delta_tail_fraction": 0.057,
            "delta_tail_fraction_ci": [0.04, 0.075],
            "n_paired": 1088,
            "regressed": len(top),
            "improved": 9,
            "stable_broken": 80,
            "stable_ok": 999 - len(top),
            "mcnemar_p": 1.2e-12,
            "mcnemar_p_improve": 1.0,
            "delta_capped_mean_wer": None,
            "delta_capped_mean_wer_ci": None,
            "delta_mean_wer": None,
            "verdict": "REGRESSED",
            "reasons": [],
            "warnings": [],
            "comparable": True,
            "mde": 0.02,
            "same_margin": 0.02,
            "regressed_clips": [],
            "improved_clips": [],
            "policy_version": "v1",
            "mode_shift": {
                "mode:over_generation": {"baseline": 40, "candidate": 90},
                "origin:thinker": {"baseline": 50, "candidate": 120},
            },
            "top_regressed": top,
        }
    )
    args = dict(
        series=Series("seed_tts_en"),
        nightly="2026-11-28",
        candidate="rebase",
        baseline="main",
        variant="default",
        verdict="REGRESSED",
        confirmed=True,
        tau=0.5,
        comparison=comparison,
        p_holm=2.4e-12,
        links={"Grafana": "http://grafana.local/d/x"},
    )
    args.update(kw)
    return AlertContext(**args)


def test_regression_message_has_the_figures() -> None:
    top = [
        {
            "utt_id": f"u{i}",
            "reference": "Say this.",
            "heard": "I act as a TTS engine.",
            "wer": 7.4 - i,
        }
        for i in range(8)
    ]
    msg = blocks.regression_opened(_ctx(top)).to_payload()
    text = "\n".join(_texts(msg))
    assert "REGRESSED, confirmed (+5.7 pts)" in msg["text"]  # the headline carries the size
    assert "8.2 % [6.7 %, 10.0 %] n=1088" in text and "13.9 %" in text
    assert "+5.7 pts [+4.0, +7.5]" in text
    assert "regressed 8 : improved 9, stable-broken 80" in text and "p=1.2e-12" in text
    assert "over_generation 40→90" in text and "thinker 50→120" in text
    assert text.count("> reference:") == 5  # the five worst only
    assert "<http://grafana.local/d/x|Grafana>" in text


def test_pathological_inputs_stay_within_limits() -> None:
    huge = "word " * 50_000
    top = [
        {"utt_id": HOSTILE * 20, "reference": huge, "heard": HOSTILE + huge, "wer": 1e9}
        for _ in range(1000)
    ]
    ctx = _ctx(top, candidate=HOSTILE * 50, variant=HOSTILE)
    for msg in (
        blocks.regression_opened(ctx),
        blocks.regression_parent(ctx, "2026-11-01", 3),
        blocks.regression_still(ctx),
        blocks.infra(HOSTILE * 100, [HOSTILE * 100] * 1000),
    ):
        payload = msg.to_payload()
        assert len(payload["blocks"]) <= MAX_BLOCKS
        assert len(payload["text"]) <= MAX_TEXT
        for b in payload["blocks"]:
            if b["type"] == "header":
                assert len(b["text"]["text"]) <= 150
        for t in _texts(payload):
            assert len(t) <= MAX_TEXT
        body = json.dumps(payload["blocks"])
        assert "<!channel>" not in body and "<@U123>" not in body  # escaped, never a ping


def test_too_many_blocks_are_cut_with_a_note() -> None:
    fitted = blocks.fit([blocks.section(str(i)) for i in range(80)])
    last = blocks.Message("", fitted[-1:]).to_payload()
    assert len(fitted) == MAX_BLOCKS and "31 more blocks" in blocks.render_text(last)


def test_infra_ids_can_be_pasted_into_airflow() -> None:
    run_id = "manual__2026-11-30T02:00:00+00:00"
    msg = blocks.infra(
        "INFRA task failed: omni_nightly.refresh",
        ["Grafana answered 502"],
        ids={"run": run_id, "evil": "x`<!channel>`"},
    )
    texts = "\n".join(_texts(msg.to_payload()))
    assert f"`{run_id}`" in texts  # exactly as Airflow spells it, no look-alike underscores
    assert "<!channel>" not in texts and "`x`" not in texts  # a value cannot close its span


def test_a_path_in_a_message_is_a_code_span_byte_identical_to_the_path_on_disk(
    tmp_path,
) -> None:
    """A server's log named in an INFRA reason, a report named in a concurrency verdict: each
    pasted from its code span opens the file (no look-alike dot inside a path), while a URL
    beside it still cannot become a link."""
    import re

    log = tmp_path / "server-logs" / "rebase.vllm_serve.log"
    report = tmp_path / "reports" / "concurrency_seed_tts_en.2026-11-20.html"
    for f in (log, report):
        f.parent.mkdir(parents=True)
        f.write_bytes(b"x")
    reason = f"server not healthy after 10 s; server log: {log} (http://evil.example/x.log)"
    messages = [
        blocks.infra("INFRA task failed: omni_nightly.run_branch", [reason]),
        blocks.verdict_message("Concurrency", "BATCH-VARIANT", [f"Both sides: {report}."], {}),
    ]
    for msg, path in zip(messages, (log, report), strict=True):
        text = _texts(msg.to_payload())[1]
        spans = re.findall(r"`([^`]*)`", text)
        assert spans == [str(path)]  # as mrkdwn sends it: no entity, no look-alike
        assert spans[0].encode() == bytes(path) and Path(spans[0]).read_bytes() == b"x"
    assert "http://evil.example" not in _texts(messages[0].to_payload())[1]


def test_an_alert_names_its_model_lane_id_and_what_to_run_next() -> None:
    """Two series of one benchmark (another model, another lane) never read alike, and the
    message carries its alert id and the triage commands, copyable."""
    from omni_tasks.alerts.messages import context as _context
    from omni_tasks.alerts.messages import next_steps

    d = stored_decision(
        benchmark="daily_omni",
        model="openbmb/MiniCPM-o-4_5",
        lane="rocm-mi300",
        nightly=dt.date(2026, 11, 28),
        verdict="REGRESSED",
        confirmed=True,
    )
    ctx = _context(d, 0.5)
    other = _context(
        dataclasses.replace(d, model="Qwen/Qwen3-Omni-30B-A3B-Instruct", lane="cuda-h100x2"), 0.5
    )
    assert blocks.headline(ctx).startswith("daily_omni · MiniCPM-o-4_5 · lane rocm-mi300: rebase")
    assert blocks.headline(other).startswith(
        "daily_omni · Qwen3-Omni-30B-A3B-Instruct · lane cuda-h100x2"
    )
    steps = next_steps(d, 42)
    msg = blocks.regression_opened(
        AlertContext(**{**ctx.__dict__, "alert_id": 42, "next_steps": steps})
    ).to_payload()
    text = "\n".join(_texts(msg))
    assert "*Alert 42*" in text
    assert "`omni-tasks alerts ack 42 --note '…'`" in text
    assert (
        "`omni-tasks report --benchmark daily_omni --model openbmb/MiniCPM-o-4_5 --lane "
        "rocm-mi300 --nightly 2026-11-28`"
    ) in text


def test_a_range_says_how_it_was_found() -> None:
    """Issue 45: the range is where a single step fits the nights on record, and the alert
    says how many nights it fitted; without a last good night it says the step may precede
    them."""
    commits = blocks.CommitRange(
        first_bad="b" * 40,
        first_bad_night="2027-01-05",
        last_good="a" * 40,
        last_good_night="2027-01-03",
        fitted_nights=17,
    )
    text = blocks.render_text(blocks.regression_opened(_ctx([], commits=commits)).to_payload())
    assert f"last good `{'a' * 12}` (2027-01-03)" in text
    assert "the nights a single step could have entered on among the 17 nights fitted" in text
    alone = dataclasses.replace(commits, last_good=None, last_good_night=None, fitted_nights=1)
    text = blocks.render_text(blocks.regression_opened(_ctx([], commits=alone)).to_payload())
    assert "the step may precede every night among the 1 night fitted" in text


def test_a_night_confirmed_the_same_morning_says_so_in_its_message_and_group_line() -> None:
    from omni_tasks.alerts import messages

    said = (
        "confirmed the same morning: 10 of 12 re-run items broke again on rebase, 0 on main "
        "(sign test p=0.00098, below 0.005; 2 fresh seeds a branch, 0.48 full runs)"
    )
    d = stored_decision(verdict="REGRESSED", confirmed=True, reasons=["REGRESSED: p", said])
    ctx = messages.context(d, 0.5)
    assert ctx.same_morning == said
    text = "\n".join(_texts(blocks.regression_opened(ctx).to_payload()))
    assert said in text
    assert "confirmed the same morning, first bad night" in messages.member_line(ctx, 1e-5)
    # A night confirmed otherwise says nothing of a re-run.
    other = messages.context(dataclasses.replace(d, reasons=["REGRESSED: p"]), 0.5)
    assert other.same_morning is None
    assert "same morning" not in "\n".join(_texts(blocks.regression_opened(other).to_payload()))
