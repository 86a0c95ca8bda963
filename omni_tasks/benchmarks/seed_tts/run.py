"""`omni-tasks bench`: synthesize a dataset against a target, store the run, grade it.

A target is a URL already serving (`http://…`), or `simulator:PROFILE` (started in-process on
loopback). A run that is already stored is not synthesized again (a retried task converges);
its grading is completed if missing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from omni_tasks.benchmarks import identity
from omni_tasks.benchmarks.outcome import RunOutcome, run_outcome
from omni_tasks.benchmarks.request import BenchError, RunRequest
from omni_tasks.benchmarks.seed_tts.pipeline import clip_audio, run_pipelined, run_status
from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.dataset import Dataset, Utterance, load_dataset
from omni_tasks.grading.asr import LoadedGrader
from omni_tasks.grading.grade import grade_run
from omni_tasks.harness import client_rules
from omni_tasks.progress import progress_bar
from omni_tasks.records import Execution, RunSpec
from omni_tasks.store import runs
from omni_tasks.synthesis import protocol
from omni_tasks.synthesis.client import ENDPOINTS, ClientConfig, ClipResult, synthesize_all
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from omni_tasks.synthesis.stages import (
    STAGE_NAMES,
    DeployConfigError,
    StageDefaults,
    effective,
    engine_args,
    merge_deploy,
    nightly_deploy,
)
from omni_tasks.synthesis.transcript import TRANSCRIPT_GRADER, transcript_grades
from omni_tasks.synthesis.voices import MAX_VOICES, voice_mix


@dataclass(frozen=True)
class BenchRequest(RunRequest):
    """A seed-TTS run: the generic request, with the harness's prompt template, transcript
    mode (the simulator says what would be heard, no audio), the audio cap and the voices."""

    prompt_template: str = "seed-tts-default"
    transcript_mode: bool = False
    audio_cap_s: float = 60.0
    # Reference voices mixed round-robin over the items (synthesis/voices.py): 1, each item's
    # own prompt; k > 1, the first k prompts re-voiced (the concurrency experiment's voice check).
    voices: int = 1
    # chat: the omni model's /v1/chat/completions; audio-speech: a TTS model's /v1/audio/speech
    # (synthesis/speech.py), a protocol of its own: the run's variant names it, as an imported
    # night's does (importers/buildkite.py).
    endpoint: str = "chat"
    # The target's stage defaults, read from its deploy config: needed to send the run seed to
    # every stage; unknown for a target without one (then no seed is sent).
    stage_defaults: StageDefaults | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.audio_cap_s > 0:
            raise BenchError("the audio cap must be a positive number of seconds")
        if not 1 <= self.voices <= MAX_VOICES:
            raise BenchError(f"voices must be from 1 to {MAX_VOICES}, got {self.voices}")
        if self.voices > 1 and self.transcript_mode:
            raise BenchError("voices: transcript mode has no speech output to label")
        self._check_endpoint()
        try:
            stages = StageDefaults.load(self.deploy_config) if self.deploy_config else None
        except DeployConfigError as exc:
            raise BenchError(str(exc)) from None
        object.__setattr__(self, "stage_defaults", stages)

    def _check_endpoint(self) -> None:
        if self.endpoint not in ENDPOINTS:
            raise BenchError(f"endpoint {self.endpoint!r}: one of {', '.join(ENDPOINTS)}")
        if self.endpoint == "chat":
            return
        if self.transcript_mode:
            raise BenchError(f"{self.endpoint}: transcript mode answers chat completions only")
        if self.variant not in ("default", self.endpoint):
            raise BenchError(f"variant {self.variant}: an {self.endpoint} run's variant is that")
        object.__setattr__(self, "variant", self.endpoint)

    @classmethod
    def of(cls, req: RunRequest, **options: Any) -> BenchRequest:
        """A generic request as seed-TTS's, with its own options (the rest at their defaults)."""
        generic = {f.name: getattr(req, f.name) for f in dataclasses.fields(RunRequest)}
        return cls(**generic, **options)

    @property
    def audio_cap(self) -> float:
        """Audio read per clip: a run on a harness version hears what the harness hears (it has
        no cap, only its request timeout), so its cap is never below the timeout, up to 15 min
        of audio (memory: no TTS answer is longer; a longer one is kept as that much)."""
        if self.harness_version is None:
            return self.audio_cap_s
        return max(self.audio_cap_s, min(self.request_timeout, 900.0))

    @property
    def seed_sent(self) -> int | None:
        """The seed that reaches the model: none without the target's stage defaults, nor
        over the speech endpoint (its body carries none)."""
        return self.seed if self.stages is not None and self.endpoint == "chat" else None

    @property
    def stages(self) -> StageDefaults | None:
        """The stage defaults requests are built against (the simulator's are known: the
        nightly's deploy with the run's deploy overrides merged in)."""
        if self.stage_defaults is None and self.simulator_profile is not None:
            if not self.overrides.get("stages"):
                return StageDefaults.nightly()
            doc = self.simulated_deploy
            return StageDefaults.from_deploy(doc, "nightly deploy + the run's deploy overrides")
        return self.stage_defaults

    @property
    def simulated_deploy(self) -> JsonObject:
        """The deploy the simulator serves: the nightly's, with the run's deploy overrides."""
        try:
            return merge_deploy(nightly_deploy(), self.overrides)
        except DeployConfigError as exc:
            raise BenchError(str(exc)) from None


@dataclass(frozen=True)
class BenchOutcome(RunOutcome):
    synthesized: bool = True  # False: the run was stored already (and is not synthesized again)


@contextmanager
def target_url(req: BenchRequest) -> Iterator[str]:
    profile = req.simulator_profile
    if profile is not None:
        sim = SimulatorConfig(
            profile,
            transcript=req.transcript_mode,
            stage_defaults=req.stages or StageDefaults.nightly(),
            engine_args=engine_args(req.simulated_deploy),
        )
        with running_simulator(sim) as url:
            yield url
    elif req.target.startswith(("http://", "https://")):
        # A server that does not answer is benchmarked all the same: every request fails and
        # is stored so (an INFRA night, not a task error); one that answers must be a simulator.
        if req.transcript_mode and _is_simulator(req.target) is False:
            raise BenchError(
                f"--transcript-mode needs a simulator: {req.target} does not serve one "
                "(start `omni-tasks simulator serve --transcript-mode`, or use simulator:PROFILE)"
            )
        yield req.target
    else:
        raise BenchError(
            f"target {req.target!r}: expected http(s)://HOST:PORT or simulator:PROFILE"
        )


def _is_simulator(url: str) -> bool | None:
    """An already-running simulator (it names itself in /v1/models); None when nothing
    answers there."""
    import httpx

    from omni_tasks.synthesis.bounded import ResponseRefused, parse_json, read_body_sync

    try:
        with httpx.stream("GET", url.rstrip("/") + "/v1/models", timeout=10) as r:
            doc = parse_json(read_body_sync(r, 1024 * 1024), "/v1/models")
    except httpx.TransportError:
        return None
    except (httpx.HTTPError, ResponseRefused):
        return False
    models = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(models, list):
        return False
    return any(
        isinstance(m, dict) and str(m.get("id", "")).startswith("simulator:") for m in models
    )


def stage_settings(req: BenchRequest) -> JsonObject:
    """What the run's requests make each stage do, as the server applies them: recorded on the
    run so a comparison can tell two runs' stage settings apart."""
    if req.endpoint != "chat":
        note = "the speech endpoint takes no per-stage settings: no seed is sent"
        return {"known": False, "seed_sent": False, "note": note}
    template = protocol.prompt_template(req.prompt_template)
    body = protocol.request_body("x", template, seed=req.seed, stages=req.stages)
    if req.stages is None:
        note = "stage defaults unknown (no deploy config): the run seed was not sent"
        return {"known": False, "seed_sent": False, "note": note}
    settings = effective(body, req.stages)
    return {
        "known": True,
        "source": req.stages.source,
        "seed_sent": req.seed is not None,
        "effective": dict(zip(STAGE_NAMES, settings, strict=True)),
    }


def _stage_fingerprint(settings: JsonObject) -> str | None:
    """The stage settings without the seed (seeds are a run dimension: run groups differ in
    it), hashed; None when unknown."""
    effective = settings.get("effective")
    if not settings.get("known") or not isinstance(effective, dict):
        return None
    unseeded = {
        stage: {field: v for field, v in values.items() if field != "seed"}
        for stage, values in effective.items()
        if isinstance(values, dict)
    }
    return hashlib.sha256(json.dumps(unseeded, sort_keys=True).encode()).hexdigest()[:16]


def run_spec(req: BenchRequest, ds: Dataset, n: int) -> RunSpec:
    template = protocol.prompt_template(req.prompt_template)
    stages = stage_settings(req)
    execution: Execution = {
        "gpu_class": req.gpu_class or ("simulator" if req.simulator_profile else None),
        "client_concurrency": req.concurrency,
        "server_max_num_seqs": req.overrides.get("max_num_seqs"),
        "request_template": req.prompt_template,
        "audio_cap_s": req.audio_cap,
        "client_retry": client_rules(req.harness_version).retry.describe(),
        "seed_sent": req.seed_sent is not None,
        "stage_settings": _stage_fingerprint(stages),
    }
    stack = dict(req.stack)
    if req.simulator_profile:
        stack.update(simulator=f"simulator:{req.simulator_profile}", simulated=True)
    fingerprint = subset_fingerprint(ds, n, req.only)
    # A locale is its own benchmark: the dataset's decides, and a named one must agree.
    benchmark = req.benchmark or f"seed_tts_{ds.lang}"
    if benchmark != f"seed_tts_{ds.lang}":
        raise BenchError(
            f"benchmark {benchmark} does not fit {req.dataset}, a seed-tts-eval {ds.lang} set "
            f"(its benchmark is seed_tts_{ds.lang})"
        )
    return req.spec(
        benchmark,
        n,
        {
            "dataset": ds.name,
            "prompt_template": req.prompt_template,
            "transcript_mode": req.transcript_mode,
            "timeout_s": req.request_timeout,
            "overrides": req.overrides,
            "stage_settings": stages,
            # What the run was asked for; `seed` below is what reached the model (none when no
            # seed was sent: two such runs are the same sampling, whatever was asked).
            "seed_requested": req.seed,
            # Only a speech run names its endpoint (chat runs stored before it read the same).
            **({"endpoint": req.endpoint} if req.endpoint != "chat" else {}),
        },
        stack=stack,
        execution=execution,
        execution_fingerprint=hashlib.sha256(
            json.dumps(execution, sort_keys=True).encode()
        ).hexdigest(),
        dataset_fingerprint=fingerprint,
        prompt_fingerprint=template.fingerprint,
        system_prompt=template.system_prompt,
        seed=req.seed_sent,
    )


def subset_fingerprint(ds: Dataset, n: int, only: tuple[str, ...] | None = None) -> str:
    """A run's dataset fingerprint: the dataset's, marked with the subset it ran (`only`'s
    clips, or the first `n`)."""
    if only is not None:
        subset = hashlib.sha256(",".join(sorted(only)).encode()).hexdigest()[:12]
        return f"{ds.fingerprint}:subset{subset}"
    return ds.fingerprint if n == len(ds.utterances) else f"{ds.fingerprint}:first{n}"


def utterances_of(req: BenchRequest, ds: Dataset) -> tuple[Utterance, ...]:
    if req.only is not None:
        wanted = set(req.only)
        return tuple(u for u in ds.utterances if u.utt_id in wanted)
    return ds.limit(req.limit)


def client_config(req: BenchRequest, url: str, lang: str) -> ClientConfig:
    return ClientConfig(
        url,
        protocol.prompt_template(req.prompt_template),
        model=req.model,
        seed=req.seed,
        stages=req.stages,
        concurrency=req.concurrency,
        timeout_s=req.request_timeout,
        audio_cap_s=req.audio_cap,
        rules=client_rules(req.harness_version),
        endpoint="audio-speech" if req.endpoint == "audio-speech" else "chat",
        lang=lang,
    )


def synthesize(req: BenchRequest, ds: Dataset, show_progress: bool = True) -> list[ClipResult]:
    utterances = utterances_of(req, ds)
    with target_url(req) as url, progress_bar(show_progress) as bar:
        task = bar.add_task(f"synthesizing {req.branch}", total=len(utterances))
        cfg = client_config(req, url, ds.lang)
        return asyncio.run(
            synthesize_all(
                utterances, cfg, on_done=lambda r: bar.advance(task, failed=int(r.status != "ok"))
            )
        )


def _pipelined(
    conn: psycopg.Connection[Any],
    req: BenchRequest,
    ds: Dataset,
    key: str,
    spec: RunSpec,
    grader: LoadedGrader,
    show_progress: bool,
) -> None:
    """Synthesize and grade at once (seed_tts/pipeline.py)."""
    utterances = utterances_of(req, ds)
    with target_url(req) as url, progress_bar(show_progress) as bar:
        tasks = {
            "synthesized": bar.add_task(f"synthesizing {req.branch}", total=len(utterances)),
            "graded": bar.add_task(f"grading {req.branch}", total=None),
        }
        run_pipelined(
            conn,
            key,
            spec,
            utterances,
            client_config(req, url, ds.lang),
            grader,
            on_clip=lambda what: bar.advance(tasks[what]),
        )


def dataset_of(req: BenchRequest) -> Dataset:
    """The request's dataset, its references mixed over `voices` when asked."""
    ds = load_dataset(req.dataset)
    if req.voices == 1:
        return ds
    try:
        return voice_mix(ds, req.voices, get_settings().cache_dir / "voices")
    except ValueError as exc:
        raise BenchError(str(exc)) from None


def run_benchmark(
    conn: psycopg.Connection[Any],
    req: BenchRequest,
    grader: LoadedGrader | None,
    *,
    show_progress: bool = True,
) -> BenchOutcome:
    """Synthesize (unless stored) and grade (unless graded), then summarize. Audio runs are
    pipelined: clips are graded while the rest synthesize (seed_tts/pipeline.py)."""
    ds = dataset_of(req)
    n = len(utterances_of(req, ds))
    spec = run_spec(req, ds, n)
    key = req.run_key or runs.derive_run_key(spec)
    existing = identity.stored_status(conn, key, spec, {"transcript mode": "transcript_mode"})
    # A complete run is never synthesized again; a partial or failed one (server died, infra
    # errors) is redone and replaced, so re-running a failed task converges to a clean run; a
    # `running` one (the task crashed) is resumed where it stopped.
    synthesized = existing is None or existing.status in ("partial", "failed", "running")
    if req.transcript_mode:
        if synthesized:
            results = synthesize(req, ds, show_progress)
            clips = [clip_audio(key, i, r) for i, r in enumerate(results)]
            spec = dataclasses.replace(spec, status=run_status(clips))
            grades = transcript_grades(results, clips, spec.system_prompt, ds.lang)
            grading = (TRANSCRIPT_GRADER, grades)
            runs.save_run(conn, spec, clips, grading, run_key=key, replace=existing is not None)
        grader_id = TRANSCRIPT_GRADER.grader_id
    else:
        if grader is None:
            raise BenchError("a grader is needed for audio runs")
        grader_id = grader.grader_id
        if synthesized:
            _pipelined(conn, req, ds, key, spec, grader, show_progress)
        else:
            grade_run(conn, key, grader, show_progress=show_progress)
    outcome = run_outcome(conn, key, grader_id)
    return BenchOutcome(**dataclasses.asdict(outcome), synthesized=synthesized)
