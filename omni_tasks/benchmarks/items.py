"""The item runner every item-suite family shares (multiple choice, ASR, a new family): load
the items, send each as the family builds its request (bounded reads, bounded concurrency,
progress), judge each answer by the family's rule, store every item with its outcome (a
failed request is a stored item with its status, infra). Seed-TTS streams audio and grades
it while it synthesizes: its own runner (seed_tts/run.py) behind the same `Benchmark.run`."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg

from omni_tasks.benchmarks import identity
from omni_tasks.benchmarks.request import RunRequest
from omni_tasks.benchmarks.suite import ItemSuite, subset_suffix
from omni_tasks.contracts import JsonObject
from omni_tasks.progress import progress_bar
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import ClipAudio
from omni_tasks.store import runs
from omni_tasks.synthesis.bounded import (
    MAX_ERROR_BODY,
    MAX_JSON_BODY,
    ResponseRefused,
    parse_json,
    read_body,
    sse_events,
)
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from omni_tasks.trust.names import printable

MAX_ANSWER_CHARS = 2000
ANSWER_TIMEOUT_S = 300.0  # an answer is short text: one stuck longer is infra


@dataclass(frozen=True)
class Answer:
    status: str  # "ok" or "request_failed"
    text: str | None
    error: str | None = None


def chosen(items: Sequence[Any], req: RunRequest) -> tuple[tuple[Any, ...], str]:
    """The items a request asks for (its first `limit`, or its `only` keys) and the suffix
    that tells the subset apart in the run's dataset fingerprint."""
    picked = tuple(items[: req.limit] if req.limit else items)
    if req.only is not None:
        wanted = set(req.only)
        picked = tuple(i for i in picked if i.key in wanted)
    return picked, subset_suffix(req.limit, req.only)


def run_items(
    conn: psycopg.Connection[Any],
    benchmark_id: str,
    suite: ItemSuite,
    req: RunRequest,
    *,
    show_progress: bool = False,
) -> str:
    """Ask every chosen item of `req.dataset` at `req.target`, judge every answer, store the
    run; returns its run key. A stored run under the key with other inputs is refused."""
    loaded = suite.load(req.dataset)
    items, subset = chosen(loaded.items, req)
    system_text, asked = suite.prompt(req)
    spec = req.spec(
        benchmark_id,
        len(items),
        {"dataset": req.dataset, **asked},
        stack={**req.stack, "simulated": req.simulator_profile is not None},
        execution={"client_concurrency": req.concurrency},
        dataset_fingerprint=loaded.fingerprint + subset,
        prompt_fingerprint=prompt_fingerprint(system_text, suite.user_format),
        system_prompt=system_text or None,
        seed=req.seed,
    )
    key = req.run_key or runs.derive_run_key(spec)
    existing = identity.stored_status(conn, key, spec)
    if existing is not None and existing.status == "complete":
        return key  # a retried task converges: a complete run is not asked again
    with served_target(req, suite) as url:
        answers = asyncio.run(_ask_all(url, suite, req, items, show_progress))
    clips, grades = [], []
    for i, (item, a) in enumerate(zip(items, answers, strict=True)):
        ref = suite.reference(item)
        if a.status != "ok" or a.text is None:
            clips.append(ClipAudio(item.key, i, ref, "request_failed", error_detail=a.error))
            continue
        clips.append(ClipAudio(item.key, i, ref, "ok", thinker_text=a.text))
        grades.append(suite.judge(item, a.text))
    failed = sum(c.synth_status != "ok" for c in clips)
    spec = dataclasses.replace(spec, status="complete" if failed < len(clips) else "failed")
    runs.save_run(conn, spec, clips, (suite.grader, grades), run_key=key, replace=True)
    conn.commit()
    return key


@contextmanager
def served_target(req: RunRequest, suite: ItemSuite) -> Iterator[str]:
    """The base URL the items are sent to: a URL as given, or a simulator started for the run
    that answers the family's items (its profile the request's: commit-history's by the
    commit)."""
    profile = req.simulator_profile
    if profile is not None:
        sim = SimulatorConfig(profile=profile, answerers=(suite.simulate,))
        with running_simulator(sim) as url:
            yield url
    else:
        yield req.target.rstrip("/")


async def _ask_all(
    url: str,
    suite: ItemSuite,
    req: RunRequest,
    items: tuple[Any, ...],
    show_progress: bool,
) -> list[Answer]:
    gate = asyncio.Semaphore(req.concurrency)
    timeout = min(req.request_timeout, ANSWER_TIMEOUT_S)
    with progress_bar(show_progress) as bar:
        task = bar.add_task(f"asking {len(items)} items", total=len(items))
        async with httpx.AsyncClient(timeout=timeout) as client:

            async def one(item: Any) -> Answer:
                async with gate:
                    # Building a body decodes media (Video-MME's frames): off the event loop.
                    try:
                        body = await asyncio.to_thread(suite.request_body, item, req)
                    except (ValueError, OSError) as exc:  # PyAV's errors are both
                        detail = printable(f"media: {type(exc).__name__}: {exc}"[:300])
                        answer = Answer("request_failed", None, detail)
                    else:
                        answer = await post_json(client, url, body)
                bar.advance(task, failed=int(answer.status != "ok"))
                return answer

            return list(await asyncio.gather(*(one(i) for i in items)))


async def post_json(client: httpx.AsyncClient, url: str, body: JsonObject) -> Answer:
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
    async for data in sse_events(r):
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
