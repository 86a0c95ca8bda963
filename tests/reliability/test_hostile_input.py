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

from omni_tasks.alerts.messages import links_for
from omni_tasks.alerts.slack import SlackSink, dispatch
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.evidence.audio import AudioError, decode_wav, wav_bytes, write_audio
from omni_tasks.jobs.nightly import _git_head
from omni_tasks.store.alerts import enqueue
from omni_tasks.store.db import DatabaseError, connect
from omni_tasks.synthesis.simulator import serve_in_thread
from omni_tasks.trust.names import InvalidName, check_branch, path_component
from omni_tasks.trust.redact import escape, redact_dsn
from tests.airflow_cluster import Cluster
from tests.factories import ab_files, small_artifact, stored_decision, write_json
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
    get_settings.cache_clear()
    yield tmp_path / "omni-home"
    get_settings.cache_clear()


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
    _gated(db)
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


def _gated(db) -> None:  # type: ignore[no-untyped-def]
    """A decision for every stored run (what `report` needs), as the gate would store it."""
    db.execute(
        "INSERT INTO omni.gate_decision (benchmark, nightly, candidate_branch, "
        "baseline_branch, variant, policy_version, verdict, policy, candidate_run_id) "
        "SELECT 'seed_tts_en', nightly, branch, 'main', 'default', 'v', 'UNKNOWN', "
        "'{}'::jsonb, run_id FROM omni.run"
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
    from omni_tasks.reports.html import report_path

    path = report_path("../../../../tmp/evil", dt.date(2026, 11, 1))
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
    get_settings.cache_clear()
    try:
        for field in (
            {"repo": "/etc"},
            {"dataset": "/etc/passwd"},
            {"environment": {"python": "/bin/sh"}},
            {"environment": {"strategy": "venv", "requirements": ["-r", "/etc/shadow"]}},
            {"server": {"deploy_config": "/proc/self/environ"}},
            {"environment": {"strategy": "venv", "root": str(tmp_path / "home/../elsewhere")}},
        ):
            with pytest.raises(ValueError, match=r"trusted root|pip options"):
                NightlyParams(**field)  # type: ignore[arg-type]
        monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path / "repos")]))
        get_settings.cache_clear()
        ok = NightlyParams(
            repo=str(tmp_path / "repos" / "vllm-omni"),
            dataset="demo",
            environment={"python": "python3"},
        )
        assert ok.repo is not None
    finally:
        get_settings.cache_clear()


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
    verdicts = {d["candidate_branch"]: d["verdict"] for d in json.loads(out.stdout)}
    assert verdicts["dev"] == "REGRESSED" and verdicts["rebase"] in {"REGRESSED", "INFRA"}


def test_slack_text_and_links_carry_no_mentions_links_or_formatting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_GRAFANA_URL", "https://grafana.example")
    get_settings.cache_clear()
    try:
        links = links_for(
            stored_decision(
                candidate_branch="x|<!channel>",
                baseline_branch="main>|<https://evil.example|click>",
                nightly=dt.date(2026, 11, 1),
            )
        )
    finally:
        get_settings.cache_clear()
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
        f"postgresql://u@127.0.0.1:1/db?%70assword={PASSWORD}",
        f"postgresql://u@127.0.0.1:1/db?PASSWORD={PASSWORD}",
        f"host=127.0.0.1 port=1 PASSWORD={PASSWORD}",
        f"host=127.0.0.1 port=1 Password = '{PASSWORD}'",
    ],
)
def test_dsn_passwords_never_appear_in_errors(dsn: str) -> None:
    with pytest.raises(DatabaseError) as info:
        connect(dsn)
    message = str(info.value)
    secret = PASSWORD.replace("pw", "@") if "%40" in dsn else PASSWORD
    assert PASSWORD not in message and secret not in message
    assert PASSWORD.replace("pw", "%40") not in message
    assert PASSWORD not in redact_dsn(dsn)


def test_buildkite_token_goes_only_to_the_api_host(db) -> None:  # type: ignore[no-untyped-def]
    from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline
    from tests.fakes.buildkite_api import BuildkiteState, buildkite_app

    state, storage = BuildkiteState(), Hits()
    with serve_in_thread(buildkite_app(state)) as api, serve_in_thread(storage.app()) as other:
        from tests.fakes.buildkite_fleet import QWEN_DIR

        job = {"id": "j1", "name": ":full_moon: Omni · Accuracy Test"}
        job["agent_query_rules"] = ["queue=mithril-h100-pool"]
        state.builds = [
            {"number": 1, "branch": "main", "commit": "a" * 40, "state": "passed", "jobs": [job]}
        ]
        state.artifacts[1] = [
            {
                "id": "a1",
                "filename": "qwen_omni_acc_seed_tts_20261127-021500.json",
                "path": f"{QWEN_DIR}/qwen_omni_acc_seed_tts_20261127-021500.json",
                "job_id": "j1",
                "download_url": f"{other}/download/a1",
            }
        ]
        src = BuildkiteSource(
            "vllm", "vllm-omni", state.token, f"{api}/v2", artifact_hosts=("127.0.0.1",)
        )
        report = import_pipeline(db, src)
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
        "gzip_stream": "an SSE event over",  # 2 GiB of zeros is one event
        "endless_line": "an SSE event over",
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
    _no_secret(
        {"output": out.stdout + out.stderr, "clips": json.dumps(rows), **_files_under(planted)}
    )


@pytest.fixture(scope="module")
def af(tmp_path_factory, results_dsn):  # type: ignore[no-untyped-def]
    from tests.airflow_env import airflow_env, migrate

    root = tmp_path_factory.mktemp("airflow")
    env = airflow_env(root / "home", results_dsn, root / "omni-home")
    migrate(env)
    return env


def _victim(root: Path) -> Path:
    victim = root / "victim"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    return victim


def _deployment(af: dict[str, str], tmp_path: Path, config: dict) -> dict[str, str]:  # type: ignore[type-arg]
    import sys

    import yaml

    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump({"version": 1, **config}))
    trusted = json.dumps([str(tmp_path), sys.prefix])
    return {
        **af,
        "OMNI_NIGHTLY_CONFIG": str(path),
        "OMNI_TRUSTED_ROOTS": trusted,
        "OMNI_GRAFANA_TOKEN": TOKEN,  # a planted secret: it must reach no log and no row
    }


def test_a_trigger_form_cannot_delete_overwrite_or_execute_on_the_worker(
    af, db, tmp_path: Path
) -> None:
    """The real DAGs with hostile forms: a commit that is a path or a git option, a server
    environment that runs a command, packages and a model that is an option. Each run fails at
    its first task naming the field; the victim's files are intact, nothing ran, nothing was
    stored."""

    from tests.airflow_env import dags_test
    from tests.factories import git_repo

    repo = tmp_path / "repo"
    commits = git_repo(repo, 2, "main")
    victim = _victim(tmp_path)
    marker = tmp_path / "command-ran"
    overwritten = tmp_path / "overwritten"
    overwritten.write_text("original")
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "repo": str(repo),
        "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
        "environment": {"strategy": "venv", "repo": str(repo), "root": str(tmp_path / "envs")},
        "server": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct", "gpus": 2},
        "transcript_mode": True,
    }
    env = _deployment(af, tmp_path, config)
    hostile = {
        "commits.main": {"commits": {"main": "../../victim", "rebase": commits[1]}},
        "commits.rebase": {"commits": {"main": commits[0], "rebase": f"--output={overwritten}"}},
        "server.env": {
            "server": {
                "env": {"PYTHONWARNINGS": "ignore::antigravity.x", "BROWSER": f"touch {marker} %s"}
            }
        },
        "server.model": {"server": {"model": "--trust-remote-code"}},
        "environment.requirements": {"environment": {"requirements": ["evil-package==6.6.6"]}},
    }
    logs = []
    for i, (field, conf) in enumerate(hostile.items()):
        out = dags_test(env, "omni_nightly", f"2026-11-{i + 1:02d}", json.dumps(conf))
        log = out.stdout + out.stderr
        logs.append(log)
        assert out.returncode != 0, field
        # Refused on submit (the Params' schemas: a commit is 7–40 hex; `server` and
        # `environment` take only their choosable keys), else by the first task, naming it.
        at_submit = f"Invalid input for param {field.split('.')[0]}" in log
        assert at_submit or (field in log and "AirflowFailException" in log), log[-3000:]
        assert at_submit == (field != "server.model"), field  # a model name fits the schema
        assert "up_for_retry" not in log.lower()
    bisect = {"history": [str(victim), commits[1]], "target": "vllm-serve"}
    for field, conf in (
        ("history", bisect),  # a path is no commit: refused on submit
        ("server", {**bisect, "history": commits, "server": {"env": {"LD_PRELOAD": "x"}}}),
        ("repo", {**bisect, "history": commits, "repo": str(victim)}),  # the config's only
    ):
        out = dags_test(env, "omni_bisect", "2026-11-20", json.dumps(conf))
        logs.append(out.stdout + out.stderr)
        assert out.returncode != 0 and field in logs[-1], field
    assert (victim / "precious.txt").read_text() == "keep me"
    assert overwritten.read_text() == "original"
    assert not marker.exists() and not (tmp_path / "envs").exists()
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0
    outbox = db.execute("SELECT payload::text AS p FROM omni.alert_outbox").fetchall()
    assert outbox  # the failures were raised as INFRA alerts…
    _no_secret({"logs": "".join(logs), "outbox": json.dumps(outbox)})  # …without the secret


def test_the_config_may_offer_the_form_a_choice_of_models(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import yaml

    from omni_tasks.deployment.night import resolve_night
    from omni_tasks.deployment.reading import ConfigError

    def resolve(form: dict, text: str) -> NightlyParams:
        (params,) = resolve_night(form, text).series
        return params

    config = {
        "version": 1,
        "branches": ["main"],
        "targets": {"main": "simulator:main"},
        "server": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct", "gpus": 2},
        "form_choices": {"server.model": ["openbmb/MiniCPM-o-4_5"]},
    }
    text = yaml.safe_dump(config)
    chosen = resolve({"server": {"model": "openbmb/MiniCPM-o-4_5"}}, text)
    assert (chosen.server.model, chosen.server.gpus) == ("openbmb/MiniCPM-o-4_5", 2)  # merged
    assert resolve({"seeds": [1]}, text).server.model.startswith("Qwen/")
    with pytest.raises(ConfigError, match=r"server\.gpus: set by the deployment config only"):
        resolve({"server": {"gpus": 1}}, text)
    with pytest.raises(ConfigError, match=r"server.model: set by the deployment config only"):
        resolve({"server": {"model": "evil/model"}}, text)
    with pytest.raises(ConfigError, match="form_choices: set by the deployment config only"):
        resolve({"form_choices": {"server.env": [{"X": "1"}]}}, text)
    bad_choices = yaml.safe_dump({**config, "form_choices": ["server.model"]})
    with pytest.raises(ConfigError, match="form_choices: a mapping"):
        resolve({"server": {"model": "evil/model"}}, bad_choices)
    with pytest.raises(ConfigError, match=r"server\.model"):
        resolve({}, yaml.safe_dump({**config, "server": {"model": "--trust-remote-code"}}))
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        laughs += f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    with pytest.raises(ConfigError, match="expands to more than"):
        resolve({}, "version: 1\n" + laughs)


def test_the_provenance_probe_and_git_take_no_orders_from_data(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The probe's interpreter runs in a clean environment (the worker's PYTHONWARNINGS and
    BROWSER would run a command before any server starts); commits reach git after
    --end-of-options, so `--output=FILE` is a revision that does not exist, not an option."""
    import sys

    from omni_tasks.synthesis.provenance import commit_time, lineage
    from omni_tasks.synthesis.server import ServerSpec, provenance, server_env
    from omni_tasks.trust.commits import check_commit, resolve_commit
    from tests.factories import git_repo

    marker = tmp_path / "command-ran"
    monkeypatch.setenv("PYTHONWARNINGS", "ignore::antigravity.x")
    monkeypatch.setenv("BROWSER", f"touch {marker} %s")
    monkeypatch.setenv("OMNI_SLACK_TOKEN", TOKEN)
    spec = ServerSpec(
        python=sys.executable, model="m", log_path=tmp_path / "log", startup_timeout_s=60
    )
    assert provenance(spec).stack["python"]  # the probe ran…
    assert not marker.exists()  # …and nothing else did
    assert "OMNI_SLACK_TOKEN" not in server_env(spec)  # a server under test gets no secrets

    repo = tmp_path / "repo"
    commits = git_repo(repo, 2, "main")
    target = tmp_path / "written-by-git"
    for bad in (f"--output={target}", "../../victim", "HEAD", "a" * 41, "g" * 40):
        with pytest.raises(InvalidName):
            check_commit(bad)
    for bad in (f"--output={target}", "../../victim", "a" * 41):
        assert commit_time(repo, bad) is None
        assert lineage(repo, bad, commits[1], None).reachable_from_baseline_head is None
    assert not target.exists()
    assert resolve_commit(str(repo), commits[0][:8]) == commits[0]
    with pytest.raises(InvalidName, match="not a commit of"):
        resolve_commit(str(repo), "deadbeef")
    # A form's short SHA is resolved once, in the repo, to the full SHA used from then on.
    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    get_settings.cache_clear()
    try:
        p = NightlyParams(repo=str(repo), commits={"main": commits[0][:9].upper()})
        assert p.commits == {"main": commits[0]}
        with pytest.raises(ValueError, match="short SHA and no repo"):
            NightlyParams(commits={"main": commits[0][:9]})
    finally:
        get_settings.cache_clear()


def test_an_environment_directory_is_only_ever_the_full_sha_inside_the_root(
    tmp_path: Path,
) -> None:
    from omni_tasks.environments import EnvironmentBuildError
    from omni_tasks.environments.venv import VenvStrategy

    victim = _victim(tmp_path)
    root = tmp_path / "envs"
    root.mkdir()
    sha = "c" * 40
    (root / sha).symlink_to(victim)  # planted: the env dir of a commit points at the victim
    strategy = VenvStrategy(str(tmp_path / "repo"), root)
    for commit in (sha, "../../victim", str(victim), sha[:16]):
        with pytest.raises(EnvironmentBuildError):
            strategy.prepare(commit)
    assert (victim / "precious.txt").read_text() == "keep me"


def test_every_audio_root_kind_follows_the_one_path_rule(planted: Path, tmp_path: Path) -> None:
    """file:// roots resolve links and refuse what is not a regular file exactly like plain
    paths (a link to /proc/self/environ was uploaded to Slack; a FIFO hung the reader);
    http(s):// roots compare the decoded, normalized path (%2e%2e passed the prefix check)."""
    import time

    from omni_tasks.evidence.audio import AudioUnavailable, check_audio_uri, load_audio_bytes

    root = planted / "audio"
    write_audio(str(root / "ok.wav"), np.zeros(240, np.float32), 24_000)
    (root / "environ.wav").symlink_to("/proc/self/environ")
    os.mkfifo(root / "fifo.wav")
    (root / "dir.wav").mkdir()
    file_root = f"file://{root}"
    assert load_audio_bytes(f"{file_root}/ok.wav", [file_root])[:4] == b"RIFF"
    started = time.monotonic()
    for name in ("environ.wav", "fifo.wav", "dir.wav", "", "../outside.wav"):
        for uri in (f"{file_root}/{name}", f"{root}/{name}"):
            with pytest.raises(AudioUnavailable):
                load_audio_bytes(uri, [file_root, str(root)])
    assert time.monotonic() - started < 5  # the FIFO did not block
    hits = Hits()
    with serve_in_thread(hits.app()) as url:
        http_root = f"{url}/audio"
        for uri in (
            f"{url}/audio/%2e%2e/secret.wav",
            f"{url}/audio/%2E%2E/%2e%2e/etc/passwd",
            f"{url}/audio/./x/../../secret.wav",
            f"{url}/audio",
            f"{url}/audio-other/x.wav",
            f"{url}/audio/x.wav?u=../../secret",
        ):
            with pytest.raises(AudioUnavailable):
                check_audio_uri(uri, [http_root])
    assert hits.paths == []


def test_the_audio_root_itself_as_an_audio_path_leaves_the_report_intact(
    planted: Path, db, tmp_path: Path
) -> None:
    doc = small_artifact(3)
    root = planted / "audio"
    root.mkdir(parents=True)
    doc["seed_tts_wer_eval_items"][0]["audio_path"] = str(root)
    doc["seed_tts_wer_eval_items"][1]["audio_path"] = f"{root}/"
    art = write_json(tmp_path / "art.json", doc)
    out = runner.invoke(app, ["import", "vllm-omni", str(art), "--branch", "rebase"])
    assert out.exit_code == 0 and "2 clips' audio_path refused" in out.output, out.output
    assert db.execute("SELECT count(audio_uri) AS n FROM omni.clip_audio").fetchone()["n"] == 0
    _gated(db)
    db.execute("UPDATE omni.clip_audio SET audio_uri = %s", (str(root),))  # written by hand
    db.commit()
    page = tmp_path / "report.html"
    out = runner.invoke(app, ["report", "--out", str(page)])
    assert out.exit_code == 0 and page.is_file(), out.output


def test_deleting_a_run_deletes_only_its_own_audio(planted: Path, db, tmp_path: Path) -> None:
    """Imported audio lives under a folder no run key maps onto (`runs delete imports` used to
    remove every imported run's audio)."""
    outside = tmp_path / "harness-audio"
    doc = small_artifact(2)
    for i, item in enumerate(doc["seed_tts_wer_eval_items"]):
        write_audio(str(outside / f"u{i}.wav"), np.zeros(240, np.float32), 24_000)
        item["audio_path"] = str(outside / f"u{i}.wav")
    art = write_json(tmp_path / "art.json", doc)
    args = ["import", "vllm-omni", str(art), "--branch", "main", "--audio-root", str(outside)]
    assert runner.invoke(app, args).exit_code == 0
    other = write_json(tmp_path / "other.json", small_artifact(2, date="20261127-021500"))
    args = ["import", "vllm-omni", str(other), "--branch", "main", "--run-key", "imports"]
    assert runner.invoke(app, args).exit_code == 0
    adopted = [r["audio_uri"] for r in db.execute("SELECT audio_uri FROM omni.clip_audio")]
    adopted = [a for a in adopted if a]
    assert len(adopted) == 2
    out = runner.invoke(app, ["runs", "delete", "imports", "--yes"])
    assert out.exit_code == 0, out.output
    assert all(Path(a).is_file() for a in adopted)


def test_an_artifact_date_past_the_calendar_is_refused_at_import(db, tmp_path: Path) -> None:
    for date in ("99991231", "99991231-000000", "0001-01-01", "21010101"):
        art = write_json(tmp_path / "far.json", small_artifact(2, date=date))
        out = runner.invoke(app, ["import", "vllm-omni", str(art), "--branch", "main"])
        assert out.exit_code == 1 and "'date'" in out.output and "outside" in out.output, date
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0


def test_chart_texts_and_slack_text_carry_no_markup_links_or_reordering(db, tmp_path: Path) -> None:
    from omni_tasks.reports.html import modes_figure, scatter_figure, trend_figure
    from omni_tasks.store.views import ModeCount, TrendRow
    from omni_tasks.trust.redact import code

    branch = '<a href="javascript:alert(1)">x</a>'
    night = TrendRow(
        time=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
        benchmark="seed_tts_en",
        model="m",
        lane="default",
        nightly=dt.date(2026, 11, 1),
        branch=branch,
        variant="default",
        tau=0.5,
        runs=1,
        tail_fraction=0.1,
        tail_ci_low=0.05,
        tail_ci_high=0.15,
        capped_mean_wer=None,
        mean_wer=None,
        coverage=None,
        verdict=None,
        confirmed=None,
    )
    figures = [
        scatter_figure([], "main", branch),
        modes_figure([ModeCount(branch, "<b>m</b>", 1)], set()),
        trend_figure([night]),
    ]
    for fig in figures:
        text = fig.to_json()
        assert "<a href" not in text and "&lt;a href" in text
    text = escape("see https://evil.example/login or evil.example \u202egpj.exe")
    assert "https://" not in text and "evil.example" not in text and "\u202e" not in text
    assert code("rebase`<!channel>`") == "`rebaseˋ&lt;!channel&gt;ˋ`"


def test_imported_audio_meets_the_stream_decoder_rules(planted: Path, db, tmp_path: Path) -> None:
    """A FLAC declaring 34 GiB of samples, imported with --audio-root, is one clip's
    "audio unreadable" when graded: never decoded (grade used to crash on it)."""
    from tests.fakes.hostile_vllm import flac_bomb

    outside = tmp_path / "harness-audio"
    write_audio(str(outside / "u0.wav"), np.zeros(4800, np.float32), 24_000)
    (outside / "u1.wav").write_bytes(flac_bomb())
    doc = small_artifact(2)
    for i, item in enumerate(doc["seed_tts_wer_eval_items"]):
        item["audio_path"] = str(outside / f"u{i}.wav")
    art = write_json(tmp_path / "art.json", doc)
    args = ["import", "vllm-omni", str(art), "--branch", "main", "--audio-root", str(outside)]
    assert runner.invoke(app, args).exit_code == 0
    graded = runner.invoke(app, ["grade", _only_run(db)])
    assert graded.exit_code == 0, graded.output
    rows = db.execute(
        "SELECT utt_id, g.grade_status, coalesce(g.error_detail, '') AS e FROM omni.clip_grade g "
        "JOIN omni.grading USING (grading_id) WHERE grader_id LIKE 'faster-whisper%%' "
        "ORDER BY utt_id"
    ).fetchall()
    assert [r["utt_id"] for r in rows] == ["u0", "u1"]
    assert "not a WAV file" in rows[1]["e"] and "not a WAV" not in rows[0]["e"]


def test_buildkite_answers_are_read_within_bounds(db) -> None:
    """Buildkite is not trusted either: a builds page that inflates to 2 GiB is refused at
    16 MiB, and a page of the wrong shape is an error, not a traceback."""
    from omni_tasks.importers.buildkite import BuildkiteError, BuildkiteSource, import_pipeline
    from tests.fakes.hostile_vllm import gzip_bomb

    bomb = gzip_bomb()

    async def bombs(request: Request) -> Response:
        if "nested" in request.url.path:
            return Response('{"not": "a list"}', media_type="application/json")
        return Response(bomb, headers={"content-encoding": "gzip"})

    app_ = Starlette(routes=[Route("/{p:path}", bombs)])
    with serve_in_thread(app_) as url:
        for pipeline, message in (("vllm-omni", "over 16777216 bytes"), ("nested", "not a list")):
            src = BuildkiteSource("vllm", pipeline, "bk", base_url=f"{url}/v2", max_retries=0)
            with pytest.raises(BuildkiteError, match=message):
                import_pipeline(db, src)


def test_report_tables_escape_every_value(planted: Path, db, tmp_path: Path) -> None:
    """The report is a Jinja2 template with autoescaping: a branch named like markup is text."""
    evil = "x<img src=x onerror=alert(1)>"
    art = write_json(tmp_path / "art.json", small_artifact(3))
    out = runner.invoke(app, ["import", "vllm-omni", str(art), "--branch", evil])
    assert out.exit_code == 0, out.output
    _gated(db)
    db.commit()
    page = tmp_path / "report.html"
    assert runner.invoke(app, ["report", "--out", str(page)]).exit_code == 0
    text = page.read_text()
    assert "<img src=x" not in text and "x&lt;img src=x onerror=alert(1)&gt;" in text


# --- Issue 42: allow-lists at the trust boundary -------------------------------------------
SLACK_SECRET = "xoxb-PLANTED-slack-0c55e1a9"
GITHUB_SECRET = "ghp_PLANTEDgithubToken0123456789ab"
BUILDKITE_SECRET = "bkua_PLANTEDbuildkiteToken0123456789"
DB_SECRET = "PLANTEDdbPassword77"
PLAIN_MARKER = "plain-marker-visible-4242"  # not a secret: proves /proc was readable


def _planted_env(base: dict[str, str]) -> dict[str, str]:
    """A worker's environment holding every kind of secret, plus one plain marker."""
    return {
        **base,
        "OMNI_SLACK_TOKEN": SLACK_SECRET,
        "OMNI_GITHUB_TOKEN": GITHUB_SECRET,
        "BUILDKITE_API_TOKEN": BUILDKITE_SECRET,
        "OMNI_DATABASE_URL": f"{base['OMNI_DATABASE_URL']} password={DB_SECRET}",
        "OMNI_PLAIN_MARKER": PLAIN_MARKER,
    }


def _secrets_in(text: str) -> list[str]:
    """The planted secrets in `text`: plain, hex or base64 at any offset."""
    from tests.fakes.planted import leaks

    return leaks(text, (SLACK_SECRET, GITHUB_SECRET, BUILDKITE_SECRET, DB_SECRET))


# Reads the environment of itself and of its ancestors through /proc, as hostile code would.
PROC_DUMP = """
def _dump(path):
    import json, os
    out = {"self": dict(os.environ)}
    pid = os.getppid()
    for level in range(3):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                out[f"ancestor{level}"] = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError) as exc:
            out[f"ancestor{level}"] = f"unreadable: {exc}"
            break
    try:
        with open(path, "w") as f:
            json.dump(out, f)
    except OSError:
        pass
    # Sandboxed, the file above lands in the sandbox's own /tmp: its log is where it shows.
    print("PROC-DUMP " + json.dumps(out), flush=True)
    print("PROC-DUMP " + json.dumps(out), file=__import__("sys").stderr, flush=True)
    return out
"""


def _seen(dump: Path, root: Path) -> dict[str, object]:
    """What PROC_DUMP saw: its file, or (sandboxed, unable to write ours) its line in a log."""
    if dump.exists():
        return dict(json.loads(dump.read_text()))
    for log in root.rglob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.strip().startswith("PROC-DUMP "):
                return dict(json.loads(line.strip()[len("PROC-DUMP ") :]))
    raise AssertionError(f"no PROC-DUMP under {root}")


def test_a_form_chooses_only_among_what_the_config_offers(tmp_path: Path) -> None:
    """Every field the form used to reach the worker through (a package index, engine
    arguments, a namespace, a GPU count, a timeout, a URL, a grader model) is refused naming
    the field; what the config offers (a model, a vLLM build, a named override) is accepted."""
    import yaml

    from omni_tasks.deployment.night import resolve_night
    from omni_tasks.deployment.reading import ConfigError

    def resolve(form: dict, text: str) -> NightlyParams:
        (params,) = resolve_night(form, text).series
        return params

    config = {
        "version": 1,
        "branches": ["main", "rebase"],
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        "server": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct", "gpus": 2},
        "environment": {"strategy": "existing"},
        "form_choices": {"server.model": ["openbmb/MiniCPM-o-4_5"], "environment.vllm": ["0.27.0"]},
        "named_overrides": {"eager_stage0": {"stages": [{"stage_id": 0, "enforce_eager": True}]}},
        "transcript_mode": True,
    }
    text = yaml.safe_dump(config)
    hostile = {
        "environment.vllm_index": {"environment": {"vllm_index": "http://evil/", "vllm": "0.27.0"}},
        "environment.requirements": {"environment": {"requirements": ["evil==1"]}},
        "environment.namespace": {"environment": {"namespace": "kube-system"}},
        "environment.vllm": {"environment": {"vllm": "6.6.6"}},
        "server.gpus": {"server": {"gpus": 64}},
        "server.startup_timeout_s": {"server": {"startup_timeout_s": 10**9}},
        "server.env": {"server": {"env": {"LD_PRELOAD": "/tmp/x.so"}}},
        "server.model": {"server": {"model": "evil/model"}},
        "overrides.stages[0].trust_remote_code": {
            "overrides": {"stages": [{"stage_id": 0, "trust_remote_code": True}]}
        },
        "overrides.stages[0].worker_cls": {
            "overrides": {"stages": [{"stage_id": 0, "worker_cls": "evil.Worker"}]}
        },
        "overrides.runtime": {"overrides": {"runtime": {"env": {"LD_PRELOAD": "x"}}}},
        "overrides": {"overrides": "no-such-override"},
        "targets.rebase": {"targets": {"main": "simulator:main", "rebase": "http://10.0.0.1:80"}},
        "grader.model": {"grader": {"model": "/etc/passwd"}},
        "gpu_task_timeout_s": {"gpu_task_timeout_s": 10**9},
        "repo": {"repo": "/tmp/evil-repo"},
        "lane": {"lane": "somewhere"},
        "upstream_gate": {"upstream_gate": "none"},
    }
    for field, form in hostile.items():
        with pytest.raises(ConfigError) as caught:
            resolve(form, text)
        assert f"trigger form: {field}" in str(caught.value), (field, str(caught.value))
    chosen = resolve(
        {
            "server": {"model": "openbmb/MiniCPM-o-4_5"},
            "environment": {"vllm": "0.27.0"},
            "overrides": "eager_stage0",
        },
        text,
    )
    assert (chosen.server.model, chosen.server.gpus) == ("openbmb/MiniCPM-o-4_5", 2)
    assert (chosen.environment.strategy, chosen.environment.vllm) == ("existing", "0.27.0")
    assert chosen.overrides == {"stages": [{"stage_id": 0, "enforce_eager": True}]}
    free = {"stages": [{"stage_id": 1, "default_sampling_params": {"temperature": 0.0}}]}
    assert resolve({"overrides": free}, text).overrides == free


def test_a_poisoned_index_in_a_form_is_never_fetched(af, db, tmp_path: Path) -> None:
    """Through the real DAGs (nightly, bisect, ablate): a form naming a package index fails
    its first task naming the field, is not retried, and the index never sees a request."""
    from tests.airflow_env import dags_test
    from tests.factories import git_repo

    repo = tmp_path / "repo"
    commits = git_repo(repo, 2, "main")
    index = Hits()
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "repo": str(repo),
        "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
        "environment": {"strategy": "venv", "repo": str(repo), "root": str(tmp_path / "envs")},
        "server": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct", "gpus": 2},
        "transcript_mode": True,
    }
    env = _deployment(af, tmp_path, config)
    with serve_in_thread(index.app()) as url:
        poisoned = {"vllm_index": f"{url}/simple/", "vllm": "0.27.0"}
        runs = (
            ("omni_nightly", {"environment": poisoned}),
            (
                "omni_bisect",
                {"history": commits, "target": "vllm-serve", "environment": poisoned},
            ),
            (
                "omni_ablate",
                {"nightly": "2026-11-01", "environment": {"vllm_index": f"{url}/simple/"}},
            ),
        )
        for i, (dag_id, conf) in enumerate(runs):
            out = dags_test(env, dag_id, f"2026-11-{i + 10:02d}", json.dumps(conf))
            log = out.stdout + out.stderr
            assert out.returncode != 0, log[-2000:]
            # Refused when the form is submitted (the Params' schema) or by the first task.
            assert "environment" in log and (
                "Invalid input for param environment" in log or "environment.vllm_index" in log
            ), log[-3000:]
            assert "up_for_retry" not in log.lower()
    assert index.paths == []  # never fetched
    assert not (tmp_path / "envs").exists()


def test_a_launched_server_finds_no_secret_in_its_parents_environ(af, db, tmp_path: Path) -> None:
    """The real nightly launches a `vllm` that reads /proc/$PPID/environ (and its
    grandparent's) before serving: it finds the worker's plain settings there (so the read
    worked) and none of the planted secrets; its own environment is the allow-list's."""
    import sys

    from tests.airflow_env import dags_test
    from tests.fakes.vllm_env import fake_vllm_env

    fake = fake_vllm_env(tmp_path)
    dump = tmp_path / "server-saw.json"
    exe = Path(fake["PATH"].split(os.pathsep)[0]) / "vllm"
    exe.write_text(
        exe.read_text().replace(
            'print("fake vllm"', f'{PROC_DUMP}\n_dump({str(dump)!r})\nprint("fake vllm"', 1
        )
    )
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "vllm-serve", "rebase": "simulator:rebase"},
        "environment": {"strategy": "existing", "python": sys.executable},
        "server": {
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "gpus": 2,
            "startup_timeout_s": 120,
            "env": {"PYTHONPATH": fake["PYTHONPATH"]},
        },
        "transcript_mode": True,
        "limit": 3,
    }
    env = _planted_env(_deployment(af, tmp_path, config))
    env.update(PATH=fake["PATH"], OMNI_GPUS="0,1")
    out = dags_test(env, "omni_nightly", "2026-11-14", "{}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    seen = _seen(dump, Path(env["OMNI_HOME"]))  # in the server's log
    # In the sandbox no process of the worker's is visible (tests/reliability/test_sandbox.py
    # shows the same read finding every secret without it).
    assert PLAIN_MARKER not in json.dumps(seen)
    assert _secrets_in(json.dumps(seen)) == []
    assert "OMNI_PLAIN_MARKER" not in seen["self"]  # the server's own env is the allow-list's
    rows = db.execute("SELECT branch, status FROM omni.run ORDER BY branch").fetchall()
    assert [r["status"] for r in rows] == ["complete", "complete"]


BACKEND = (
    PROC_DUMP
    + """
import os, sys

def get_requires_for_build_wheel(config_settings=None):
    seen = _dump(DUMP_PATH)
    print("my environment:", seen, file=sys.stderr)  # a build that prints what it found…
    import base64
    print(base64.b64encode(repr(seen).encode()).decode(), file=sys.stderr)  # …and smuggles it
    raise SystemExit("build failed on purpose")

build_wheel = get_requires_for_build_wheel
"""
)

AB_SCRIPT = """
import json, sys
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.ab import ABRequest, run_ab
import datetime as dt
from omni_tasks.alerts.infra import FailedTry, task_failed
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.series import Series
from omni_tasks.store.db import connect

repo, root, base, head = sys.argv[1:5]
serving = NightlyParams(
    benchmark="seed_tts_en",
    targets={"main": "vllm-serve", "rebase": "vllm-serve"},
    environment={"strategy": "venv", "repo": repo, "root": root},
    server={"gpus": 2, "startup_timeout_s": 30},
    transcript_mode=True,
    limit=4,
)
req = ABRequest(benchmark="seed_tts_en", base_target="vllm-serve", head_target="vllm-serve",
                base_sha=base, head_sha=head, repo="o/r", pr=3, limit=4, options={"transcript_mode": True},
                serving=serving)
conn = connect()
try:
    run_ab(conn, req, load_policy())
except Exception as exc:
    conn.rollback()
    # What the DAG's failure callback does with the task's exception.
    task_failed(conn, FailedTry(Series.of({"benchmark": "seed_tts_en"}), "omni_ab", "ab", "manual__pr3",
                                dt.date(2026, 11, 30), 1, f"{type(exc).__name__}: {exc}"))
    print("A/B failed:", type(exc).__name__, exc)
"""


def test_a_pull_requests_build_holds_no_secret_and_publishes_none(
    db, results_dsn: str, tmp_path: Path
) -> None:
    """A PR head whose build backend dumps its environment (and its ancestors' through /proc),
    prints it and fails: the build saw no secret; the check run, the INFRA outbox row, every
    table and the worker's output carry none."""
    import subprocess
    import sys

    from tests.airflow_env import REPO
    from tests.fakes.github_api import GitHubState, github_app

    repo = tmp_path / "pr-head"
    repo.mkdir()
    dump = tmp_path / "build-saw.json"
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (repo / "backend.py").write_text(BACKEND.replace("DUMP_PATH", repr(str(dump))))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = []
    for i in range(2):
        (repo / "n.txt").write_text(str(i))
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"c{i}"], check=True)
        shas.append(
            subprocess.run(
                [*git, "rev-parse", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
        )
    state = GitHubState(token=GITHUB_SECRET)
    with serve_in_thread(github_app(state)) as gh:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMNI_")}
        env = _planted_env({**env, "OMNI_DATABASE_URL": results_dsn})
        env.update(
            OMNI_GITHUB_API_URL=gh,
            OMNI_HOME=str(tmp_path / "omni-home"),
            OMNI_GPUS="0,1",
            OMNI_TRUSTED_ROOTS=json.dumps([str(tmp_path), sys.prefix]),
        )
        out = subprocess.run(
            [sys.executable, "-c", AB_SCRIPT, str(repo), str(tmp_path / "envs"), *shas],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=REPO,
            check=False,
        )
    assert "A/B failed" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    seen = _seen(dump, tmp_path)  # the backend ran, in the sandbox: no process of ours there…
    assert PLAIN_MARKER not in json.dumps(seen)
    assert _secrets_in(json.dumps(seen)) == []  # …and found no secret
    assert [c[0] for c in state.calls] == ["POST", "PATCH"]  # the check run was completed
    assert "installing the checkout" in json.dumps(state.calls)  # saying which step failed
    tables = db.execute(
        "SELECT string_agg(t::text, ' ') AS t FROM (SELECT payload::text AS t FROM "
        "omni.alert_outbox UNION ALL SELECT details::text FROM omni.alert UNION ALL "
        "SELECT source::text FROM omni.run) x"
    ).fetchone()["t"]
    assert "INFRA" in (tables or "")
    everything = json.dumps(state.calls) + (tables or "") + out.stdout + out.stderr
    assert _secrets_in(everything) == []


def test_one_odd_buildkite_answer_skips_that_build_only(db) -> None:
    """An expired artifact, a retried job, a build number that is no number, a build without a
    branch, a download that drips, and a download_url pointing at another loopback service:
    each skips its own build (saying why) and the next build is still imported."""
    from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline
    from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
    from tests.fakes.buildkite_fleet import QWEN_DIR, add

    pipeline, name = "vllm-omni-amd", f"{QWEN_DIR}/qwen_omni_acc_seed_tts_20261128-021500.json"
    state, elsewhere = BuildkiteState(), Hits()
    with serve_in_thread(buildkite_app(state)) as url, serve_in_thread(elsewhere.app()) as other:
        for number in range(1, 8):
            add(state, url, pipeline, number, {name: small_artifact(n=4)})
        builds = {b["number"]: b for b in state.pipelines[pipeline]}
        state.gone.add(f"{pipeline}-1-0")
        # Build 2's job was retried: the first attempt's artifact is kept as a retry.
        builds[2]["jobs"][0].update(retried=True, retried_in_job_id="job-2")
        builds[2]["jobs"].append({**builds[2]["jobs"][0], "id": "job-2", "retried": False})
        del builds[2]["jobs"][1]["retried_in_job_id"]
        first = state.pipeline_artifacts[(pipeline, 2)][0]
        state.blobs[f"{pipeline}-2-1"] = state.blobs[first["id"]]
        state.pipeline_artifacts[(pipeline, 2)].append(
            {
                **first,
                "id": f"{pipeline}-2-1",
                "job_id": "job-2",
                "download_url": first["download_url"].replace("-2-0/", "-2-1/"),
            }
        )
        builds[3]["number"] = "3x"
        del builds[4]["branch"]
        state.drip.add(f"{pipeline}-5-0")
        state.pipeline_artifacts[(pipeline, 6)][0]["download_url"] = f"{other}/steal"
        src = BuildkiteSource(
            "vllm",
            pipeline,
            state.token,
            f"{url}/v2",
            backoff_s=0.01,
            max_retries=0,
            artifact_hosts=STORAGE_HOSTS,
            download_deadline_s=0.5,
        )
        report = import_pipeline(db, src)
    imported = sorted(k.rsplit(":build", 1)[1] for k in report.imported)
    assert imported == ["2", "7"], report
    said = "\n".join(report.skipped_builds)
    for reason in (
        f"1: skipped {name}: the artifact is gone",
        "3x: skipped: its number is not a build number",
        "4: skipped: it names no branch",
        "still arriving after 0.5 s",
        "which is not the API host or an allowed artifact host",
    ):
        assert reason in said, (reason, said)
    assert elsewhere.paths == []  # never fetched
    row = db.execute(
        "SELECT source -> 'buildkite' ->> 'artifact_id' AS aid FROM omni.run "
        "WHERE source -> 'buildkite' ->> 'build' = '2' AND trigger <> 'retry'"
    ).fetchone()
    assert row["aid"] == f"{pipeline}-2-1"  # the latest attempt's artifact is the night's run
    (retry,) = report.retries  # the first attempt's: stored, never a conflict
    assert retry.endswith(":build2:retry-job-1")


def test_every_outbound_text_passes_one_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets the worker holds and the known token shapes are removed from any text, then the
    text is escaped for its sink: no link, image, HTML or mention comes from data."""
    from omni_tasks.trust.redact import outbound, redact

    monkeypatch.setenv("SOME_SERVICE_TOKEN", "not-a-known-shape-but-held-1234")
    get_settings.cache_clear()
    leaked = (
        "log: token=not-a-known-shape-but-held-1234 xoxb-1111-2222-abcdef ghp_"
        + "a" * 36
        + " github_pat_11AAAAAAA0bcdefghijklmnop bkua_"
        + "b" * 40
        + " postgresql://omni:hunter2pass@db:5432/omni password='q uoted pw'"
    )
    clean = redact(leaked)
    for secret in (
        "not-a-known-shape-but-held-1234",
        "xoxb-1111",
        "ghp_aaaa",
        "github_pat_11",
        "bkua_bbbb",
        "hunter2pass",
        "q uoted pw",
    ):
        assert secret not in clean, (secret, clean)
    assert clean.count("[redacted]") == 7
    markup = "see [x](http://evil.example/p) ![i](http://e/i.png) <img src=x> <!channel> | cell"
    github = outbound(markup, "github")
    assert "](" not in github.replace("\\](", "") and "<img" not in github
    assert "http://" not in github and "\\|" in github
    slack = outbound(markup, "slack")
    assert "<!channel>" not in slack and "http://" not in slack
    assert outbound("<script>alert(1)</script>", "html") == "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.mark.xdist_group("local_cluster")
def test_hostile_forms_are_refused_at_submit_by_the_rest_api(local_cluster: Cluster) -> None:
    """A real `airflow api-server` (no deployment config: tests/reliability/conftest.py): a dag
    run whose form names a package index, engine arguments, a namespace or an unknown grader
    field is refused (400) when it is submitted, naming the param; a form within the allow-list
    is accepted."""
    import httpx

    c = local_cluster
    c.wait_for_dag("omni_nightly")
    c.wait_for_dag("omni_bisect")
    headers = {"Authorization": f"Bearer {c.token()}"}

    def trigger(dag_id: str, conf: dict) -> httpx.Response:  # type: ignore[type-arg]
        return httpx.post(
            f"{c.api}/api/v2/dags/{dag_id}/dagRuns",
            json={"logical_date": None, "conf": conf},
            headers=headers,
            timeout=60,
        )

    refused = {
        "environment": ("omni_nightly", {"environment": {"vllm_index": "http://evil/"}}),
        "server": ("omni_nightly", {"server": {"gpus": 64}}),
        "overrides": (
            "omni_nightly",
            {"overrides": {"stages": [{"stage_id": 0, "worker_cls": "evil.W"}]}},
        ),
        "grader": ("omni_nightly", {"grader": {"model": "/etc/passwd"}}),
        "targets": ("omni_nightly", {"targets": {"main": "file:///etc/passwd"}}),
        "budget": ("omni_bisect", {"history": ["a" * 40, "b" * 40], "budget": 10**6}),
    }
    for param, (dag_id, conf) in refused.items():
        r = trigger(dag_id, conf)
        assert r.status_code == 400, (param, r.status_code, r.text[:500])
        assert param in r.text, (param, r.text[:500])
    ok = trigger("omni_nightly", {"server": {"model": "openbmb/MiniCPM-o-4_5"}, "seeds": [1]})
    assert ok.status_code == 200, ok.text[:500]


def test_a_server_pod_holds_no_token_and_no_privilege() -> None:
    """The image strategy's pod: no service-account token mounted, not root, no privilege
    escalation or capabilities; the namespace and GPU count are the config's (a form cannot
    name them: test_a_form_chooses_only_among_what_the_config_offers)."""
    from kubernetes import client as k8s

    from omni_tasks.deployment.schema import ImageEnvironment, ServerConfig
    from omni_tasks.environments.pods import PodSpec, pod_manifest

    image = ImageEnvironment(strategy="image", image="registry.example/vllm-omni:{commit}")
    spec = PodSpec.of(image, ServerConfig(model="m", gpus=2), "a" * 40)
    pod = pod_manifest(spec, "omni-server-1")
    body = k8s.ApiClient().sanitize_for_serialization(pod)
    assert body["spec"]["automountServiceAccountToken"] is False
    ctx = body["spec"]["containers"][0]["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}


def test_a_github_answer_is_read_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GitHub API answering a 2 GiB gzip bomb: the check-run call fails with a message, and
    the answer is never inflated past its bound."""
    import resource

    from omni_tasks.ab import checks
    from tests.fakes.hostile_vllm import gzip_bomb

    bomb = gzip_bomb()

    async def bombs(request: Request) -> Response:
        return Response(
            bomb, headers={"content-encoding": "gzip", "content-type": "application/json"}
        )

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with serve_in_thread(Starlette(routes=[Route("/{p:path}", bombs, methods=["POST"])])) as url:
        monkeypatch.setenv("OMNI_GITHUB_API_URL", url)
        monkeypatch.setenv("OMNI_GITHUB_TOKEN", "ghs_test_token")
        get_settings.cache_clear()
        try:
            with pytest.raises(checks.CheckRunError, match="creating the check run"):
                checks.start("o/r", "a" * 40, "A/B", None)
        finally:
            get_settings.cache_clear()
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200, grown_mib
