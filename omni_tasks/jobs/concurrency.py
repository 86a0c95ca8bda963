"""The concurrency experiment (`omni-tasks concurrency`): one series' items sent alone and
co-batched, same items, seeds and order, through the family's own runner; each level is a run
(trigger `concurrency`, variant `cN`) and each item is compared across levels
(analysis/concurrency.py). Any family with the `concurrency` capability."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from omni_tasks import benchmarks
from omni_tasks.analysis.concurrency import (
    ConcurrencyResult,
    VoiceLabel,
    compare_levels,
    voice_check,
)
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.benchmarks.request import BenchError, RunRequest
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.jobs.statistics import load_graded_run
from omni_tasks.records import ClipRecord
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.store import alerts as events
from omni_tasks.trust.names import check_name

MAX_LEVEL = 256


class ConcurrencyError(ValueError):
    """An experiment that cannot run; the message names the field."""


@dataclass(frozen=True)
class ConcurrencyRequest:
    benchmark: str
    target: str  # simulator:PROFILE or a serving vLLM-Omni's URL
    levels: tuple[int, ...] = (1, 8)  # the first is the alone level every other is paired with
    branch: str = "main"
    commit: str | None = None
    seed: int = 42
    dataset: str = "demo"
    limit: int | None = None
    # The family's run options (seed-TTS's `voices`: reference voices mixed round-robin over
    # the items, each output's voice labelled by a proxy embedder).
    options: Mapping[str, object] = field(default_factory=dict)
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE
    control: bool = False  # rerun the alone level: is the server deterministic at all?
    grader: dict[str, Any] = field(default_factory=dict)
    nightly: dt.date = field(default_factory=lambda: dt.datetime.now(dt.UTC).date())
    experiment_id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    def __post_init__(self) -> None:
        check_name(self.branch, "branch")
        check_name(self.experiment_id, "experiment id")
        if len(self.levels) < 2 or self.levels[0] != 1:
            raise ConcurrencyError(
                f"levels: {list(self.levels)}: give 1 first (each item sent alone), then the "
                "levels to compare with it, e.g. 1,8"
            )
        distinct = len(set(self.levels)) == len(self.levels)
        if not distinct or any(not 1 <= c <= MAX_LEVEL for c in self.levels):
            raise ConcurrencyError(
                f"levels: {list(self.levels)}: distinct concurrencies from 1 to {MAX_LEVEL}"
            )
        # Asked before any request is sent: a family without the capability never runs.
        bench = benchmarks.get(self.benchmark)
        bench.require("concurrency", "tested for concurrency invariance")
        try:
            self.request(1, "c1")
        except BenchError as exc:
            raise ConcurrencyError(str(exc)) from None

    @property
    def series(self) -> Series:
        return Series(self.benchmark, self.model, self.lane)

    def request(self, level: int, variant: str) -> RunRequest:
        """One level's run, as the family builds it."""
        generic = RunRequest(
            target=self.target,
            branch=self.branch,
            dataset=self.dataset,
            commit=self.commit,
            seed=self.seed,
            limit=self.limit,
            nightly=self.nightly,
            trigger="concurrency",
            variant=variant,
            concurrency=level,
            benchmark=self.benchmark,
            model=self.model,
            lane=self.lane,
            run_key=f"{self.series.slug}:{self.nightly}:{self.branch}:conc-{self.experiment_id}:"
            + variant,
        )
        return benchmarks.get(self.benchmark).request(generic, self.options)


def run_concurrency(
    conn: psycopg.Connection[Any],
    req: ConcurrencyRequest,
    policy: GatePolicy,
    *,
    say: Callable[[str], None] = lambda _line: None,
) -> ConcurrencyResult:
    """Run every level, compare each with the alone level, and record the verdict (an event
    on the dashboards)."""
    tau = policy.for_benchmark(req.benchmark).primary_tau
    runs: dict[str, str] = {}
    for c in req.levels:
        say(f"c = {c}: {req.benchmark} on {req.target}")
        runs[f"c{c}"] = _run(conn, req, c, f"c{c}")
    if req.control:
        say("c = 1 again: the control")
        runs["c1-control"] = _run(conn, req, 1, "c1-control")
    clips = {k: load_graded_run(conn, v).clips for k, v in runs.items()}
    alone, control = clips["c1"], clips.get("c1-control")
    labels = voice_labels(req, clips, say)
    comparisons = []
    for c in req.levels[1:]:
        batched = clips[f"c{c}"]
        voice = None
        if labels:
            heard = {a.utt_id: a.audio_uri for a in alone}
            audio = {b.utt_id: (heard.get(b.utt_id), b.audio_uri) for b in batched}
            voice = voice_check(labels["c1"], labels[f"c{c}"], audio)
        comparisons.append(compare_levels(alone, batched, tau, (1, c), control, voice))
    verdict = "BATCH-VARIANT" if any(c.verdict == "BATCH-VARIANT" for c in comparisons) else "SAME"
    result = ConcurrencyResult(req.experiment_id, verdict, runs, tuple(comparisons))
    events.insert_event(
        conn,
        time=dt.datetime.now(dt.UTC),
        kind="concurrency",
        benchmark=req.benchmark,
        branch=req.branch,
        variant=None,
        text=f"{req.series.label} {req.branch}: " + "; ".join(c.summary for c in comparisons),
        tags=["concurrency", verdict],
        details={"experiment_id": req.experiment_id, "runs": runs, "verdict": verdict},
        dedup_key=f"concurrency|{req.experiment_id}",
    )
    conn.commit()
    return result


def voice_labels(
    req: ConcurrencyRequest, levels: dict[str, list[ClipRecord]], say: Callable[[str], None]
) -> dict[str, dict[str, VoiceLabel]]:
    """Each level's outputs labelled with the reference voice they sound like (none unless
    the request mixed voices)."""
    own, voices = benchmarks.get(req.benchmark).reference_voices(req.request(1, "c1"))
    if not voices:
        return {}
    from omni_tasks.evidence.audio import AudioError, decode_wav, load_audio_bytes
    from omni_tasks.grading import speaker

    references = {v: speaker.embed(*decode_wav(wav.read_bytes())) for v, wav in voices.items()}
    out: dict[str, dict[str, VoiceLabel]] = {}
    for level, clips in levels.items():
        say(f"{level}: labelling voices ({speaker.PROXY})")
        out[level] = {}
        for c in clips:
            if c.audio_uri is None or c.utt_id not in own:
                continue
            try:
                samples, rate = decode_wav(load_audio_bytes(c.audio_uri), c.audio_uri)
            except AudioError:
                continue  # no audio to label: the item is left out of the voice check
            out[level][c.utt_id] = speaker.label(
                speaker.embed(samples, rate), references, own[c.utt_id]
            )
    return out


def _run(conn: psycopg.Connection[Any], req: ConcurrencyRequest, level: int, variant: str) -> str:
    key = benchmarks.get(req.benchmark).run(conn, req.request(level, variant), req.grader)
    conn.commit()
    return key


def nightly_concurrency(
    conn: psycopg.Connection[Any],
    series: list[NightlyParams],
    nightly: dt.date,
    policy: GatePolicy,
    *,
    airflow_run: str | None = None,
) -> list[str]:
    """The night's concurrency check of every series (and variant) whose config asks for one:
    each branch's target at the configured levels. A BATCH-VARIANT branch is one Slack message
    (its own key space: it never opens a regression alert) naming the changed items and the
    report that plays both sides. Returns one summary line per branch."""
    from omni_tasks.alerts import blocks
    from omni_tasks.reports.concurrency import write_report

    lines = []
    for params in series:
        if not params.concurrency:
            continue
        s, n = params.series, params.concurrency_voices
        voices = {"voices": n} if n > 1 else {}  # an option of speech-out families only
        for branch in params.branches:
            target = params.target_url(branch)
            req = ConcurrencyRequest(
                benchmark=s.benchmark,
                target=target,
                levels=tuple(params.concurrency),
                branch=branch,
                commit=params.commits.get(branch),
                seed=params.seeds[0],
                dataset=params.dataset,
                limit=params.limit,
                options={**params.options, **voices},
                model=s.model,
                lane=s.lane,
                grader=params.grader,
                nightly=nightly,
                experiment_id=_night_id(s, params.variant, branch, nightly, airflow_run),
            )
            result = run_concurrency(conn, req, policy)
            title = f"Concurrency: {s.label} {branch} ({params.variant}) — {nightly}"
            page = write_report(result, title, target.startswith("simulator:"))
            lines += [f"{s.label} {branch}: {c.summary}" for c in result.comparisons]
            if result.verdict != "BATCH-VARIANT":
                continue
            said = [c.summary for c in result.comparisons]
            said.append(
                f"Rerun: omni-tasks concurrency --benchmark {s.benchmark} --model {s.model} "
                f"--lane {s.lane} --target {target} --levels "
                + ",".join(map(str, params.concurrency))
            )
            said.append(f"Both sides of every item: {page}")
            for c in result.comparisons:
                said += [
                    f"{f.item}: alone {f.alone!r} → co-batched {f.batched!r}" for f in c.flipped
                ]
                said += [
                    f"{leak.item}: in {leak.heard_as}'s voice co-batched ({leak.margin:+.2f})"
                    for leak in (c.voice.leaks if c.voice else ())
                ]
            message = blocks.verdict_message(title, "BATCH-VARIANT", said, {})
            key = f"concurrency|{s.key}|{params.variant}|{branch}|{nightly}"
            events.enqueue(conn, key, None, "post", {"op": "post", **message.to_payload()})
            conn.commit()
    return lines


def _night_id(
    s: Series, variant: str, branch: str, nightly: dt.date, airflow_run: str | None
) -> str:
    """One experiment per series, variant, branch and night (a retried task re-runs the same
    runs, replaced, rather than adding a second experiment)."""
    import hashlib

    what = f"{s.key}|{variant}|{branch}|{nightly}|{airflow_run or ''}"
    return "n" + hashlib.sha256(what.encode()).hexdigest()[:9]
