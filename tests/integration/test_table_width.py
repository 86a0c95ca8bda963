"""Every command that prints a table, at 80 columns against a real database: a run key, a date,
a branch name, an id or a profile name is shown whole on one line or not at all (its column
dropped and named in the caption), never folded across lines or cut with an ellipsis
(reports/tables.py is the rule)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omni_tasks import benchmarks
from omni_tasks.cli import app
from omni_tasks.synthesis.profiles import profile_names
from tests.factories import REGRESS, SAME, small_artifact, store_night, write_json

LONG_BRANCH = "dev/vllm-align-2026-q4-rebase"  # its run key is longer than 80 columns


def broken(output: str, tokens: set[str]) -> list[str]:
    """The tokens split across lines (a table column's pieces, or wrapped text, joined) or cut
    short (an ellipsis, the terminal's edge); a token whole on a line, or absent, is not."""
    lines = output.splitlines()
    pieces: dict[int, list[str]] = {}  # a table column's cells, top to bottom; -1: plain text
    for line in lines:
        cells = line.replace("┃", "│").split("│")
        if len(cells) > 2:
            for j, cell in enumerate(cells[1:-1]):
                pieces.setdefault(j, []).append(cell.strip())
        else:
            pieces.setdefault(-1, []).append(line.strip())
    joined = ["".join(p) for p in pieces.values()]
    # A cell's last word that is the start of a token and no token itself: cut with an
    # ellipsis, cropped at the edge, or folded (the rest on the next line).
    ends = {c.split()[-1].removesuffix("…") for p in pieces.values() for c in p if c}
    starts = ends - tokens
    return sorted(
        t
        for t in tokens
        if not any(t in line for line in lines)
        and (any(t in j for j in joined) or any(len(w) >= 4 and t.startswith(w) for w in starts))
    )


@pytest.fixture
def stored(db, tmp_path: Path) -> dict[str, set[str]]:
    """Two gated nights (main, rebase; the second regressed, an alert open) and a run of a long
    branch name: the tokens the tables may show, read from the database."""
    for i, shape in enumerate([SAME, REGRESS]):
        store_night(db, tmp_path, i, shape)
    path = write_json(tmp_path / "long.json", small_artifact(3))
    out = CliRunner().invoke(app, ["import", "vllm-omni", str(path), "--branch", LONG_BRANCH])
    assert out.exit_code == 0, out.output
    runs = db.execute("SELECT run_key, nightly, branch, variant FROM omni.run").fetchall()
    alerts = db.execute("SELECT alert_id, opened_nightly FROM omni.alert").fetchall()
    assert runs and alerts
    return {
        "keys": {r["run_key"] for r in runs},
        "dates": {str(r["nightly"]) for r in runs} | {str(a["opened_nightly"]) for a in alerts},
        "branches": {r["branch"] for r in runs},
        "variants": {r["variant"] for r in runs},
        "alerts": {str(a["alert_id"]) for a in alerts},
    }


def test_every_table_command_keeps_its_tokens_whole_at_80_columns(
    stored: dict[str, set[str]],
) -> None:
    keys = sorted(stored["keys"], key=len)
    main, rebase = (next(k for k in keys if f":2026-11-02:{b}:" in k) for b in ("main", "rebase"))
    families = {(b.family, *b.capabilities) for b in benchmarks.all_benchmarks()}
    tokens = set().union(*stored.values(), *families, benchmarks.ids(), profile_names())
    narrow = CliRunner(env={"COLUMNS": "80"})
    commands = {
        "runs list": ["runs", "list"],
        "alerts list": ["alerts", "list"],
        "benchmarks list": ["benchmarks", "list"],
        "gate": ["gate", "--nightly", "2026-11-02"],
        "stats": ["stats", rebase],
        "compare": ["compare", "--baseline", main, "--candidate", rebase],
        "simulator profiles": ["simulator", "profiles"],
    }
    shown = {}
    for name, argv in commands.items():
        out = narrow.invoke(app, argv)
        assert out.exit_code == 0, (name, out.output)
        assert broken(out.output, tokens) == [], (name, out.output)
        shown[name] = out.output
        if name != "runs list":  # a key longer than the terminal is the one exception
            assert max(len(line) for line in out.output.splitlines()) <= 80, (name, out.output)
    # What commands take is always there, whole: run keys (the long one too), alert ids,
    # benchmark ids, the candidate and its verdict, the compared keys, the profiles.
    assert all(k in shown["runs list"] for k in stored["keys"])
    rows = [ln.split("│")[1].strip() for ln in shown["alerts list"].splitlines() if "│" in ln]
    assert stored["alerts"] <= set(rows)
    assert all(f"│ {b} " in shown["benchmarks list"] for b in benchmarks.ids())
    assert "│ rebase " in shown["gate"] and "REGRESSED" in shown["gate"]
    assert rebase in shown["stats"] and main in shown["compare"] and rebase in shown["compare"]
    assert all(f"│ {p} " in shown["simulator profiles"] for p in profile_names())
    for name in ("runs list", "benchmarks list", "gate", "simulator profiles"):
        assert "not shown at this width" in shown[name], name  # dropped whole, and named
        wide = narrow.invoke(app, [*commands[name], "--wide"])
        assert "not shown" not in wide.output and broken(wide.output, tokens) == [], name
