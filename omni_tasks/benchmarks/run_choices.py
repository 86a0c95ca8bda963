"""A Daily-Omni run against a serving model (or the local simulator): each question sent as
upstream's bench sends it, each answer read by upstream's rule, every question stored as an
item with its outcome; a failed request is a stored item with its status (infra)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from omni_tasks.benchmarks import daily_omni
from omni_tasks.benchmarks.daily_omni import Question, QuestionSet
from omni_tasks.config import get_settings
from omni_tasks.names import check_name, printable
from omni_tasks.progress import progress_bar
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import ClipAudio, ClipGrade, Grader, RunSpec, Trigger
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL
from omni_tasks.store import runs
from omni_tasks.synthesis.bounded import (
    MAX_ERROR_BODY,
    MAX_JSON_BODY,
    ResponseRefused,
    parse_json,
    read_body,
    sse_lines,
)
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator

GRADER = Grader(
    "choice:daily-omni-official",
    {"backend": "answer letter", "rule": "upstream extract_choice_letter_official"},
)
MAX_ANSWER_CHARS = 2000
USER_FORMAT = daily_omni.user_prompt("{question}", ("{choices}",))


@dataclass(frozen=True)
class ChoiceRequest:
    target: str  # a server's base URL, or simulator:PROFILE
    branch: str
    dataset: str = "demo"  # a Daily-Omni root (qa.json + Videos/), or the shipped demo set
    commit: str | None = None
    seed: int | None = None
    nightly: dt.date | None = None
    concurrency: int = 8
    limit: int | None = None
    timeout_s: float = 120.0
    trigger: Trigger = "manual"
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE
    airflow_ids: tuple[str | None, str | None] = (None, None)


@dataclass(frozen=True)
class Answer:
    status: str  # "ok" or "request_failed"
    text: str | None
    error: str | None = None


def question_set(dataset: str) -> QuestionSet:
    root = (
        daily_omni.ensure_demo_set(get_settings().cache_dir) if dataset == "demo" else Path(dataset)
    )
    return daily_omni.load_questions(root)


def run_choices(conn: psycopg.Connection[Any], req: ChoiceRequest, show_progress: bool) -> str:
    """Ask every question, judge every answer, store the run; returns its run key."""
    check_name(req.branch, "branch")
    qs = question_set(req.dataset)
    questions = qs.questions[: req.limit] if req.limit else qs.questions
    with served_target(req.target) as url:
        answers = asyncio.run(_ask_all(url, req, questions, show_progress))
    clips, grades = [], []
    for i, (q, a) in enumerate(zip(questions, answers, strict=True)):
        if a.status != "ok":
            clips.append(ClipAudio(q.key, i, q.answer, "request_failed", error_detail=a.error))
            continue
        predicted = daily_omni.extract_choice(a.text)
        clips.append(ClipAudio(q.key, i, q.answer, "ok", thinker_text=a.text))
        grades.append(
            ClipGrade(
                q.key,
                "graded",
                hypothesis=predicted,
                incorrect=not daily_omni.is_correct(predicted, q.answer),
                breakdown=q.breakdown,
            )
        )
    failed = sum(c.synth_status != "ok" for c in clips)
    simulated = req.target.startswith("simulator:")
    spec = RunSpec(
        benchmark=daily_omni.DAILY_OMNI.id,
        model=req.model,
        lane=req.lane,
        nightly=req.nightly or dt.datetime.now(dt.UTC).date(),
        branch=req.branch,
        trigger=req.trigger,
        status="complete" if failed < len(clips) else "failed",
        n_expected=len(questions),
        commit_sha=req.commit,
        config={"target": req.target, "dataset": req.dataset, "model": req.model},
        stack={"simulated": simulated},
        execution={"client_concurrency": req.concurrency},
        dataset_fingerprint=qs.fingerprint + (f":first{req.limit}" if req.limit else ""),
        prompt_fingerprint=prompt_fingerprint(daily_omni.SYSTEM_TEXT, USER_FORMAT),
        system_prompt=daily_omni.SYSTEM_TEXT,
        seed=req.seed,
        airflow_dag_id=req.airflow_ids[0],
        airflow_run_id=req.airflow_ids[1],
    )
    saved = runs.save_run(conn, spec, clips, (GRADER, grades), replace=True)
    conn.commit()
    return saved.run_key


@contextmanager
def served_target(target: str) -> Iterator[str]:
    """The base URL of `target`: a URL as given, or a simulator started for the run."""
    if target.startswith("simulator:"):
        with running_simulator(SimulatorConfig(profile=target.split(":", 1)[1])) as url:
            yield url
    else:
        yield target.rstrip("/")


async def _ask_all(
    url: str, req: ChoiceRequest, questions: tuple[Question, ...], show_progress: bool
) -> list[Answer]:
    gate = asyncio.Semaphore(max(req.concurrency, 1))
    with progress_bar(show_progress) as bar:
        task = bar.add_task(f"asking {len(questions)} questions", total=len(questions))
        async with httpx.AsyncClient(timeout=req.timeout_s) as client:

            async def one(q: Question) -> Answer:
                async with gate:
                    answer = await _ask(client, url, req, q)
                bar.advance(task)
                return answer

            return list(await asyncio.gather(*(one(q) for q in questions)))


async def _ask(client: httpx.AsyncClient, url: str, req: ChoiceRequest, q: Question) -> Answer:
    return await post_json(client, url, daily_omni.request_body(q, req.model, req.seed))


async def post_json(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Answer:
    """One chat completion, streamed (SSE) when the body asks for it: its text answer, or a
    failed request with why (every read bounded; the server's text made printable)."""
    streamed = bool(body.get("stream"))
    try:
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                said = await read_body(r, MAX_ERROR_BODY, keep_start=True)
                shown = printable(said.decode("utf-8", "replace")[:300])
                return Answer("request_failed", None, f"HTTP {r.status_code}: {shown}")
            if streamed:
                text = await _streamed_text(r)
            else:
                text = _content(parse_json(await read_body(r, MAX_JSON_BODY), "answer"), "message")
    except (httpx.HTTPError, ResponseRefused) as exc:
        return Answer("request_failed", None, printable(f"{type(exc).__name__}: {exc}"[:300]))
    if text is None:
        part = "delta" if streamed else "message"
        return Answer("request_failed", None, f"the response has no choices[0].{part}.content text")
    return Answer("ok", printable(text[:MAX_ANSWER_CHARS]))


async def _streamed_text(r: httpx.Response) -> str | None:
    """The text of an SSE chat-completion stream (its content deltas, joined); None when no
    chunk carried text. A chunk that is not JSON refuses the response."""
    parts: list[str] = []
    async for line in sse_lines(r):
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        content = _content(parse_json(data, "stream chunk"), "delta")
        if content is not None:
            parts.append(content)
            if sum(map(len, parts)) > MAX_ANSWER_CHARS:
                break
    return "".join(parts) if parts else None


def _content(doc: Any, part: str) -> str | None:
    """choices[0].PART.content (`message`, or a stream chunk's `delta`) when the response has
    that shape and it is text."""
    choices = doc.get("choices") if isinstance(doc, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get(part) if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None
