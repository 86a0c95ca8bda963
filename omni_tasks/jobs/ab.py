"""An on-demand A/B of two commits on one series (`omni-tasks ab`, the omni_ab DAG): base and
head run on the same lane, interleaved, round after round, until the sequential rule
(ab/sequential.py) decides or the budget ends; the verdict goes to a GitHub check run on the
head commit and, when Slack is configured, to Slack in its own key space."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from omni_tasks import benchmarks
from omni_tasks.ab import checks
from omni_tasks.ab.request import ABLook, ABRequest, ABResult
from omni_tasks.ab.sequential import clips_needed, first_look, plan_repeats, repeat_look
from omni_tasks.ab.summary import summary_markdown, worst_clips_markdown
from omni_tasks.alerts.titles import series_name
from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.jobs.statistics import compare, load_graded_run
from omni_tasks.series import Series
from omni_tasks.store import views
from omni_tasks.trust.redact import outbound, redact

FIRST_SEED = 42


def run_ab(
    conn: psycopg.Connection[Any],
    req: ABRequest,
    policy: GatePolicy,
    *,
    say: Callable[[str], None] = lambda _line: None,
    details_url: str | None = None,
) -> ABResult:
    """Run the A/B to a verdict, reporting to the check run (when `req.repo`)."""
    policy = policy.for_benchmark(req.benchmark)
    series = series_name(Series(req.benchmark, req.model, req.lane))
    title = f"A/B {series} · {req.base_sha[:10]} → {req.head_sha[:10]}"
    check = checks.start(req.repo, req.head_sha, title, details_url) if req.repo else None
    try:
        result, comparison_id = _decide(conn, req, policy, say)
    except Exception as exc:
        if check is not None:  # the check must not hang in_progress
            # Redacted before it is cut (a token straddling the cut would pass as a prefix).
            why = outbound(redact(f"{type(exc).__name__}: {exc}")[:500], "github")
            checks.complete(check, "INFRA", f"INFRA · {title}", f"The A/B failed: {why}", "")
        raise
    result.summary = summary_markdown(req, result)
    _to_slack(conn, req, result, title, details_url)
    if check is not None:
        clips = views.comparison_regressed_clips(conn, comparison_id) if comparison_id else []
        checks.complete(
            check,
            result.verdict,
            f"{result.verdict} · {title}",
            result.summary,
            worst_clips_markdown(clips),
        )
        result.check_run_id = check.check_run_id
    return result


def _decide(
    conn: psycopg.Connection[Any], req: ABRequest, policy: GatePolicy, say: Callable[[str], None]
) -> tuple[ABResult, int | None]:
    tau = policy.primary_tau
    runs = {side: [_run(conn, req, side, FIRST_SEED, None)] for side in ("base", "head")}
    base_g, head_g = (load_graded_run(conn, runs[side][0]) for side in ("base", "head"))
    paired = compare(conn, base_g, head_g, tau, policy)
    spent = 2 * len(base_g.clips)
    looks: list[ABLook] = []

    def result(verdict: str, stopped: str, more: int | None = None) -> tuple[ABResult, int | None]:
        """The A/B as it stands: the looks so far and the clips spent on them."""
        ab = ABResult(req.ab_id, verdict, looks, spent, req.budget, stopped, more, runs)
        return ab, paired.comparison_id

    if paired.verdict == "INFRA":
        return result("INFRA", "INFRA: " + "; ".join(paired.reasons))
    ids, base, head = _flags([base_g.clips, head_g.clips], tau)
    look = first_look(base[:, 0], head[:, 0], policy)
    looks.append(ABLook.of(look, spent))
    say(f"round 0: {look.verdict} ({look.reasons[0]})")
    stopped, more = "decided on the full paired round", None
    if look.verdict == "UNKNOWN":
        plan = plan_repeats(base[:, 0], head[:, 0], spent, req.budget, policy)
        subset = tuple(ids[i] for i in plan.items)
        rb = rh = np.empty((len(subset), 0), dtype=np.int64)
        for k in range(1, plan.looks + 1):
            order = ("base", "head") if k % 2 == 0 else ("head", "base")  # interleaved
            got = {side: _run(conn, req, side, FIRST_SEED + k, subset) for side in order}
            for side in ("base", "head"):
                runs[side].append(got[side])
            loaded = [load_graded_run(conn, got[s]).clips for s in ("base", "head")]
            kept, b, h = _flags(loaded, tau, order=subset)
            spent += 2 * len(subset)
            if len(kept) < len(subset):
                lost = len(subset) - len(kept)
                why = f"repeat {k} lost {lost} of {len(subset)} items to failed requests"
                return result("INFRA", f"INFRA: {why}")
            rb, rh = np.column_stack([rb, b[:, 0]]), np.column_stack([rh, h[:, 0]])
            look = repeat_look(rb, rh, len(ids), plan, policy)
            looks.append(ABLook.of(look, spent))
            say(f"repeat {k} on {len(subset)} discriminating items: {look.verdict}")
            if look.verdict != "UNKNOWN":
                stopped = f"decided after {k} repeat(s) on the {len(subset)} discriminating items"
                break
        if look.verdict == "UNKNOWN":
            more = clips_needed(look, plan, policy)
            items = benchmarks.get(req.benchmark).words.items
            stopped = (
                f"budget: {spent} of {req.budget} {items} spent; another decision needs about "
                f"{more} more {items}"
            )
    return result(look.verdict, stopped, more)


def _run(
    conn: psycopg.Connection[Any],
    req: ABRequest,
    side: str,
    seed: int,
    only: tuple[str, ...] | None,
) -> str:
    from omni_tasks.benchmarks.request import RunRequest

    bench = benchmarks.get(req.benchmark)
    generic = RunRequest(
        target=req.base_target if side == "base" else req.head_target,
        branch=req.branch(side),
        dataset=req.dataset,
        commit=req.base_sha if side == "base" else req.head_sha,
        seed=seed,
        limit=req.limit,
        nightly=dt.datetime.now(dt.UTC).date(),
        trigger="ab",
        benchmark=req.benchmark,
        model=req.model,
        lane=req.lane,
        only=only,
    )
    r = bench.request(generic, req.options)

    def run(request: RunRequest) -> str:
        return bench.run(conn, request, req.grader)

    if r.target == "vllm-serve":  # the side's commit gets its own server (environment, GPUs)
        from omni_tasks.jobs.nightly import served

        key = served(conn, req.serving, r, run)
    else:
        key = run(r)
    conn.commit()
    return key


def _flags(
    runs: list[list[Any]], tau: float, order: tuple[str, ...] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(item ids, base flags, head flags) over the items counted on both sides."""
    maps = [{c.utt_id: c for c in run if count_of(c) != "infra"} for run in runs]
    ids = [u for u in (order or list(maps[0])) if all(u in m for m in maps)]
    flags = [np.array([[int(is_broken(m[u], tau))] for u in ids], dtype=np.int64) for m in maps]
    return ids, flags[0].reshape(len(ids), 1), flags[1].reshape(len(ids), 1)


def _to_slack(
    conn: psycopg.Connection[Any],
    req: ABRequest,
    result: ABResult,
    title: str,
    details_url: str | None,
) -> None:
    """One outbox message per A/B verdict, keyed in the A/B's own space (`ab|…`): an A/B
    never opens, updates or resolves a nightly alert."""
    from omni_tasks.alerts import blocks
    from omni_tasks.store import alerts as outbox

    last = result.looks[-1] if result.looks else None
    words = benchmarks.get(req.benchmark).words
    suite = f"{result.looks[0].n} {words.items} paired; " if result.looks else ""
    asked = f"{result.clips_spent} of a budget of {result.budget} asked (both sides, every look)"
    lines = [f"{suite}{asked}; {result.stopped}"]
    if last is not None:
        lines.insert(0, f"Δ tail {last.delta_tail:+.1%}, p {last.p_regress:.3g}")
    links = {"Details": details_url} if details_url else {}
    if req.repo and req.pr:
        links["Pull request"] = f"https://github.com/{req.repo}/pull/{req.pr}"
    again = req.command()
    message = blocks.verdict_message(
        title, result.verdict, lines, links, () if again is None else (again,)
    )
    key = f"ab|{req.ab_id}|{req.base_sha[:12]}|{result.verdict}"
    outbox.enqueue(conn, key, None, "post", {"op": "post", **message.to_payload()})
    conn.commit()
