"""`omni-tasks items`: the standing-failure ledger, what is broken night after night (`chronic`,
and a GitHub issue per benchmark and mode with `--file-issue`), and one item's nights (`show`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, fail, items_app, json_out, say
from omni_tasks.formatting import pct
from omni_tasks.ledger.digest import CHRONIC, commit_range, digest, headline, mode_of, rate
from omni_tasks.ledger.issue import Plan, fresh_elsewhere, series_label
from omni_tasks.ledger.model import GroupShare, ItemNight, Ledger, LedgerItem
from omni_tasks.reports.tables import print_table
from omni_tasks.series import Series

if TYPE_CHECKING:
    from omni_tasks.store.item_evidence import ItemEvidence

SHOWN = (*CHRONIC, "flaky")  # what `chronic` lists (fixed items are in --json)
BranchOpt = Annotated[str, typer.Option(metavar="BRANCH", help="The branch whose nights count")]
NightsOpt = Annotated[
    int, typer.Option(min=1, max=3660, help="The ledger's window: the series' last N nights")
]
ModeFilter = Annotated[
    str | None,
    typer.Option(
        "--mode", metavar="MODE", help="Only items of this failure mode (e.g. over_generation)"
    ),
]
RepoOpt = Annotated[
    str | None,
    typer.Option(
        "--file-issue",
        metavar="OWNER/NAME",
        help="File or update one GitHub issue per (benchmark, mode) of the chronic set on every "
        "series of the benchmark (a dry run printing what it would do, unless --apply)",
    ),
]
ApplyFlag = Annotated[bool, typer.Option("--apply", help="With --file-issue: write to GitHub")]
CleanOpt = Annotated[
    int,
    typer.Option(
        min=1, help="With --file-issue: an issue closes once every item is clean this many nights"
    ),
]


def item_json(item: LedgerItem) -> dict[str, object]:
    """An item as `--json` spells it: the ledger's fields, its rate and its range's text."""
    return {
        **dataclasses.asdict(item),
        "rate": item.rate,
        "mode": mode_of(item),
        "range": commit_range(item) if item.commit_range else None,
    }


def ledger_json(label: str, key: str, ledger: Ledger, mode: str | None) -> dict[str, object]:
    return {
        "series": key,
        "label": label,
        "branch": ledger.branch,
        "first_night": ledger.first_night,
        "last_night": ledger.last_night,
        "headline": headline(digest(ledger, None)),
        "items": [item_json(i) for i in listed(ledger, mode)],
        "fixed": [item_json(i) for i in ledger.state("fixed") if mode in (None, mode_of(i))],
        "groups": [dataclasses.asdict(g) for g in ledger.groups],
    }


def listed(ledger: Ledger, mode: str | None) -> list[LedgerItem]:
    """What `chronic` lists: chronic and new first, then flaky; each by its lower bound."""
    order = {s: n for n, s in enumerate(SHOWN)}
    return sorted(
        (i for i in ledger.state(*SHOWN) if mode in (None, mode_of(i))),
        key=lambda i: (order[i.state], -i.low, i.utt_id),
    )


def chronic_rows(ledger: Ledger, mode: str | None) -> list[list[str]]:
    """The table's rows, in `listed`'s order."""
    return [
        [
            i.utt_id,
            i.state,
            rate(i),
            mode_of(i),
            i.origin or "?",
            pct(i.leak_share, 0),
            str(i.first_broken or ""),
            str(i.since or ""),
            ", ".join(map(series_label, i.elsewhere)),
        ]
        for i in listed(ledger, mode)
    ]


def group_line(g: GroupShare) -> str:
    """`kind=question: 12 of 20 chronic items (60 %), 200 of 1000 of the suite (20 %), p 3e-05`."""
    ours = g.chronic / g.chronic_total if g.chronic_total else 0.0
    suite = g.suite / g.suite_total if g.suite_total else 0.0
    return (
        f"{g.key}={g.value}: {g.chronic} of {g.chronic_total} chronic items ({pct(ours, 0)}), "
        f"{g.suite} of {g.suite_total} of the suite ({pct(suite, 0)}), exact p {g.p:.2g}"
    )


HEADERS = [
    "item",
    "state",
    "broken nights (rate [95 %])",
    "mode",
    "origin",
    "task text",
    "first broken",
    "chronic since",
    "chronic elsewhere",
]
DROP = ["chronic elsewhere", "chronic since", "task text", "first broken", "origin", "state"]


def _show_ledger(label: str, ledger: Ledger, mode: str | None, wide: bool) -> None:
    print_table(
        console,
        HEADERS,
        chronic_rows(ledger, mode),
        keep="item",
        drop_first=DROP,
        wide=wide,
        title=f"{label} · {ledger.branch} · {ledger.first_night} – {ledger.last_night}",
    )
    console.print(headline(digest(ledger, None)))
    for g in ledger.groups:
        console.print(f"  {group_line(g)}")


@items_app.command("chronic")
def items_chronic(
    benchmark: opt.BenchmarkOpt = None,
    model: opt.OnlyModel = None,
    lane: opt.OnlyLane = None,
    branch: BranchOpt = "main",
    mode: ModeFilter = None,
    nights: NightsOpt = 28,
    file_issue: RepoOpt = None,
    apply: ApplyFlag = False,
    clean_nights: CleanOpt = 14,
    wide: opt.WideFlag = False,
    as_json: opt.JsonFlag = False,
) -> None:
    """The items broken night after night on a benchmark's series (every model and lane, or
    those --model and --lane name): chronic (the broken rate's lower bound above the ledger
    policy's level over enough nights), new (chronic since a night) and flaky, each with its
    broken rate and exact interval, failure mode, origin, first broken night and the other
    series where it is chronic; then how the chronic set splits by the groups the benchmark
    knows (questions, categories) against the suite."""
    from omni_tasks.config import get_settings
    from omni_tasks.jobs.ledger_issues import IssueFilingError, file_issues

    bench = benchmark or get_settings().benchmark
    if apply and not file_issue:
        fail("--apply writes the issues --file-issue names: give --file-issue OWNER/NAME", 2)
    if file_issue and (model or lane):
        # An issue is the benchmark's: a set read from some of its series would close it
        # for items still broken on the others.
        fail("--file-issue reads every series of the benchmark: leave out --model and --lane", 2)
    if file_issue:
        from omni_tasks.ab.checks import check_repo

        with opt.fails_on(ValueError, what="--file-issue", code=2):
            check_repo(file_issue)

    def work(conn: Any) -> tuple[list[tuple[Series, Ledger]], list[Plan], bool]:
        ledgers = _read(conn, bench, model, lane, branch, nights)
        if not file_issue:
            return ledgers, [], False
        plans, read = file_issues(
            conn,
            file_issue,
            ledgers,
            benchmark=bench,
            branch=branch,
            mode=mode,
            clean_nights=clean_nights,
            apply=apply,
        )
        return ledgers, plans, read

    ledgers, plans, read = opt.on_db(work, IssueFilingError)
    if as_json:
        out: dict[str, Any] = {
            "series": [ledger_json(s.label, s.key, led, mode) for s, led in ledgers]
        }
        if file_issue:
            out["issues"] = [_plan_json(p, apply) for p in plans]
        json_out(out)
        return
    for s, led in ledgers:
        _show_ledger(s.label, led, mode, wide)
    if file_issue:
        _show_plans(file_issue, plans, apply, read)


def _read(
    conn: Any, bench: str, model: str | None, lane: str | None, branch: str, nights: int
) -> list[tuple[Series, Ledger]]:
    """The ledgers of the benchmark's series the filters leave, each series' other series
    where an item is chronic answered by the others read here."""
    from omni_tasks.store import ledger as store

    series = store.series_for(conn, bench, model=model, lane=lane)
    if not series:
        fail(f"no stored series of {bench} matches (see `omni-tasks runs list`)")
    found = [(s, led) for s in series if (led := _ledger(conn, s, branch, nights))]
    if not found:
        fail(f"no graded night of {bench} on {branch} (see `omni-tasks runs list`)")
    fresh = fresh_elsewhere([led for _, led in found])
    return [(s, led) for (s, _), led in zip(found, fresh, strict=True)]


def _ledger(conn: Any, series: Series, branch: str, nights: int) -> Ledger | None:
    """The series' ledger, or None when the branch has no graded night of it."""
    from omni_tasks.store import ledger as store

    try:
        return store.load(conn, series, branch=branch, nights=nights)
    except LookupError:
        return None


def _plan_json(p: Plan, applied: bool) -> dict[str, object]:
    return {
        "title": p.issue.title,
        "number": p.number,
        "items": [e.item.utt_id for e in p.issue.entries],
        "steps": [s.op for s in p.steps],
        "applied": applied,
        "bodies": [s.text for s in p.steps if s.text],
    }


def _show_plans(repo: str, plans: list[Plan], apply: bool, read: bool) -> None:
    if not read:
        say(
            "no GitHub credentials (OMNI_GITHUB_TOKEN or a GitHub App): planned as if "
            f"{repo} held no standing-failure issue"
        )
    for p in plans:
        console.print(("" if apply else "would: ") + p.summary)
        if not apply:
            for step in p.steps:
                if step.text:
                    console.rule(f"{step.op}")
                    console.print(step.text, markup=False)
    if not apply and any(p.steps for p in plans):
        console.print(f"dry run: nothing was written to {repo} (--apply writes it)")


@items_app.command("show")
def items_show(
    item: Annotated[str, typer.Argument(metavar="ITEM", help="The item's id (utt_id)")],
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    branch: BranchOpt = "main",
    nights: NightsOpt = 28,
    as_json: opt.JsonFlag = False,
) -> None:
    """One item's nights on a series' branch, oldest first (broken or not, its failure mode,
    origin and whether it spoke the task text), and both transcripts of its latest broken
    night: the reference it was asked to say and what the ASR heard, with the audio's link."""
    from omni_tasks.evidence.links import audio_url
    from omni_tasks.store import ledger as store
    from omni_tasks.store.item_evidence import item_evidence

    series = opt.series_of(benchmark, model, lane)

    def work(conn: Any) -> tuple[list[ItemNight], ItemEvidence | None]:
        rows = store.item_nights(conn, series, branch=branch, utt_id=item, nights=nights)
        broken = [r.nightly for r in rows if r.broken]
        if not broken:
            return rows, None
        return rows, item_evidence(conn, series, branch, {item: broken[-1]}).get(item)

    rows, evidence = opt.on_db(work)
    if not rows:
        fail(f"no stored nights of {item} on {series.label} {branch}")
    audio = audio_url(evidence.audio_uri) if evidence else None
    if as_json:
        latest = {**dataclasses.asdict(evidence), "audio_url": audio} if evidence else None
        json_out(
            {
                "series": series.key,
                "utt_id": item,
                "branch": branch,
                "nights": rows,
                "latest_broken": latest,
            }
        )
        return
    _show_nights(rows, f"{item} · {series.label} · {branch}")
    _show_latest(evidence, audio, any(r.broken for r in rows))


def _show_nights(rows: list[ItemNight], title: str) -> None:
    print_table(
        console,
        ["night", "commit", "broken", "mode", "origin", "task text"],
        [
            [
                str(r.nightly),
                (r.commit_sha or "?")[:12],
                "broken" if r.broken else "ok",
                r.mode or "",
                r.origin or "",
                "spoken" if r.leak else "",
            ]
            for r in rows
        ],
        keep="night",
        drop_first=["commit", "task text", "origin"],
        title=title,
    )
    console.print(f"broken on {sum(r.broken for r in rows)} of {len(rows)} nights")


def _show_latest(evidence: ItemEvidence | None, audio: str | None, broken: bool) -> None:
    """Both transcripts of the latest broken night, and where its audio is."""
    if evidence is None:
        said = "no stored clip of its latest broken night" if broken else "never broken here"
        console.print(said)
        return
    console.rule(f"latest broken night: {evidence.nightly}")
    console.print("asked to say (reference):", style="bold")
    console.print(evidence.reference or "(none)", markup=False)
    console.print("heard (ASR transcript):", style="bold")
    console.print(evidence.heard or "(nothing heard)", markup=False)
    console.print(f"audio: {audio or evidence.audio_uri or 'not stored'}", markup=False)
