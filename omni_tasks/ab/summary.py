"""An A/B's result in markdown, for the check run's summary and text (GitHub renders it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omni_tasks.evidence.links import audio_url
from omni_tasks.formatting import pts, pts_ci
from omni_tasks.trust.redact import outbound

if TYPE_CHECKING:
    from omni_tasks.jobs.ab import ABRequest, ABResult
    from omni_tasks.store.views import RegressedClip

WORST = 10


def summary_markdown(req: ABRequest, result: ABResult) -> str:
    rows = [
        "| look | items | regressed : improved | Δ tail [95 %] | p (regress) | α of the look "
        "| verdict | clips spent |",
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
        f"base `{req.base_sha[:12]}` → head `{req.head_sha[:12]}`"
        + (f" (PR #{req.pr})" if req.pr else "")
        + f"; {result.clips_spent} of {result.budget} clips spent; {result.stopped}.",
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
            f"| `{c.utt_id}` | {_cell(c.reference)} | {_cell(c.baseline_heard)} "
            f"({_wer(c.baseline_wer)}) | {_cell(c.candidate_heard)} "
            f"({_wer(c.candidate_wer)}) | {f'[head]({link})' if link else '—'} |"
        )
    if len(clips) > WORST:
        lines.append(f"\n… and {len(clips) - WORST} more.")
    return "\n".join(lines) + "\n"


def _cell(text: Any) -> str:
    """A server's text in a markdown table cell: through the gate, escaped for GitHub (no
    links, images, HTML or table breaks from it)."""
    s = str(text or "")
    s = s[:157] + "…" if len(s) > 160 else s
    return outbound(s, "github")


def _wer(x: Any) -> str:
    return "—" if x is None else f"{x:.2f}"
