"""Human-readable terminal output for stats, comparisons and gate decisions (rich)."""

from __future__ import annotations

import datetime as dt

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import Words
from omni_tasks.contracts import Comparison, Decision, LabelCell, RunStats, SummaryOnlyStats
from omni_tasks.formatting import pct, pct_ci, pts_ci
from omni_tasks.reports.tables import print_table

VERDICT_STYLE = {
    "REGRESSED": "bold red",
    "IMPROVED": "bold green",
    "SAME": "green",
    "UNKNOWN": "yellow",
    "INFRA": "magenta",
}


def _f(v: float | None, fmt: str = ".4f") -> str:
    return "—" if v is None else format(v, fmt)


def _words(s: RunStats | SummaryOnlyStats) -> Words:
    return benchmarks.get(s.benchmark or "seed_tts_en").words


def _tail(s: RunStats) -> str:
    if s.tail_fraction is None:
        return "—"
    return f"{pct_ci(s.tail_fraction, s.tail_fraction_ci)} ({s.n_broken} {_words(s).items})"


def _official(s: RunStats | SummaryOnlyStats) -> str:
    if not s.official:
        return "n/a"
    return benchmarks.get(s.benchmark or "seed_tts_en").official_line(s.official)


def _counts(s: RunStats) -> str:
    return f"{s.n_scored} / {s.n_failed} / {s.n_infra} of {s.n_expected}"


def _choice_rows(table: Table, sides: list[RunStats], words: Words) -> None:
    """A run judged right or wrong (multiple choice, voice isolation): accuracy and the wrong
    items, per breakdown label (no WER), in the family's words."""
    rows = [
        (f"{words.items} scored / failed / infra", _counts),
        ("coverage", lambda s: pct(s.coverage)),
        ("accuracy (scored)", lambda s: pct(s.accuracy)),
        (f"{words.broken} [95 % Wilson]", _tail),
        ("official (upstream's rules)", _official),
    ]
    for label, fn in rows:
        table.add_row(label, *[fn(s) for s in sides])
    for dim, cells in sides[0].breakdown.items():
        for name in sorted(cells):
            table.add_row(
                f"  {dim} {name}", *[_cell(s.breakdown.get(dim, {}).get(name)) for s in sides]
            )


def _cell(cell: LabelCell | None) -> str:
    if cell is None:
        return "—"
    return f"{cell.correct}/{cell.total} = {pct(cell.accuracy)}"


def _split(s: RunStats | None) -> str:
    if s is None:
        return "—"
    return f"{_f(s.capped_mean_wer, '.3f')} / {pct(s.tail_fraction)}"


def _stats_rows(table: Table, sides: list[RunStats]) -> None:
    words = _words(sides[0])
    if any(s.accuracy is not None for s in sides):
        _choice_rows(table, sides, words)
        return
    rows = [
        (f"{words.items} scored / failed / infra", _counts),
        ("coverage", lambda s: pct(s.coverage)),
        ("mean WER (uncapped; empty transcript = 1)", lambda s: _f(s.mean_wer)),
        ("median WER", lambda s: _f(s.median_wer)),
        (f"harness mean WER (official: graded {words.items} only)", _official),
        ("capped mean WER", lambda s: _f(s.capped_mean_wer)),
        (f"tail fraction (WER > {sides[0].tau}) [95 % Wilson]", _tail),
        (f"runaway {words.items} (WER > 1)", lambda s: str(s.n_runaway)),
        ("top-10 share of error", lambda s: pct(s.top10_error_share)),
    ]
    for label, fn in rows:
        table.add_row(label, *[fn(s) for s in sides])
    if any(s.sim_mean is not None for s in sides):
        table.add_row("speaker similarity (mean; not gated)", *[_f(s.sim_mean) for s in sides])
    if any(s.utmos_mean is not None for s in sides):
        table.add_row("UTMOS (mean; not gated)", *[_f(s.utmos_mean) for s in sides])
    for mode in sides[0].failure_modes:
        table.add_row(
            f"  {mode.replace('_', '-')} ({words.items} / error share)",
            *[
                f"{s.failure_modes[mode].clips} / {pct(s.failure_modes[mode].error_share)}"
                for s in sides
            ],
        )
    for origin in sides[0].origins:
        table.add_row(f"  origin {origin}", *[str(s.origins[origin]) for s in sides])
    table.add_row(
        "  task-text leak / answered question",
        *[f"{s.task_leak_clips} / {s.answered_clips}" for s in sides],
    )
    table.add_row("questions: capped mean / tail", *[_split(s.questions) for s in sides])
    table.add_row("statements: capped mean / tail", *[_split(s.statements) for s in sides])


def print_stats(console: Console, stats: RunStats | SummaryOnlyStats) -> None:
    if isinstance(stats, SummaryOnlyStats):
        console.print(
            f"{stats.run_key} ({stats.branch}) [bold]summary-only[/]: official "
            f"{_official(stats)} of {stats.n_expected} — {stats.note}",
            highlight=False,
        )
        return
    # The key on a line of its own, never in a column that could cut it (it is copied).
    console.print(f"run {stats.run_key}", soft_wrap=True, highlight=False, markup=False)
    table = Table("statistic", "value", title=f"{stats.branch} · {stats.grader_id}")
    _stats_rows(table, [stats])
    console.print(table)


def print_comparison(console: Console, res: Comparison) -> None:
    b, c = res.baseline, res.candidate
    for side, s in (("baseline ", b), ("candidate", c)):  # whole keys, on lines of their own
        console.print(f"{side} {s.run_key}", soft_wrap=True, highlight=False, markup=False)
    table = Table("statistic")
    for header in (f"baseline {b.branch}", f"candidate {c.branch}"):
        table.add_column(header, min_width=max(cell_len(w) for w in header.split()))  # no fold
    _stats_rows(table, [b, c])
    console.print(table)
    console.print(
        f"paired over {res.n_paired} items: stable-broken {res.stable_broken}, "
        f"[red]regressed {res.regressed}[/], [green]improved {res.improved}[/], "
        f"stable-fine {res.stable_ok}",
        highlight=False,
    )
    console.print(
        f"exact McNemar p_regress = {res.mcnemar_p:.3g}, p_improve = "
        f"{res.mcnemar_p_improve:.3g}; Δ tail "
        f"{pts_ci(res.delta_tail_fraction, res.delta_tail_fraction_ci)} (Newcombe); "
        f"Δ capped mean {_f(res.delta_capped_mean_wer, '+.4f')}",
        highlight=False,
    )
    style = VERDICT_STYLE.get(res.verdict, "")
    console.print(
        f"verdict: [{style}]{res.verdict}[/] — " + "; ".join(res.reasons), highlight=False
    )
    for w in res.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    words = _words(c)
    if res.top_regressed and res.candidate.accuracy is not None:
        top = Table(title=f"regressed {words.items}")
        top.add_column(words.item, no_wrap=True)  # the item's id: never cut
        for header in ("gold", f"{words.said} (candidate)", f"baseline {words.said}"):
            top.add_column(header)
        for q in res.top_regressed:
            top.add_row(q.utt_id, q.reference, q.heard or "—", q.baseline_heard or "—")
        console.print(top)
    elif res.top_regressed:
        top = Table(title=f"worst regressed {words.items}")
        top.add_column(words.item, no_wrap=True)  # the item's id: never cut
        top.add_column("reference")
        top.add_column(f"{words.said} (candidate)")
        top.add_column(words.metric or "figure", no_wrap=True)
        for item in res.top_regressed:
            top.add_row(item.utt_id, item.reference, (item.heard or "")[:160], f"{item.wer:.2f}")
        console.print(top)


def print_gate(
    console: Console, nightly: dt.date, decisions: list[Decision], wide: bool = False
) -> None:
    """The night's decisions by the table rule (reports/tables.py): what a reader acts on
    (candidate, verdict, state) stays; the figures go first when narrow, as each decision's
    reasons below repeat them."""
    cells = [
        [
            d.candidate_branch,
            d.baseline_branch,
            d.variant,
            Text(d.verdict, style=VERDICT_STYLE.get(d.verdict, "")),
            "confirmed" if d.confirmed else "unconfirmed",
            "—"
            if d.verdict == "INFRA"
            else pts_ci(d.delta_tail_fraction, d.delta_tail_fraction_ci),
            "—" if d.verdict == "INFRA" else f"{d.regressed}:{d.improved}",
            _f(d.mcnemar_p_holm, ".2g"),
        ]
        for d in decisions
    ]
    print_table(
        console,
        [
            "candidate",
            "baseline",
            "variant",
            "verdict",
            "state",
            "Δ tail [95 %]",
            "reg:imp",
            "p (Holm)",
        ],
        cells,
        keep="candidate",
        drop_first=["p (Holm)", "variant", "reg:imp", "Δ tail [95 %]", "baseline", "state"],
        wide=wide,
        title=f"gate · nightly {nightly}",
    )
    for d in decisions:
        for r in d.reasons:
            console.print(f"  {d.candidate_branch}/{d.variant}: {r}", highlight=False)
