"""A multiple-choice run (Daily-Omni, Video-MME) against a serving model (or the local
simulator): each question sent as upstream's bench sends it (the family's suite builds it),
each answer read by upstream's rule, every question stored as an item with its outcome; a
failed request is a stored item with its status (infra)."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg

from omni_tasks.benchmarks.multiple_choice import ChoiceSuite, MultipleChoice, is_correct
from omni_tasks.names import check_name, printable
from omni_tasks.progress import progress_bar
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import ClipAudio, ClipGrade, RunSpec, Trigger
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

MAX_ANSWER_CHARS = 2000


@dataclass(frozen=True)
class ChoiceRequest:
    target: str  # a server's base URL, or simulator:PROFILE
    branch: str
    dataset: str = "demo"  # a root of the family's layout, or its shipped demo set
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
    only: tuple[str, ...] | None = None  # a subset of question keys (an A/B's repeats)


@dataclass(frozen=True)
class Answer:
    status: str  # "ok" or "request_failed"
    text: str | None
    error: str | None = None


def run_choices(
    conn: psycopg.Connection[Any],
    benchmark: MultipleChoice,
    req: ChoiceRequest,
    show_progress: bool,
) -> str:
    """Ask every question of `benchmark`, judge every answer, store the run; returns its run
    key."""
    suite = benchmark.suite
    if suite is None:
        raise ValueError(f"{benchmark.id} is not runnable here")
    check_name(req.branch, "branch")
    qs = suite.question_set(req.dataset)
    questions = qs.questions[: req.limit] if req.limit else qs.questions
    subset = ""
    if req.only is not None:
        wanted = set(req.only)
        questions = tuple(q for q in questions if q.key in wanted)
        subset = ":only" + hashlib.sha256(",".join(sorted(wanted)).encode()).hexdigest()[:12]
    with served_target(req.target) as url:
        answers = asyncio.run(_ask_all(url, suite, req, questions, show_progress))
    clips, grades = [], []
    for i, (q, a) in enumerate(zip(questions, answers, strict=True)):
        if a.status != "ok":
            clips.append(ClipAudio(q.key, i, q.answer, "request_failed", error_detail=a.error))
            continue
        predicted = suite.extract_choice(a.text)
        clips.append(ClipAudio(q.key, i, q.answer, "ok", thinker_text=a.text))
        grades.append(
            ClipGrade(
                q.key,
                "graded",
                hypothesis=predicted,
                incorrect=not is_correct(predicted, q.answer),
                breakdown=q.breakdown,
            )
        )
    failed = sum(c.synth_status != "ok" for c in clips)
    simulated = req.target.startswith("simulator:")
    spec = RunSpec(
        benchmark=benchmark.id,
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
        dataset_fingerprint=qs.fingerprint + (f":first{req.limit}" if req.limit else "") + subset,
        prompt_fingerprint=prompt_fingerprint(suite.system_text, suite.user_format),
        system_prompt=suite.system_text or None,
        seed=req.seed,
        airflow_dag_id=req.airflow_ids[0],
        airflow_run_id=req.airflow_ids[1],
    )
    saved = runs.save_run(conn, spec, clips, (suite.grader, grades), replace=True)
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
    url: str,
    suite: ChoiceSuite,
    req: ChoiceRequest,
    questions: tuple[Any, ...],
    show_progress: bool,
) -> list[Answer]:
    gate = asyncio.Semaphore(max(req.concurrency, 1))
    with progress_bar(show_progress) as bar:
        task = bar.add_task(f"asking {len(questions)} questions", total=len(questions))
        async with httpx.AsyncClient(timeout=req.timeout_s) as client:

            async def one(q: Any) -> Answer:
                async with gate:
                    # Building a body decodes media (Video-MME's frames): off the event loop.
                    try:
                        body = await asyncio.to_thread(suite.request_body, q, req.model, req.seed)
                    except (ValueError, OSError) as exc:  # PyAV's errors are both
                        detail = printable(f"media: {type(exc).__name__}: {exc}"[:300])
                        answer = Answer("request_failed", None, detail)
                    else:
                        answer = await post_json(client, url, body)
                bar.advance(task, failed=int(answer.status != "ok"))
                return answer

            return list(await asyncio.gather(*(one(q) for q in questions)))


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
