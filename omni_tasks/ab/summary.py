"""An A/B's result in markdown, for the check run's summary and text (GitHub renders it)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from omni_tasks import benchmarks
from omni_tasks.evidence.links import audio_url
from omni_tasks.formatting import pts, pts_ci
from omni_tasks.trust.redact import outbound, redact

if TYPE_CHECKING:
    from omni_tasks.ab.request import ABRequest, ABResult
    from omni_tasks.store.views import RegressedClip

WORST = 10


def summary_markdown(req: ABRequest, result: ABResult) -> str:
    items = benchmarks.get(req.benchmark).words.items
    rows = [
        "| look | items | regressed : improved | Δ tail [95 %] | p (regress) | α of the look "
        f"| verdict | {items} spent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for look in result.looks:
        name = "full paired round" if look.round == 0 else f"repeat {look.round}"
        rows.append(
            f"| {name} | {look.n} | {look.regressed} : {look.improved} | "
            f"{pts_ci(look.delta_tail, look.delta_tail_ci)} | {look.p_regress:.3g} | "
            f"{look.alpha:.3g} | {look.verdict} | {look.clips_spent} |"
        )
    series = f"{req.benchmark} · {req.model} · {req.lane}"
    head = [
        f"### {result.verdict}: {series}",
        "",
        f"base {code_span(req.base_sha[:12])} → head {code_span(req.head_sha[:12])}"
        + (f" (PR #{req.pr})" if req.pr else "")
        + f"; {result.clips_spent} of {result.budget} {items} spent; {result.stopped}.",
        "",
    ]
    if result.looks:
        last = result.looks[-1]
        head += [
            f"**Δ tail {pts(last.delta_tail)}** (share of broken items, head − base), "
            f"p = {last.p_regress:.3g}.",
            "",
            *rows,
            "",
        ]
    head.append(
        "Round 0 runs every item on both commits and is judged by the nightly's paired test "
        "at α/2; repeats (new seeds) run the items broken on either side and are judged on "
        "the repeats alone, each at an equal share of the other α/2."
    )
    return "\n".join(head) + "\n"


def worst_clips_markdown(clips: list[RegressedClip]) -> str:
    """The head's worst newly broken clips of the full round, both sides heard."""
    if not clips:
        return "No clip was fine on base and broken on head in the full round.\n"
    lines = [
        "| clip | said | base heard (WER) | head heard (WER) | audio |",
        "|---|---|---|---|---|",
    ]
    for c in clips[:WORST]:
        link = audio_url(c.audio_uri)
        lines.append(
            f"| {code_span(c.utt_id, table=True)} | {_cell(c.reference)} | "
            f"{_cell(c.baseline_heard)} ({_wer(c.baseline_wer)}) | {_cell(c.candidate_heard)} "
            f"({_wer(c.candidate_wer)}) | {f'[head]({link})' if link else '—'} |"
        )
    if len(clips) > WORST:
        lines.append(f"\n… and {len(clips) - WORST} more.")
    return "\n".join(lines) + "\n"


def code_span(text: object, *, table: bool = False) -> str:
    """Data as a GitHub markdown code span it cannot leave: redacted, on one line, at most 160
    characters, fenced by more backticks than any run of them in it (and padded, so one at
    either end stays inside). In a table cell (`table`), GFM splits the row on every pipe that
    no backslash escapes, code spans included, and two backslashes escape each other: so
    backslashes and pipes are escaped (GitHub drops a pipe's escape; a backslash shows
    doubled)."""
    s = redact(text).replace("\r", " ").replace("\n", " ")
    s = s[:157] + "…" if len(s) > 160 else s
    if table:
        s = s.replace("\\", "\\\\").replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", s)), default=0))
    return f"{fence} {s} {fence}"


def _cell(text: Any) -> str:
    """A server's text in a markdown table cell: through the gate, escaped for GitHub (no
    links, images, HTML or table breaks from it)."""
    s = str(text or "")
    s = s[:157] + "…" if len(s) > 160 else s
    return outbound(s, "github")


def _wer(x: Any) -> str:
    return "—" if x is None else f"{x:.2f}"
