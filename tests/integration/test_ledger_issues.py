"""The standing-failure issues end to end: nights stored item by item, `items chronic
--file-issue` planning and filing through githubkit against the GitHub fake. Filed once per
(benchmark, mode); the same set again files nothing new and edits in place; an item that joins
or a lane that newly shows one is a comment; a set clean for the stated nights closes its issue
with the evidence; a returning item reopens it. Also `items chronic --json` and `items show`."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator

import pytest
from typer.testing import CliRunner, Result

from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.records import ClipAudio, ClipGrade, Grader, RunSpec
from omni_tasks.series import Series
from omni_tasks.store.runs import save_run
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.github_api import GitHubState, github_app

runner = CliRunner()
D0 = dt.date(2026, 10, 1)
ITEMS = [f"u{k:02d}" for k in range(6)]
H100 = Series("seed_tts_en")
MI300 = Series("seed_tts_en", lane="mi300x")
Schedule = Callable[[int, str], str]  # (night, item) -> ok | over | short


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubState]:
    state = GitHubState()
    with serve_in_thread(github_app(state)) as url:
        monkeypatch.setenv("OMNI_GITHUB_API_URL", url)
        monkeypatch.setenv("OMNI_GITHUB_TOKEN", state.token)
        monkeypatch.setenv("OMNI_PUBLIC_URL", "https://omni.example")
        get_settings.cache_clear()
        yield state
    get_settings.cache_clear()


def reference(utt: str) -> str:
    return f"please say the words of item {utt} now"  # 8 words


def clip(night: int, utt: str, how: str, series: Series) -> tuple[ClipAudio, ClipGrade]:
    ref = reference(utt)
    heard = {
        "ok": ref,
        "over": ref + " in the same style as the reference audio and then some more words",
        "short": "please",
    }[how]
    words = len(heard.split())
    wer = 0.0 if how == "ok" else (words - 8 if how == "over" else 7) / 8
    uri = f"/var/lib/omni/audio/{series.slug}_{night:02d}/{utt}.wav"
    return (
        ClipAudio(utt, int(utt[1:]), ref, "ok", audio_uri=uri, audio_seconds=2.0),
        ClipGrade(utt, "graded", hypothesis=heard, ref_words=8, hyp_words=words, wer=wer),
    )


def store_nights(db, series: Series, nights: range, schedule: Schedule) -> None:
    for n in nights:
        pairs = [clip(n, u, schedule(n, u), series) for u in ITEMS]
        spec = RunSpec(
            benchmark=series.benchmark,
            nightly=D0 + dt.timedelta(days=n),
            branch="main",
            trigger="nightly",
            status="complete",
            n_expected=len(ITEMS),
            commit_sha=f"{n:02d}" + "c" * 38,
            model=series.model,
            lane=series.lane,
        )
        save_run(db, spec, [c for c, _ in pairs], (Grader("asr-test"), [g for _, g in pairs]))
    db.commit()


def chronic(*extra: str) -> Result:
    out = runner.invoke(app, ["items", "chronic", "--benchmark", "seed_tts_en", *extra])
    assert out.exit_code == 0, out.output
    return out


def filed(*extra: str) -> dict:
    out = chronic("--file-issue", "o/r", "--apply", "--clean-nights", "14", "--json", *extra)
    return json.loads(out.stdout)


def writes(github: GitHubState) -> list[tuple[str, str]]:
    return [(c[0], c[1]) for c in github.calls if c[0] != "GET"]


def always(broken: dict[str, str]) -> Schedule:
    return lambda n, u: broken.get(u, "ok")


def test_files_once_updates_in_place_and_comments_on_a_new_item_or_lane(db, github) -> None:
    store_nights(db, H100, range(14), always({"u00": "over", "u01": "over", "u02": "short"}))
    dry = chronic("--file-issue", "o/r")
    assert "would: Standing failures: seed_tts_en · over_generation (2 items)" in dry.stdout
    assert "dry run: nothing was written" in dry.stdout and writes(github) == []
    doc = filed("--nights", "14")
    assert sorted(i["title"] for i in doc["issues"]) == [
        "Standing failures: seed_tts_en · over_generation",
        "Standing failures: seed_tts_en · truncated",
    ]
    assert [i["state"] for i in github.issues.values()] == ["open", "open"]
    over = next(i for i in github.issues.values() if i["title"].endswith("over_generation"))
    body = over["body"]
    assert "`u00`" in body and "`u01`" in body and "`u02`" not in body
    assert reference("u00") in body and "in the same style as the reference audio" in body
    assert "https://omni.example/omni/audio/seed_tts_en_13/u00.wav" in body  # its latest night
    assert over["labels"] == [{"name": "standing-failure"}]
    # The same set again: nothing filed, nothing said.
    before = len(github.calls)
    assert [i["steps"] for i in filed("--nights", "14")["issues"]] == [[], []]
    assert len(github.issues) == 2 and not any(c[0] == "POST" for c in github.calls[before:])
    # A night later, same set: the body is edited in place, no comment, no second issue.
    store_nights(db, H100, range(14, 15), always({"u00": "over", "u01": "over", "u02": "short"}))
    before = len(github.calls)
    filed("--nights", "14")
    assert {c[0] for c in github.calls[before:]} == {"GET", "PATCH"} and len(github.issues) == 2
    assert github.comments == {}
    # u03 joins over_generation; the mi300x lane shows u00 chronic too: one comment.
    store_nights(db, H100, range(15, 29), always({"u00": "over", "u01": "over", "u03": "over"}))
    store_nights(db, MI300, range(15, 29), always({"u00": "over"}))
    filed("--nights", "14", "--mode", "over_generation")
    (said,) = github.comments[over["number"]]
    assert "joined: `u03`" in said
    assert "`u00` is now chronic on `seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · mi300x`" in said
    assert len(github.issues) == 2
    # An issue is the whole benchmark's: filing from one lane's set is refused.
    one_lane = ["items", "chronic", "--benchmark", "seed_tts_en", "--lane", "mi300x"]
    refused = runner.invoke(app, [*one_lane, "--file-issue", "o/r", "--apply"])
    assert refused.exit_code == 2 and "every series of the benchmark" in refused.output


def test_a_recovered_set_closes_with_evidence_and_a_returning_item_reopens(db, github) -> None:
    broken_until = 14
    store_nights(db, H100, range(broken_until), always({"u00": "over"}))
    (issue,) = filed("--nights", "14")["issues"]
    number = issue["number"]
    # Clean from night 14 on: not closed before 14 clean nights, closed after.
    store_nights(db, H100, range(broken_until, broken_until + 10), always({}))
    filed("--nights", "28")
    assert github.issues[number]["state"] == "open"
    assert "not yet clean for 14 nights" in github.issues[number]["body"]
    store_nights(db, H100, range(broken_until + 10, broken_until + 14), always({}))
    filed("--nights", "28")
    assert github.issues[number]["state"] == "closed"
    evidence = github.comments[number][-1]
    assert "clean for at least 14 nights" in evidence and "`u00`" in evidence
    assert f"last broken {D0 + dt.timedelta(days=broken_until - 1)}" in evidence
    # u00 breaks again, night after night: the same issue reopens, with a comment.
    back = range(broken_until + 14, broken_until + 26)
    store_nights(db, H100, back, always({"u00": "over"}))
    filed("--nights", "12")
    assert len(github.issues) == 1 and github.issues[number]["state"] == "open"
    assert "Reopened" in github.comments[number][-1]


def test_chronic_json_and_show_print_an_items_history_and_transcripts(db) -> None:
    store_nights(
        db, H100, range(10), lambda n, u: "over" if u == "u00" or (u == "u01" and n % 2) else "ok"
    )
    doc = json.loads(chronic("--json").stdout)
    (series,) = doc["series"]
    states = {i["utt_id"]: (i["state"], i["mode"]) for i in series["items"]}
    assert states["u00"][0] in ("chronic", "new") and states["u00"][1] == "over_generation"
    assert states["u01"][0] == "flaky" and "u02" not in states
    shown = runner.invoke(app, ["items", "show", "u00", "--benchmark", "seed_tts_en", "--json"])
    assert shown.exit_code == 0, shown.output
    got = json.loads(shown.stdout)
    assert [n["broken"] for n in got["nights"]] == [True] * 10
    assert got["latest_broken"]["nightly"] == str(D0 + dt.timedelta(days=9))
    assert got["latest_broken"]["reference"] == reference("u00")
    assert got["latest_broken"]["heard"].endswith("and then some more words")
    text = runner.invoke(app, ["items", "show", "u01", "--benchmark", "seed_tts_en"]).stdout
    assert "broken on 5 of 10 nights" in text and reference("u01") in text
