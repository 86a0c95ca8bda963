"""The upstream watch (what `omni_upstream_watch` calls weekly): a vllm-omni release newer than
every version the harness table knows is an INFRA alert, since its window and retry rules are
unknown until its row is read from its code. Where a checkout of this repository is configured,
its conformance suite runs against the newest such release (`tests/conformance/latest.py`, as
`make conformance-latest` does) and what it finds goes into the alert."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
from packaging.version import InvalidVersion, Version
from pydantic import JsonValue

from omni_tasks.alerts.infra import raise_infra
from omni_tasks.contracts import JsonObject, json_objects
from omni_tasks.harness import HARNESS
from omni_tasks.trust.names import printable

PACKAGE = "vllm-omni"
SUITE_TIMEOUT_S = 3600
ANCHOR = re.compile(r"<a\s(?P<attrs>[^>]*)>", re.IGNORECASE)
HREF = re.compile(r'href="([^"]+)"')


@dataclass(frozen=True)
class Release:
    version: str
    prerelease: bool
    wheel_sha256: str  # PyPI's digest of the py3-none-any wheel


def releases(pypi_url: str, package: str = PACKAGE) -> list[Release]:
    """A package's releases with a pure-Python wheel on PyPI's simple index (PEP 503: links
    carry `#sha256=`), oldest first; yanked files and names that do not parse are left out."""
    url = f"{pypi_url.rstrip('/')}/simple/{package}/"
    r = httpx.get(url, timeout=60, follow_redirects=True)
    r.raise_for_status()
    stem = re.escape(package.replace("-", "_"))
    wheel = re.compile(rf"/{stem}-([^-/]+)-py3-none-any\.whl#sha256=([0-9a-f]{{64}})$")
    out = {}
    for anchor in ANCHOR.finditer(r.text):
        attrs = anchor.group("attrs")
        href = HREF.search(attrs)
        found = wheel.search(html.unescape(href.group(1))) if href else None
        if found is None or "data-yanked" in attrs:
            continue
        try:
            version = Version(found.group(1))
        except InvalidVersion:
            continue
        out[str(version)] = Release(str(version), version.is_prerelease, found.group(2))
    return sorted(out.values(), key=lambda rel: Version(rel.version))


def newer(found: Iterable[Release], known: Iterable[str]) -> list[Release]:
    """The releases newer than every known version."""
    top = max(Version(v) for v in known)
    return [rel for rel in found if Version(rel.version) > top]


def run_suite(checkout: Path) -> JsonObject:
    """`tests/conformance/latest.py` of a checkout (its own interpreter's environment), its
    JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "latest.json"
        subprocess.run(
            [sys.executable, "-m", "tests.conformance.latest", "--json", str(out)],
            cwd=checkout,
            timeout=SUITE_TIMEOUT_S,
            check=False,
        )
        if not out.is_file():
            return {"error": "the conformance run wrote no report (see the task log)"}
        report = json.loads(out.read_text())
        return report if isinstance(report, dict) else {"error": "the report is not an object"}


def watch(
    conn: psycopg.Connection[Any], pypi_url: str, checkout: Path | None, week: str
) -> list[str]:
    """The releases newer than the harness table; one INFRA alert per week that has any."""
    new = newer(releases(pypi_url), HARNESS)
    if not new:
        return []
    versions = [rel.version for rel in new]
    reasons = [
        f"vllm-omni {', '.join(versions)} on PyPI; the harness table "
        f"(omni_tasks/harness.py) knows up to {max(HARNESS, key=Version)}",
        "a series on a new harness version needs its row: window policy and client retry rule, "
        "read from that release's seed_tts_eval.py and patch.py",
    ]
    if checkout is None:
        reasons.append("run `make conformance-latest` in a checkout to see what differs")
    else:
        reasons.extend(_findings(run_suite(checkout)))
    raise_infra(
        conn,
        "upstream|vllm-omni|releases",
        f"INFRA new vllm-omni release: {versions[-1]}",
        [printable(r)[:500] for r in reasons],
        dedup=week,
    )
    conn.commit()
    return versions


def _findings(report: JsonObject) -> list[str]:
    if "error" in report:
        return [str(report["error"])]

    def texts(value: JsonValue) -> list[str]:
        return [str(x) for x in value] if isinstance(value, list) else []

    lines = []
    for run in json_objects(report.get("runs")):
        failed, changed = texts(run.get("failed")), texts(run.get("changed"))
        lines.append(
            f"{run.get('version')}: {run.get('passed', 0)} checks passed, {len(failed)} failed"
            + (f" ({', '.join(failed[:5])})" if failed else "")
        )
        if changed:
            lines.append(f"{run.get('version')} changed upstream: {', '.join(changed[:8])}")
    return lines or ["the conformance run checked nothing"]
