"""The end-to-end demo."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, fail, parse_date
from omni_tasks.config import get_settings
from omni_tasks.formatting import pct_ci, pts_ci
from omni_tasks.series import Series


@app.command("demo")
def demo_cmd(
    nights: Annotated[
        int, typer.Option(min=1, max=30, help="Consecutive nightly dates (new seed each)")
    ] = 1,
    transcript: opt.TranscriptOpt = False,
) -> None:
    """Run the nightly DAG (Airflow, in-process) end to end on simulated main vs rebase."""
    from omni_tasks.alerts.blocks import render_text
    from omni_tasks.contracts.rerun import SAME_MORNING
    from omni_tasks.grafana.dashboards import write_all
    from omni_tasks.jobs.demo import BASELINE, CANDIDATE, night_summary, run_nights, standing_line
    from omni_tasks.reports.html import report_path
    from omni_tasks.store import alerts as alert_store
    from omni_tasks.store.db import resolve_dsn
    from omni_tasks.trust.redact import redact_dsn

    settings = get_settings()
    console.rule("omni-tasks demo — SIMULATED targets, real pipeline")
    console.print(
        "What is simulated: the two vLLM-Omni servers. `main` and `rebase` are the local "
        "simulator (omni_tasks/synthesis/simulator.py): it speaks each sentence of the 100-clip "
        "demo corpus with piper (a real neural TTS) and plants Qwen3-Omni's failures (babbling, "
        "truncating). `main` uses the `main-demo` profile (a few random failures); `rebase` the "
        "`rebase-demo-rerun` profile, which also babbles on a fixed 7 % of clips: about 8 of "
        "100 clips regress, REGRESSED but not confirmed on one night (a step that size on 100 "
        "clips), so the same-morning re-run task runs the items broken on either branch again "
        "on both, at fresh seeds, and confirms it. Everything else is the real thing: Airflow "
        "runs the nightly DAG; Whisper tiny.en grades every clip; Postgres stores every clip; "
        "the paired exact test gates; alerts go to the Slack outbox (no token set); dashboards "
        "JSON and the HTML report are written.",
    )
    dsn = resolve_dsn()
    console.print(f"results DB: {redact_dsn(dsn)}")
    last = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    options = opt.run_options({opt.TRANSCRIPT: transcript})
    history = {**options, opt.TRANSCRIPT: True}  # the week before: no audio to speak or grade
    runs = run_nights(nights, last, options, history, dsn, console.print)
    if failed := [r for r in runs if r.returncode != 0]:
        fail(f"the nightly DAG failed for {failed[0].nightly}:{failed[0].failure()}")
    with opt.open_db() as conn:
        for r in runs:
            s = night_summary(conn, Series(settings.benchmark), r.nightly)
            table = Table(
                "branch",
                "tail fraction [95 %]",
                "capped mean",
                "mean (legacy)",
                title=f"nightly {r.nightly} (seed {r.seed}, 100 clips each)",
            )
            for b in s.branches:
                tail = pct_ci(b.tail_fraction, (b.tail_ci_low, b.tail_ci_high))
                table.add_row(b.branch, tail, f"{b.capped_mean_wer:.3f}", f"{b.mean_wer:.3f}")
            console.print(table)
            gate = Table(
                "candidate vs baseline",
                "verdict",
                "reg:imp",
                "Δ tail [95 %]",
                "p (Holm)",
                title="gate",
            )
            for d in s.decisions:
                p_holm = d.mcnemar_p_holm
                gate.add_row(
                    f"{d.candidate_branch} vs {d.baseline_branch}",
                    d.verdict + (" (confirmed)" if d.confirmed else ""),
                    f"{d.regressed}:{d.improved}",
                    pts_ci(d.delta_tail_fraction, (d.delta_tail_ci_low, d.delta_tail_ci_high)),
                    "" if p_holm is None else f"{p_holm:.2g}",
                )
            console.print(gate)
            for d in s.decisions:  # what the same-morning re-run found, when one ran
                for reason in d.reasons or []:
                    if "same-morning re-run" in reason or reason.startswith(SAME_MORNING):
                        console.print(f"{d.candidate_branch} vs {d.baseline_branch}: {reason}")
        sent = alert_store.sent_messages(conn)
        standing = standing_line(conn, Series(settings.benchmark), BASELINE)
    # The last night's candidate run: the one the Next line's `stats` reads.
    keys = [d.candidate_run_key for d in s.decisions if d.candidate_run_key] if runs else []
    dash = write_all(settings.home / "dashboards")
    posts = [m for m in sent if m["kind"] != "upload"]
    audio = [m["payload"]["file"] for m in sent if m["kind"] == "upload"]
    console.rule(
        f"Slack (local outbox): {len(posts)} message(s), {len(audio)} audio file(s) in the thread"
    )
    for m in posts:
        console.print(f"[bold]{m['kind']}[/] → {m['slack_ts']}")
        console.print(render_text(m["payload"]))
    for f in audio:
        console.print(f"audio in thread: {f}")
    console.print(standing)
    console.rule("written")
    report = report_path(settings.benchmark, runs[-1].nightly)
    console.print(
        f"HTML report      {report}\n"
        f"Slack outbox     {settings.outbox_dir}/\n"
        f"dashboards JSON  {', '.join(str(p) for p in dash)}\n"
        f"clip audio       {settings.audio_root_url}/\n"
        f"Airflow logs     {settings.home / 'demo'}/\n"
        f"How to read it: tail fraction = share of clips broken (WER > 0.5, no audio, or past the "
        f"60 s cap); reg:imp = clips fine on {BASELINE} and broken on {CANDIDATE} : the reverse; "
        "p = exact McNemar on them (Holm over the night); confirmed = p < 1e-5 on one night, or "
        "a REGRESSED night that pooled with the one or two nights before gives p < 4.5e-5 "
        "and Δ ≥ 2 points, or the same-morning re-run's sign test over items gives p < .005 — "
        "only confirmed regressions post to Slack.\n"
        f"Next: `omni-tasks runs list`, `omni-tasks stats {keys[0] if keys else 'RUN_KEY'}`, "
        "`omni-tasks demo --nights 3`.",
    )


@app.command("nightly")
def nightly_cmd(
    config: Annotated[
        Path,
        typer.Option(
            "--config",
            exists=True,
            dir_okay=False,
            help="Deployment config (version 1: one series; version 2: lanes and series)",
        ),
    ],
    nightly: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Nightly date, YYYY-MM-DD (default: yesterday, UTC)"),
    ] = None,
    transcript: opt.TranscriptOpt = False,
) -> None:
    """Run one night of the nightly DAG on a deployment config, by Airflow in-process
    (`airflow dags test`, as `demo` does on its own config): every series on every branch,
    each decided against its own baseline; then each series' verdicts.

    Exit codes: 0 the night ran (whatever its verdicts), 1 the config or a task failed (each
    failed task is named, with its own log)."""
    from omni_tasks.deployment.night import resolve_night
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.jobs.demo import run_night
    from omni_tasks.store import views
    from omni_tasks.store.db import resolve_dsn
    from omni_tasks.trust.redact import redact_dsn

    conf = opt.run_options({opt.TRANSCRIPT: transcript})  # the form's fields: the options' names
    with opt.fails_on(ConfigError, what="deployment config"):
        fleet = resolve_night(conf, str(config.resolve()))
    night = parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date() - dt.timedelta(1)
    dsn = resolve_dsn()
    console.print(
        f"{len(fleet.series)} series on {len(fleet.lanes)} lane(s); results DB: {redact_dsn(dsn)}",
    )
    done = run_night(config.resolve(), night, conf, dsn, console.print)
    table = Table("series", "candidate vs baseline", "verdict", "reg:imp", title=f"nightly {night}")
    with opt.open_db() as conn:
        for p in fleet.series:
            decided = [
                d for d in views.gate_history(conn, p.series, night) if d.variant == p.variant
            ]
            if not decided:
                table.add_row(p.series.label, "", "not decided", "")
            for d in decided:
                table.add_row(
                    p.series.label,
                    f"{d.candidate_branch} vs {d.baseline_branch}",
                    d.verdict + (" (confirmed)" if d.confirmed else ""),
                    "" if d.regressed is None else f"{d.regressed}:{d.improved}",
                )
    console.print(table)
    if done.returncode != 0:
        fail(f"the {night} nightly failed:{done.failure()}")
