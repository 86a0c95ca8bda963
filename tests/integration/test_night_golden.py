"""Golden files of how a series' night is decided: gate decisions, confirmations, alert rows,
outbox messages, events and alert groups, for one scenario of nights per alert transition.

Each scenario builds its nights through the stable entry points only (tests/factories.py's
`save_night` and the `omni-tasks gate --json`, `bench`, `alerts invalid` and `alerts dispatch`
commands) and reads what they left with plain SQL, normalised (ids as ordinals of first
appearance, in message text too; wall-clock times and tmp paths replaced), against
`tests/golden/night/<scenario>.json`. A difference fails naming the first differing path.

Regenerate after an intended change of behaviour, and read the diff before committing it:

    OMNI_UPDATE_GOLDEN=1 pytest tests/integration/test_night_golden.py
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bench.artifacts import ABShape
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.series import Series
from tests.factories import D0, gate_cli, save_night

GOLDEN = Path(__file__).parent.parent / "golden" / "night"
UPDATE = os.environ.get("OMNI_UPDATE_GOLDEN") == "1"

# 300 clips a night keeps the file fast; the shapes keep the verdicts they are named for.
REGRESS = ABShape(n=300, stable_broken=20, regressed=30, improved=2)  # confirmed alone
WEAK = ABShape(n=300, stable_broken=20, regressed=13, improved=2)  # REGRESSED, p > confirm_p
SAME = ABShape(n=300, stable_broken=20, regressed=2, improved=2)
MISSING = None  # the rebase's run is missing: INFRA

DEFAULT = Series("seed_tts_en")
QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
S1 = Series("seed_tts_en", QWEN, "cuda-h100x2")
S2 = Series("seed_tts_en", MINICPM, "cuda-h100x2")
S3 = Series("seed_tts_en", QWEN, "rocm-mi300")
S4 = Series("seed_tts_en", MINICPM, "rocm-mi300")

cli = CliRunner()


def invoke(*args: str) -> str:
    out = cli.invoke(app, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.stdout


class Scenario:
    """The nights of one scenario, as steps: each step's CLI output and the outbox messages it
    added or rewrote; then the tables as the last step left them."""

    def __init__(self, db: Any, tmp_path: Path) -> None:
        self.db, self.tmp = db, tmp_path
        self.steps: list[dict[str, Any]] = []
        self._outbox: dict[str, Any] = {}

    def night(
        self,
        i: int,
        shapes: dict[Series, ABShape | None],
        commit: str | None = None,
        seeds: tuple[int | None, ...] = (None,),
    ) -> None:
        """Night D0+i of each series (imported, then gated through the CLI), one step each."""
        for series, shape in shapes.items():
            date = save_night(self.db, self.tmp, i, shape, commit, series, seeds)
            label = f"night {i} {series.label}: {_shape_name(shape)}" + (
                f" (commit {commit})" if commit else ""
            )
            self.record(label, gate_cli(self.db, date, series))

    def record(self, label: str, output: Any) -> None:
        self.db.commit()
        rows = self.db.execute(
            "SELECT idempotency_key, payload FROM omni.alert_outbox ORDER BY message_id"
        ).fetchall()
        now = {r["idempotency_key"]: r["payload"] for r in rows}
        added = [k for k in now if k not in self._outbox]
        rewritten = [k for k in now if k in self._outbox and self._outbox[k] != now[k]]
        self._outbox = now
        self.steps.append(
            {"step": label, "output": output, "outbox_added": added, "outbox_rewritten": rewritten}
        )

    def tables(self) -> dict[str, Any]:
        q = self.db.execute
        decisions = q(
            "SELECT decision_id, benchmark, model, lane, nightly::text, candidate_branch, "
            "baseline_branch, variant, policy_version, verdict, confirmed, mcnemar_p, "
            "mcnemar_p_holm, comparison_id, candidate_run_id, baseline_run_id, reasons, policy "
            "FROM omni.gate_decision ORDER BY decision_id"
        ).fetchall()
        alerts = q(
            "SELECT alert_id, alert_key, kind, state, opened_nightly::text, last_nightly::text, "
            "resolved_nightly::text, channel, parent_ts, thread_ts, details, group_id, "
            "range_from::text, range_to::text, CASE WHEN hold_until IS NULL THEN NULL "
            "WHEN hold_until > now() THEN 'future' ELSE 'past' END AS hold_until "
            "FROM omni.alert ORDER BY alert_id"
        ).fetchall()
        outbox = q(
            "SELECT idempotency_key, alert_id, kind, payload, state, slack_ts "
            "FROM omni.alert_outbox ORDER BY message_id"
        ).fetchall()
        # Events the night plans carry its noon; a person's (triage) the wall clock.
        events = q(
            "SELECT CASE WHEN (time AT TIME ZONE 'UTC')::time = '12:00' "
            "THEN to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') "
            "ELSE '<time>' END AS time, "
            "kind, benchmark, branch, variant, text, tags, details, dedup_key "
            "FROM omni.event ORDER BY event_id"
        ).fetchall()
        # The policy each decision stored, once per distinct policy (it is the same all along,
        # bar `m`, the night's Holm family size, which stays with the decision).
        policies: list[Any] = []
        for d in decisions:
            stored = d.pop("policy")
            policy = {k: v for k, v in stored.items() if k != "m"}
            if policy not in policies:
                policies.append(policy)
            d["policy"] = {"index": policies.index(policy), "m": stored.get("m")}
        return {
            "decisions": decisions,
            "policies": policies,
            "alerts": alerts,
            "outbox": outbox,
            "events": events,
        }

    def check(self, name: str) -> None:
        alert_ids = {r["alert_id"] for r in self.db.execute("SELECT alert_id FROM omni.alert")}
        doc = {"steps": self.steps, **self.tables()}
        normal = normalise(doc, alert_ids, str(self.tmp))
        text = json.dumps(normal, indent=1, sort_keys=True, ensure_ascii=False)
        compare_golden(GOLDEN / f"{name}.json", text + "\n")


def _shape_name(shape: ABShape | None) -> str:
    named = {REGRESS: "REGRESS", WEAK: "WEAK", SAME: "SAME", MISSING: "rebase missing"}
    return named.get(shape, repr(shape))


# ---------------------------------------------------------------- normalisation
# Id columns (and JSON fields) → the namespace their ordinals count in: a group is an alert.
ID_FIELDS = {
    "alert_id": "A",
    "group_id": "A",
    "decision_id": "D",
    "run_id": "R",
    "candidate_run_id": "R",
    "baseline_run_id": "R",
    "comparison_id": "C",
    "grading_id": "G",
}
# Where message text, keys and commands name an alert by its id.
ALERT_IN_TEXT = re.compile(
    r"((?:omni-tasks alerts \w+ )|(?:--alert-id )|(?:[Aa]lert #?)|(?:[Gg]roup )|joined-|closed-|triage\||group_[a-z]+\|)(\d+)\b"
)
# A message the local sink delivered: named by a hash of its idempotency key, which can
# hold an alert id (`joined-7`), so counted like the ids (T1, T2, …).
LOCAL_TS = re.compile(r"local:([0-9a-f]{16})\.json")


# When a person acted (triage history, its messages): the wall clock. Nights are dates, and
# event times the nightly's noon ("2026-11-02 12:00:00+00"), neither of which this matches.
WALL_CLOCK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?: UTC|Z|[+-]\d\d:\d\d)?")


def normalise(doc: Any, alert_ids: set[int], tmp: str) -> Any:
    """Ids → `A1`, `D1`, … by first appearance (walked in the order the file is written:
    keys sorted), in text too; wall-clock times and tmp paths → placeholders; floats to 12
    significant digits."""
    ordinals: dict[tuple[str, object], str] = {}

    def ordinal(ns: str, value: object) -> str:
        if (ns, value) not in ordinals:
            ordinals[(ns, value)] = f"{ns}{sum(1 for n, _ in ordinals if n == ns) + 1}"
        return ordinals[(ns, value)]

    def text(s: str) -> str:
        s = WALL_CLOCK.sub("<time>", s.replace(tmp, "<tmp>"))

        def sub(m: re.Match[str]) -> str:
            value = int(m.group(2))
            return m.group(1) + (ordinal("A", value) if value in alert_ids else m.group(2))

        s = ALERT_IN_TEXT.sub(sub, s)
        return LOCAL_TS.sub(lambda m: f"local:{ordinal('T', m.group(1))}", s)

    def walk(x: Any, key: str | None = None) -> Any:
        if isinstance(x, dict):
            return {k: walk(x[k], k) for k in sorted(x)}
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        if key in ID_FIELDS and isinstance(x, int) and not isinstance(x, bool):
            return ordinal(ID_FIELDS[key], x)
        if isinstance(x, str):
            return text(x)
        if isinstance(x, float):  # libm's last digit differs between machines' CPUs
            return float(f"{x:.12g}")
        return x

    return walk(doc)


def first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r:.120} != {type(b).__name__} {b!r:.120}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in the {'golden' if k in a else 'new'} file"
            if (found := first_difference(a[k], b[k], f"{path}.{k}")) is not None:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if (found := first_difference(x, y, f"{path}[{i}]")) is not None:
                return found
        return None if len(a) == len(b) else f"{path}: {len(a)} items != {len(b)}"
    return None if a == b else f"{path}: {a!r:.200} != {b!r:.200}"


def compare_golden(path: Path, text: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}: run with OMNI_UPDATE_GOLDEN=1 to write it"
    golden = path.read_text(encoding="utf-8")
    if golden == text:
        return
    where = first_difference(json.loads(golden), json.loads(text))
    diff = "".join(
        list(
            difflib.unified_diff(
                golden.splitlines(True), text.splitlines(True), "golden", "now", n=2
            )
        )[:60]
    )
    pytest.fail(f"{path.name} differs at {where}\n{diff}", pytrace=False)


# ---------------------------------------------------------------- scenarios
@pytest.fixture
def scenario(db, tmp_path, monkeypatch) -> Scenario:
    """A clean DB and settings pinned: links on (report, Grafana, commit compare), no Slack (the
    local outbox), no buttons, the shipped policy, no triage delay unless a scenario sets one."""
    for name in list(os.environ):
        if name.startswith("OMNI_") and name not in ("OMNI_DATABASE_URL", "OMNI_HOME"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OMNI_PUBLIC_URL", "https://airflow.example.org")
    monkeypatch.setenv("OMNI_GRAFANA_PUBLIC_URL", "https://grafana.example.org")
    monkeypatch.setenv("OMNI_REPO_URL", "https://github.com/example/vllm-omni")
    monkeypatch.setenv("OMNI_ALERT_TRIAGE_DELAY_S", "0")
    get_settings.cache_clear()
    return Scenario(db, tmp_path)


def test_open_on_one_night(scenario: Scenario) -> None:
    """A night REGRESSED far past confirm_p opens an alert on its own; its range starts at
    the quiet night before."""
    scenario.night(0, {DEFAULT: SAME})
    scenario.night(1, {DEFAULT: REGRESS})
    scenario.check("open_on_one_night")


def test_open_on_two_pooled_nights(scenario: Scenario) -> None:
    """Two weak REGRESSED nights in a row: the first alone is unconfirmed (dashboards only),
    the two pooled confirm the second, which opens."""
    scenario.night(0, {DEFAULT: WEAK})
    scenario.night(1, {DEFAULT: WEAK})
    scenario.check("open_on_two_pooled_nights")


def test_still_regressed_held_then_resolved(scenario: Scenario) -> None:
    """Open, REGRESSED again (update + reply), two quiet nights (held: stays open, says so),
    the third rules the regression out (resolved)."""
    scenario.night(0, {DEFAULT: SAME})
    for i in (1, 2):
        scenario.night(i, {DEFAULT: REGRESS})
    for i in (3, 4, 5):
        scenario.night(i, {DEFAULT: SAME})
    scenario.check("still_regressed_held_then_resolved")


def test_backfill_withdraws_the_opener(scenario: Scenario) -> None:
    """Nights 1 and 3 weak: pooled within the window, night 3 opens. Night 2 decided late
    (SAME) breaks the pair: night 3 is no longer confirmed, its alert is withdrawn."""
    scenario.night(1, {DEFAULT: WEAK})
    scenario.night(3, {DEFAULT: WEAK})
    scenario.night(2, {DEFAULT: SAME})
    scenario.check("backfill_withdraws_the_opener")


def test_backfill_confirms_a_later_night(scenario: Scenario) -> None:
    """Night 2 weak alone (unconfirmed); night 1 decided late and weak too: replayed, night 2
    confirms and opens."""
    scenario.night(2, {DEFAULT: WEAK})
    scenario.night(1, {DEFAULT: WEAK})
    scenario.check("backfill_confirms_a_later_night")


def test_invalid_then_only_a_new_commit_reopens(scenario: Scenario) -> None:
    """Marked invalid by a person: the same commit regressing again opens nothing, a new
    commit opens a new alert."""
    scenario.night(0, {DEFAULT: SAME})
    scenario.night(1, {DEFAULT: REGRESS}, commit="bad0001")
    (alert_id,) = [r["alert_id"] for r in scenario.db.execute("SELECT alert_id FROM omni.alert")]
    scenario.db.commit()
    out = invoke("alerts", "invalid", str(alert_id), "--by", "bob", "--note", "bad GPU", "--json")
    scenario.record("alerts invalid (the regression alert)", json.loads(out))
    scenario.night(2, {DEFAULT: REGRESS}, commit="bad0001")
    scenario.night(3, {DEFAULT: REGRESS}, commit="new0002")
    scenario.check("invalid_then_only_a_new_commit_reopens")


def test_infra_nights_beside_an_open_regression(scenario: Scenario) -> None:
    """The rebase missing two nights: an INFRA alert opens, then says still; the regression
    alert is left as it is; the next decided night clears INFRA and holds the regression."""
    scenario.night(0, {DEFAULT: SAME})
    scenario.night(1, {DEFAULT: REGRESS})
    scenario.night(2, {DEFAULT: MISSING})
    scenario.night(3, {DEFAULT: MISSING})
    scenario.night(4, {DEFAULT: SAME})
    scenario.check("infra_nights_beside_an_open_regression")


def _dispatch(scenario: Scenario) -> None:
    scenario.record("alerts dispatch", json.loads(invoke("alerts", "dispatch", "--json")))


@pytest.mark.parametrize("delay", [0, 1200])
def test_a_rebase_regressing_three_series_is_one_group(
    scenario: Scenario, monkeypatch, delay: int
) -> None:
    """Three series on two lanes regress on one rebase range: one group (formed by the
    second, its pending post rewritten by the third), delivered; a fourth series, INFRA that
    night, regresses the next and joins the range; then every member recovers and the group
    closes. With a triage delay the posts are held at dispatch, so later changes rewrite the
    pending post instead of updating a delivered one."""
    monkeypatch.setenv("OMNI_ALERT_TRIAGE_DELAY_S", str(delay))
    get_settings.cache_clear()
    everyone = (S1, S2, S3, S4)
    scenario.night(-1, dict.fromkeys(everyone, SAME), commit="0009abcd")
    scenario.night(0, {S1: REGRESS, S2: REGRESS, S3: REGRESS, S4: MISSING}, commit="0010abcd")
    _dispatch(scenario)
    scenario.night(1, {S1: SAME, S2: SAME, S3: SAME, S4: REGRESS}, commit="0011abcd")
    _dispatch(scenario)
    for i in (2, 3, 4):
        scenario.night(i, dict.fromkeys(everyone, SAME), commit=f"{i + 10:04d}abcd")
    _dispatch(scenario)
    scenario.check(f"group_of_three_series_delay_{delay}")


def test_a_run_group_night(scenario: Scenario) -> None:
    """Two seeds a side: the permutation test decides; one run-group REGRESSED night never
    confirms alone, two in a row do; quiet group nights resolve as SAME counts."""
    seeds = (0, 1)
    scenario.night(0, {DEFAULT: SAME}, seeds=seeds)
    scenario.night(1, {DEFAULT: REGRESS}, seeds=seeds)
    scenario.night(2, {DEFAULT: REGRESS}, seeds=seeds)
    for i in (3, 4, 5):
        scenario.night(i, {DEFAULT: SAME}, seeds=seeds)
    scenario.check("run_group")


def test_a_multiple_choice_series(scenario: Scenario) -> None:
    """daily_omni on its demo set, run by `bench` against the simulator's profiles: the
    rebase answering as main (UNKNOWN at 48 questions), then as the rebase profile (opens on
    the second night), then as main again: held until three quiet nights pooled rule the
    drop out (three for every family now: the floor is chosen from ψ/n, not per family)."""
    series = Series("daily_omni")
    profiles = ["simulator:main", "simulator:rebase", "simulator:rebase"]
    profiles += ["simulator:main"] * 4
    for i, rebase in enumerate(profiles):
        night = str(D0 + dt.timedelta(days=i))
        for branch, target in (("main", "simulator:main"), ("rebase", rebase)):
            invoke(
                "bench",
                "--benchmark",
                "daily_omni",
                "--target",
                target,
                "--branch",
                branch,
                "--commit",
                f"{branch}{i:04d}",
                "--nightly",
                night,
            )
        scenario.record(
            f"night {i} {series.label}: rebase as {rebase}",
            gate_cli(scenario.db, dt.date.fromisoformat(night), series),
        )
    scenario.check("multiple_choice_daily_omni")
