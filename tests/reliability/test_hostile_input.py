"""Hostile input (issue 17): nothing a value from data names is read from or written outside its
root, planted secrets reach no output, one poisoned message blocks no other, and one bad run
stops no other decision."""

from __future__ import annotations

import datetime as dt
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from typer.testing import CliRunner

from omni_tasks.alerts.blocks import escape
from omni_tasks.alerts.lifecycle import enqueue, links_for
from omni_tasks.alerts.slack import SlackSink, dispatch
from omni_tasks.audio import AudioError, decode_wav, wav_bytes, write_audio
from omni_tasks.cli import app
from omni_tasks.config import reset_settings
from omni_tasks.jobs.nightly import NightlyParams, _git_head
from omni_tasks.names import InvalidName, check_branch, path_component
from omni_tasks.store.db import DatabaseError, connect, redact
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import ab_files, small_artifact, write_json
from tests.fakes.slack_api import SlackState, slack_app

runner = CliRunner()
TOKEN = "xoxb-PLANTED-hostile-token-5e1d"
PASSWORD = "PLANTEDpw8c1"


@pytest.fixture
def planted(db, results_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Secrets in the environment (so /proc/self/environ holds them): the Slack token, and a
    DSN password (the test server trusts loopback, so a password is accepted and ignored)."""
    dsn = f"{results_dsn} password={PASSWORD}"
    monkeypatch.setenv("OMNI_DATABASE_URL", dsn)
    monkeypatch.setenv("OMNI_SLACK_TOKEN", TOKEN)
    reset_settings()
    yield tmp_path / "omni-home"
    reset_settings()


class Hits:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.auth: list[str | None] = []

    def app(self) -> Starlette:
        async def any_path(request: Request) -> Response:
            self.paths.append(request.url.path)
            self.auth.append(request.headers.get("authorization"))
            return Response(json.dumps(small_artifact(3)), media_type="application/json")

        return Starlette(routes=[Route("/{p:path}", any_path)])


def _no_secret(places: dict[str, str]) -> None:
    for where, text in places.items():
        assert TOKEN not in text and PASSWORD not in text, where


def _files_under(root: Path) -> dict[str, str]:
    return {
        str(f): f.read_bytes().decode("utf-8", "replace")
        for f in root.rglob("*")
        if f.is_file() and f.stat().st_size < 50_000_000
    }


def test_audio_paths_from_an_artifact_never_read_outside_the_audio_root(
    planted: Path, db, tmp_path: Path
) -> None:
    home = planted
    audio_root = home / "audio"
    good = audio_root / "ok.wav"
    write_audio(str(good), np.zeros(2400, np.float32), 24_000)
    outside = tmp_path / "outside.wav"
    write_audio(str(outside), np.zeros(2400, np.float32), 24_000)
    (audio_root / "link.wav").symlink_to("/proc/self/environ")
    hits = Hits()
    with serve_in_thread(hits.app()) as url:
        hostile = [
            str(good),
            "/proc/self/environ",
            "/etc/hostname",
            str(outside),
            "/dev/zero",
            f"{url}/clip.wav",
            "ftp://example.com/x.wav",
            "gopher://127.0.0.1/x",
            str(audio_root / "link.wav"),
            f"{audio_root}/../../outside.wav",
        ]
        doc = small_artifact(len(hostile))
        for item, path in zip(doc["seed_tts_wer_eval_items"], hostile, strict=True):
            item["audio_path"] = path
        art = write_json(tmp_path / "art.json", doc)
        out = runner.invoke(app, ["import", "vllm-omni", str(art), "--branch", "rebase"])
        assert out.exit_code == 0, out.output
        assert "9 clips' audio_path refused" in out.output
        rows = db.execute(
            "SELECT utt_id, audio_uri, error_detail FROM omni.clip_audio ORDER BY ordinal"
        ).fetchall()
        assert rows[0]["audio_uri"] == str(good)
        assert all(r["audio_uri"] is None for r in rows[1:])
        assert all("audio unavailable" in r["error_detail"] for r in rows[1:])

        # Rows stored before the rule (or written by hand) meet the same rule when read:
        # grading, the report and Slack all treat them as audio missing and carry on.
        for r, path in zip(rows[1:], hostile[1:], strict=True):
            db.execute(
                "UPDATE omni.clip_audio SET audio_uri = %s WHERE utt_id = %s", (path, r["utt_id"])
            )
        db.commit()
        graded = runner.invoke(app, ["grade", _only_run(db)])
        assert graded.exit_code == 0, graded.output
        errors = db.execute(
            "SELECT count(*) AS n FROM omni.clip_grade g JOIN omni.grading USING (grading_id) "
            "WHERE grader_id LIKE 'faster-whisper%%' AND g.error_detail LIKE 'audio unreadable%%'"
        ).fetchone()
        assert errors["n"] == len(hostile) - 1

        slack = SlackState()
        with serve_in_thread(slack_app(slack)) as slack_url:
            sink = SlackSink(TOKEN, "C0HOSTILE", f"{slack_url}/api/")
            alert = db.execute(
                "INSERT INTO omni.alert (alert_key, kind, state, opened_nightly, "
                "last_nightly) VALUES ('k', 'regression', 'open', now(), now()) "
                "RETURNING alert_id"
            ).fetchone()["alert_id"]
            post = {"op": "post", "text": "parent", "blocks": []}
            enqueue(db, "k|post", alert, "post", post)
            for i, path in enumerate(hostile[1:]):
                enqueue(db, f"k|up{i}", alert, "upload", {"op": "upload", "file": path})
            enqueue(db, "k|bad-op", alert, "explode", {"op": "explode"})
            enqueue(db, "later|post", None, "post", {"op": "post", "text": "a later alert"})
            db.commit()
            report = dispatch(db, sink)
        assert report.sent == 2 and report.failed == len(hostile)  # every poison isolated
        assert [m["text"] for m in slack.top_level()] == ["parent", "a later alert"]
        assert slack.uploads == []
        states = db.execute(
            "SELECT state, coalesce(last_error, '') AS e FROM omni.alert_outbox "
            "WHERE idempotency_key LIKE 'k|up%%'"
        ).fetchall()
        assert all(s["state"] == "pending" and "audio unavailable" in s["e"] for s in states)

    assert hits.paths == []  # the loopback URL was never fetched
    db.execute(
        "INSERT INTO omni.gate_decision (benchmark, nightly, candidate_branch, "
        "baseline_branch, variant, policy_version, verdict, policy, candidate_run_id) "
        "SELECT 'seed_tts_en', nightly, 'rebase', 'main', 'default', 'v', 'UNKNOWN', "
        "'{}'::jsonb, run_id FROM omni.run"
    )
    db.commit()
    page = tmp_path / "report.html"
    out = runner.invoke(app, ["report", "--out", str(page)])
    assert out.exit_code == 0, out.output
    rows = db.execute(
        "SELECT payload::text AS p, coalesce(last_error, '') AS e FROM omni.alert_outbox"
    ).fetchall()
    _no_secret(
        {
            "outputs": out.output + graded.output,
            "report": page.read_text(),
            "outbox": json.dumps(rows),
            "slack": json.dumps(slack.messages),
            **_files_under(home),
        }
    )


def _only_run(db) -> str:  # type: ignore[no-untyped-def]
    return str(db.execute("SELECT run_key FROM omni.run").fetchone()["run_key"])


def test_names_never_leave_their_root(db, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "omni-home"
    locale = tmp_path / "data" / "en"
    (locale / "prompt-wavs").mkdir(parents=True)
    write_audio(str(locale / "prompt-wavs" / "p.wav"), np.full(2400, 0.1, np.float32), 24_000)
    (locale / "meta.lst").write_text("x/../../../../escaped|p|prompt-wavs/p.wav|Hello there.\n")
    out = runner.invoke(
        app,
        [
            "bench",
            "--target",
            "simulator:main",
            "--branch",
            "../../../up",
            "--run-key",
            "../../../../key",
            "--dataset",
            str(locale),
            "--limit",
            "1",
        ],
    )
    assert out.exit_code == 0, out.output
    escaped = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_relative_to(root) and not p.is_relative_to(tmp_path / "data")
    ]
    assert escaped == []
    wavs = list((root / "audio").rglob("*.wav"))
    assert len(wavs) == 1 and wavs[0].parent.parent == root / "audio"
    for name in ("..", ".", "../x", "a/b", "-rf", "x" * 10_000, "<!channel>"):
        comp = path_component(name)
        assert "/" not in comp and comp not in (".", "..") and not comp.startswith((".", "-"))
        assert len(comp) <= 80
    assert path_component("main") == "main" and path_component("a/b") != path_component("a_b")
    # A report path built from a hostile benchmark name stays under reports/.
    from omni_tasks.config import get_settings

    path = get_settings().report_path("../../../../tmp/evil", dt.date(2026, 11, 1))
    assert path.parent == get_settings().home / "reports"


def test_branches_are_git_refs_never_options(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    os.system(
        f"git init -q -b main {repo} && git -C {repo} -c user.name=t -c user.email=t@t "
        "commit -q --allow-empty -m x"
    )
    target = tmp_path / "created-by-git"
    for bad in (f"--output={target}", "-x", "a..b", "a b", "x" * 300, "nul\x00"):
        with pytest.raises(InvalidName):
            check_branch(bad)
        with pytest.raises(InvalidName):
            _git_head(str(repo), bad, None)
        with pytest.raises(ValueError):
            NightlyParams(branches=["main", bad])
    assert not target.exists()
    assert _git_head(str(repo), "main", None) is not None
    assert check_branch("dev/vllm-align") == "dev/vllm-align"


def test_trigger_form_paths_must_lie_under_a_trusted_root(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_HOME", str(tmp_path / "home"))
    reset_settings()
    try:
        for field in (
            {"repo": "/etc"},
            {"dataset": "/etc/passwd"},
            {"environment": {"python": "/bin/sh"}},
            {"environment": {"requirements": ["-r", "/etc/shadow"]}},
            {"server": {"deploy_config": "/proc/self/environ"}},
            {"environment": {"root": str(tmp_path / "home" / ".." / "elsewhere")}},
        ):
            with pytest.raises(ValueError, match=r"trusted root|pip options"):
                NightlyParams(**field)  # type: ignore[arg-type]
        monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path / "repos")]))
        reset_settings()
        ok = NightlyParams(
            repo=str(tmp_path / "repos" / "vllm-omni"),
            dataset="demo",
            environment={"python": "python3"},
        )
        assert ok.repo is not None
    finally:
        reset_settings()


def test_huge_numbers_are_refused_and_never_stop_the_gate(db, tmp_path: Path) -> None:
    for mutate, message in (
        (lambda d: d["seed_tts_wer_eval_items"][1].update(wer=1e308), "'wer' must be a finite"),
        (lambda d: d.update(seed_tts_content_evaluated=10**400), "beyond"),
        (lambda d: d.update(seed_tts_content_error_mean=float("inf")), "not finite"),
        (lambda d: d["seed_tts_wer_eval_items"][0].update(utterance_id="u\x000"), "U+0000"),
        (lambda d: d["seed_tts_wer_eval_items"][0].update(asr_raw="a\ud800b"), "surrogate"),
    ):
        doc = small_artifact(4)
        mutate(doc)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8", errors="surrogatepass")
        out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "rebase"])
        assert out.exit_code == 1 and message in out.output, out.output
        assert "Traceback" not in out.output
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0
    for bad in ("/dev/zero", str(tmp_path)):
        out = runner.invoke(app, ["import", "vllm-omni", bad, "--branch", "rebase"])
        assert out.exit_code == 1 and "not a regular file" in out.output

    # A WER near the float limit written straight into the store (bypassing the importer):
    # the night's other candidate is still decided.
    base, cand = ab_files(tmp_path, seed=3)
    other = write_json(tmp_path / "other.json", json.loads(cand.read_text()))
    for path, branch in ((base, "main"), (cand, "rebase"), (other, "dev")):
        assert (
            runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", branch]).exit_code
            == 0
        )
    db.execute(
        "UPDATE omni.clip_grade g SET wer = 1e308 FROM omni.grading gr JOIN omni.run r "
        "USING (run_id) WHERE g.grading_id = gr.grading_id AND r.branch = 'rebase'"
    )
    db.commit()
    out = runner.invoke(app, ["gate", "--json"])
    assert out.exit_code == 0, out.output
    verdicts = {d["candidate"]: d["verdict"] for d in json.loads(out.stdout)}
    assert verdicts["dev"] == "REGRESSED" and verdicts["rebase"] in {"REGRESSED", "INFRA"}


def test_slack_text_and_links_carry_no_mentions_links_or_formatting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_GRAFANA_URL", "https://grafana.example")
    reset_settings()
    try:
        links = links_for(
            {
                "benchmark": "seed_tts_en",
                "candidate_branch": "x|<!channel>",
                "baseline_branch": "main>|<https://evil.example|click>",
                "nightly": dt.date(2026, 11, 1),
            }
        )
    finally:
        reset_settings()
    assert all("<" not in u and ">" not in u and "|" not in u for u in links.values())
    assert "%3C%21channel%3E" in links["Grafana"]
    text = escape("<!channel> *bold* ~strike~ `code` _it_ snake_case & <@U1>")
    assert "<" not in text and ">" not in text and "*" not in text and "`" not in text
    assert "~" not in text and "snake_case" in text and " _it_ " not in text


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://u:{PASSWORD}@127.0.0.1:1/db",
        f"postgresql://u:{PASSWORD}@x@127.0.0.1:1/db",
        f"postgresql://u:{PASSWORD.replace('pw', '%40')}@127.0.0.1:1/db",
        f"host=127.0.0.1 port=1 user=u password={PASSWORD}",
        f"host=127.0.0.1 port=1 user=u password='{PASSWORD} with space'",
        f"host=127.0.0.1 port=1 password='{PASSWORD}",
        f"postgresql://u@127.0.0.1:1/db?password={PASSWORD}",
    ],
)
def test_dsn_passwords_never_appear_in_errors(dsn: str) -> None:
    with pytest.raises(DatabaseError) as info:
        connect(dsn)
    message = str(info.value)
    secret = PASSWORD.replace("pw", "@") if "%40" in dsn else PASSWORD
    assert PASSWORD not in message and secret not in message
    assert PASSWORD.replace("pw", "%40") not in message
    assert PASSWORD not in redact(dsn)


def test_buildkite_token_goes_only_to_the_api_host(db) -> None:  # type: ignore[no-untyped-def]
    from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline
    from tests.fakes.buildkite_api import BuildkiteState, buildkite_app

    state, storage = BuildkiteState(), Hits()
    with serve_in_thread(buildkite_app(state)) as api, serve_in_thread(storage.app()) as other:
        state.builds = [{"number": 1, "branch": "main", "commit": "a" * 40, "state": "passed"}]
        state.artifacts[1] = [
            {
                "id": "a1",
                "filename": "qwen_omni_acc_seed_tts_20261127-021500.json",
                "path": "qwen_omni_acc_seed_tts_20261127-021500.json",
                "download_url": f"{other}/download/a1",
            }
        ]
        report = import_pipeline(db, BuildkiteSource("vllm", "vllm-omni", state.token, f"{api}/v2"))
    assert report.imported and storage.paths == ["/download/a1"]
    assert storage.auth == [None]


def test_absurd_wav_headers_are_dropped_not_allocated() -> None:
    for offset, value, message in ((24, 2_147_483_647, "sample rate"), (22, 60_000, "channels")):
        raw = bytearray(wav_bytes(np.zeros(240, np.float32), 24_000))
        raw[offset : offset + (4 if offset == 24 else 2)] = struct.pack(
            "<I" if offset == 24 else "<H", value
        )
        with pytest.raises(AudioError, match=message):
            decode_wav(bytes(raw), "chunk")


def test_bad_options_and_dataset_lines_are_refused_before_any_request(db, tmp_path: Path) -> None:
    locale = tmp_path / "en"
    (locale / "prompt-wavs").mkdir(parents=True)
    write_audio(str(locale / "prompt-wavs" / "p.wav"), np.full(2400, 0.1, np.float32), 24_000)
    cases = {
        "nul": ("x|p|prompt-wavs/p.wav|Hello\x00there.\n", "U+0000"),
        "pipe": ("x|p|prompt-wavs/p.wav|Hello | there.\n", "'|' in the target"),
        "escape": ("x|p|../../../etc/hostname|Hello.\n", "outside the dataset directory"),
    }
    for name, (line, message) in cases.items():
        (locale / "meta.lst").write_text(line, encoding="utf-8")
        out = runner.invoke(
            app,
            [
                "bench",
                "--target",
                "simulator:main",
                "--branch",
                "b",
                "--dataset",
                str(locale),
                "--transcript-mode",
            ],
        )
        assert out.exit_code == 1 and message in out.output and "meta.lst:1" in out.output, name
    (locale / "meta.lst").write_bytes("\ufeffbom1|p|prompt-wavs/p.wav|Hello.\n".encode())
    for extra, message in (
        (["--concurrency", "0"], "concurrency"),
        (["--limit", "-1"], "limit"),
        (["--branch", "b" * 10_000], "at most"),
    ):
        args = [
            "bench",
            "--target",
            "simulator:main",
            "--branch",
            "b",
            "--dataset",
            str(locale),
            "--transcript-mode",
            *extra,
        ]
        out = runner.invoke(app, args)
        assert out.exit_code == 1 and message in out.output, out.output
    out = runner.invoke(
        app,
        [
            "bench",
            "--target",
            "simulator:main",
            "--branch",
            "b",
            "--dataset",
            str(locale),
            "--transcript-mode",
        ],
    )
    assert out.exit_code == 0, out.output
    assert db.execute("SELECT utt_id FROM omni.clip_audio").fetchone()["utt_id"] == "bom1"
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 1


def test_json_output_is_only_json(db, tmp_path: Path) -> None:
    enqueue(db, "k|post", None, "post", {"op": "post", "text": "hello", "blocks": []})
    db.commit()
    out = runner.invoke(app, ["alerts", "dispatch", "--json"])
    assert out.exit_code == 0
    assert json.loads(out.stdout)["sent"] == 1


# --- Issue 26: the trust boundary (trigger forms and servers) ------------------------------

MEMORY_LIMIT = 3 << 29  # 1.5 GiB for a whole `bench` process: less than one bomb inflated


def _hostile_locale(root: Path) -> Path:
    from tests.fakes.hostile_vllm import ATTACKS

    (root / "prompt-wavs").mkdir(parents=True)
    write_audio(str(root / "prompt-wavs" / "p.wav"), np.full(2400, 0.1, np.float32), 24_000)
    lines = ["good|p|prompt-wavs/p.wav|good clip one two"]
    lines += [f"{a}|p|prompt-wavs/p.wav|attack {a}" for a in ATTACKS]
    (root / "meta.lst").write_text("\n".join(lines) + "\n")
    return root


def _limited(limit: int):  # type: ignore[no-untyped-def]
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def test_a_hostile_server_costs_one_clip_never_the_run_or_the_memory(
    planted: Path, db, tmp_path: Path
) -> None:
    """Every attack of tests/fakes/hostile_vllm.py against one run, in a process whose address
    space is capped: the run ends (partial: it has infra clips), the good clip is ok, each attack is that clip's
    failure with its reason, and no planted secret reaches the output or the store."""
    import subprocess
    import sys

    from tests.fakes.hostile_vllm import ATTACKS, hostile_app

    locale = _hostile_locale(tmp_path / "en")
    env = {**os.environ, "OMNI_HOME": str(planted), "OPENBLAS_NUM_THREADS": "1"}
    with serve_in_thread(hostile_app()) as url:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "omni_tasks",
                "bench",
                "--target",
                url,
                "--branch",
                "rebase",
                "--dataset",
                str(locale),
                "--transcript-mode",
                "--run-key",
                "hostile",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=_limited(MEMORY_LIMIT),
        )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    run = db.execute("SELECT run_id, status FROM omni.run WHERE run_key = 'hostile'").fetchone()
    assert run["status"] == "partial"  # ended, with infra clips: never left `running`
    clips = {
        r["utt_id"]: r
        for r in db.execute(
            "SELECT utt_id, synth_status, error_detail, thinker_text FROM omni.clip_audio "
            "WHERE run_id = %s",
            (run["run_id"],),
        )
    }
    assert set(clips) == {"good", *ATTACKS}
    assert clips["good"]["synth_status"] == "ok"
    reasons = {
        "flac": "dropped 1 audio chunk",
        "gzip_error": "HTTP 500",
        "gzip_stream": "an SSE line over",  # 2 GiB of zeros is one line
        "endless_line": "an SSE line over",
        "null_choice": "'choices' is not a list of objects",
        "big_int": "not valid JSON",
        "deep_json": "nested too deeply",
        "content_number": "'content' or 'modality' is not text",
        "huge_text": "thinker text cut at 65536 characters",
    }
    for attack, reason in reasons.items():
        assert reason in (clips[attack]["error_detail"] or ""), (attack, clips[attack])
    failed = {"gzip_error", "gzip_stream", "endless_line", "null_choice", "big_int"}
    failed |= {"deep_json", "content_number"}
    assert {a for a in ATTACKS if clips[a]["synth_status"] == "request_failed"} == failed
    assert clips["flac"]["synth_status"] == "no_audio"
    assert len(clips["huge_text"]["thinker_text"]) <= 65536
    rows = db.execute("SELECT error_detail, thinker_text FROM omni.clip_audio").fetchall()
    _no_secret({"output": out.stdout + out.stderr, "clips": json.dumps(rows)})
