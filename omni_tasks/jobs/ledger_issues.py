"""Filing the standing-failure issues (`omni-tasks items chronic --file-issue REPO`): one GitHub
issue per (benchmark, mode), planned by ledger/issue.py from the benchmark's ledgers and the
issues the repository holds (found by their label and body marker), then applied through
githubkit (ab/checks.py's client: the same token or GitHub App). Everything sent passes the
redaction gate; a dry run reads GitHub (when credentials are set) and writes nothing."""

from __future__ import annotations

import dataclasses
from typing import Any

import psycopg
from githubkit import GitHub
from githubkit.exception import GitHubException

from omni_tasks.ab.checks import CheckRunError, check_repo, client, why
from omni_tasks.evidence.links import audio_url
from omni_tasks.ledger.issue import (
    LABEL,
    Evidence,
    Existing,
    IssueSet,
    Plan,
    Step,
    issue_sets,
    marked_key,
    plan,
)
from omni_tasks.ledger.model import Ledger
from omni_tasks.series import Series
from omni_tasks.store.item_evidence import item_evidence
from omni_tasks.trust.redact import redact


class IssueFilingError(RuntimeError):
    """GitHub refused a call (or no credentials are set for --apply); never a token."""


def with_evidence(
    conn: psycopg.Connection[Any], issue: IssueSet, series: dict[str, Series]
) -> IssueSet:
    """The set with each entry's transcripts and audio link of its latest broken night (on
    the series it was broken on last)."""
    by_series: dict[str, dict[str, Any]] = {}
    for e in issue.entries:
        if e.item.last_broken is not None:
            by_series.setdefault(e.series, {})[e.item.utt_id] = e.item.last_broken
    found: dict[tuple[str, str], Evidence] = {}
    for label, nights in by_series.items():
        for utt, ev in item_evidence(conn, series[label], issue.branch, nights).items():
            found[(label, utt)] = Evidence(
                label, ev.nightly, ev.reference, ev.heard, audio_url(ev.audio_uri)
            )
    entries = tuple(
        dataclasses.replace(e, evidence=found.get((e.series, e.item.utt_id))) for e in issue.entries
    )
    return dataclasses.replace(issue, entries=entries)


def existing_issues(repo: str, benchmark: str, branch: str) -> dict[str, Existing]:
    """The repository's standing-failure issues of a benchmark's branch, by mode (open or
    closed)."""
    owner, name = check_repo(repo)
    found: dict[str, Existing] = {}
    try:
        with client() as gh:
            for page in range(1, 11):  # 1,000 issues of one label is far beyond one benchmark's
                got = gh.rest.issues.list_for_repo(
                    owner, name, labels=LABEL, state="all", per_page=100, page=page
                ).json()
                for i in got:
                    key = marked_key(i.get("body") or "")
                    if key is None or key[:2] != (benchmark, branch) or "pull_request" in i:
                        continue
                    found.setdefault(key[2], Existing(i["number"], i["state"] == "open", i["body"]))
                if len(got) < 100:
                    break
    except GitHubException as exc:
        raise IssueFilingError(f"listing the issues of {repo}: {why(exc)}") from None
    return found


def file_issues(
    conn: psycopg.Connection[Any],
    repo: str,
    ledgers: list[tuple[Series, Ledger]],
    *,
    benchmark: str,
    branch: str,
    mode: str | None,
    clean_nights: int,
    apply: bool,
) -> tuple[list[Plan], bool]:
    """The plan for each (benchmark, mode) issue, applied with `apply`; and whether GitHub
    was read (a dry run without credentials plans as if the repository held no issue)."""
    try:
        existing = existing_issues(repo, benchmark, branch)
        read = True
    except CheckRunError as exc:
        if apply:
            raise IssueFilingError(str(exc)) from None
        existing, read = {}, False
    series = {s.label: s for s, _ in ledgers}
    sets = issue_sets(
        benchmark, branch, [(s.label, led) for s, led in ledgers], set(existing), mode
    )
    plans = [plan(with_evidence(conn, i, series), existing.get(i.mode), clean_nights) for i in sets]
    if apply:
        plans = [_apply(repo, p) for p in plans]
    return plans, read


def _apply(repo: str, p: Plan) -> Plan:
    """The plan's steps, in order, on GitHub; the plan with its issue's number."""
    owner, name = check_repo(repo)
    number = p.number
    try:
        with client() as gh:
            for step in p.steps:
                number = _step(gh, owner, name, number, p.issue, step)
    except GitHubException as exc:
        raise IssueFilingError(f"{p.issue.title} on {repo}: {why(exc)}") from None
    return dataclasses.replace(p, number=number)


def _step(
    gh: GitHub[Any], owner: str, name: str, number: int | None, issue: IssueSet, step: Step
) -> int:
    text = redact(step.text)  # transcripts and server text pass the redaction gate
    if step.op == "create":
        made = gh.rest.issues.create(owner, name, title=issue.title, body=text, labels=[LABEL])
        return int(made.json()["number"])
    assert number is not None  # every other step acts on the issue found or created
    if step.op == "comment":
        gh.rest.issues.create_comment(owner, name, number, body=text)
    elif step.op == "edit":
        gh.rest.issues.update(owner, name, number, title=issue.title, body=text)
    elif step.op == "close":
        gh.rest.issues.update(owner, name, number, state="closed", state_reason="completed")
    else:
        gh.rest.issues.update(owner, name, number, state="open", state_reason="reopened")
    return number
