"""The provisioned freshness alert (dashboards/provisioning/alerting/): a file Grafana's alerting
provisioning accepts (its required fields and types, the datasource the dashboards use, a
contact point from the environment), whose query, run on the migrated results schema as the
dashboards' read-only role, returns a row for a series with no decision for 26 hours and none
for a fresh one."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

PROVISIONING = Path(__file__).resolve().parents[2] / "dashboards" / "provisioning"
ALERTING = PROVISIONING / "alerting"
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
ENV_REF = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def _files() -> list[Path]:
    return sorted(ALERTING.glob("*.y*ml"))


def _doc() -> dict[str, Any]:
    (path,) = _files()
    return yaml.safe_load(path.read_text())


def _datasource_uids() -> set[str]:
    docs = [yaml.safe_load(p.read_text()) for p in (PROVISIONING / "datasources").glob("*.yaml")]
    return {d["uid"] for doc in docs for d in doc["datasources"]}


def _require(obj: dict[str, Any], where: str, **fields: type | tuple[type, ...]) -> list[str]:
    return [
        f"{where}.{name}: missing or not {kind}"
        for name, kind in fields.items()
        if not isinstance(obj.get(name), kind)
    ]


def format_errors(doc: dict[str, Any], datasources: set[str]) -> list[str]:
    """What Grafana's file provisioning of alerting would refuse, or would load to no effect:
    apiVersion 1; each group with a name, folder and interval; each rule with a uid, title,
    condition naming one of its queries, data (datasource queries and expressions), `for`,
    annotations, and states Grafana knows; each contact point with receivers of a type and
    settings; a rule routed to a contact point the file defines."""
    errors = [] if doc.get("apiVersion") == 1 else ["apiVersion: not 1"]
    points = {c.get("name"): c for c in doc.get("contactPoints") or []}
    for name, point in points.items():
        errors += _require(point, f"contactPoints[{name}]", orgId=int, name=str, receivers=list)
        for r in point.get("receivers") or []:
            errors += _require(
                r, f"contactPoints[{name}].receiver", uid=str, type=str, settings=dict
            )
    uids: set[str] = set()
    for group in doc.get("groups") or []:
        g = f"groups[{group.get('name')}]"
        errors += _require(group, g, orgId=int, name=str, folder=str, interval=str, rules=list)
        if not DURATION.match(str(group.get("interval"))):
            errors.append(f"{g}.interval: not a duration")
        for rule in group.get("rules") or []:
            r = f"{g}.rules[{rule.get('uid')}]"
            errors += _require(
                rule, r, uid=str, title=str, condition=str, data=list, annotations=dict
            )
            if rule.get("uid") in uids or not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", rule["uid"]):
                errors.append(f"{r}.uid: duplicate or not a Grafana uid")
            uids.add(rule["uid"])
            if not DURATION.match(str(rule.get("for"))):
                errors.append(f"{r}.for: not a duration")
            if rule.get("noDataState", "NoData") not in {"OK", "NoData", "Alerting", "KeepLast"}:
                errors.append(f"{r}.noDataState: unknown")
            if rule.get("execErrState", "Error") not in {"OK", "Error", "Alerting", "KeepLast"}:
                errors.append(f"{r}.execErrState: unknown")
            refs = set()
            for q in rule.get("data") or []:
                errors += _require(q, f"{r}.data", refId=str, datasourceUid=str, model=dict)
                refs.add(q.get("refId"))
                if q.get("datasourceUid") == "__expr__":
                    if q["model"].get("expression") not in refs - {q["refId"]}:
                        errors.append(f"{r}.data[{q['refId']}]: expression of no earlier query")
                elif q.get("datasourceUid") not in datasources:
                    errors.append(f"{r}.data[{q['refId']}]: datasource not provisioned")
                elif not isinstance(q.get("relativeTimeRange"), dict):
                    errors.append(f"{r}.data[{q['refId']}]: no relativeTimeRange")
            if rule.get("condition") not in refs:
                errors.append(f"{r}.condition: names no query")
            receiver = (rule.get("notification_settings") or {}).get("receiver")
            if receiver not in points:
                errors.append(f"{r}: routed to no contact point of this file")
    return errors


def test_the_alert_file_is_grafana_provisioning_with_its_contact_point_from_the_env() -> None:
    assert len(_files()) == 1
    doc = _doc()
    assert format_errors(doc, _datasource_uids()) == []
    (point,) = doc["contactPoints"]
    (receiver,) = point["receivers"]
    assert receiver["settings"]["url"] == "${OMNI_ALERT_WEBHOOK_URL}"
    # Grafana expands $VAR and ${VAR} anywhere in the file: the only one is the webhook's URL,
    # every other dollar (alert templates) is escaped as $$.
    text = _files()[0].read_text().replace("$$", "")
    assert {a or b for a, b in ENV_REF.findall(text)} == {"OMNI_ALERT_WEBHOOK_URL"}


def test_the_format_check_can_fail() -> None:
    doc = _doc()
    rule = doc["groups"][0]["rules"][0]
    broken = yaml.safe_load(yaml.safe_dump(doc))
    b = broken["groups"][0]["rules"][0]
    del b["title"]
    b["for"] = "26 hours"
    b["condition"] = "C"
    b["data"][0]["datasourceUid"] = "grafana-postgres"
    b["notification_settings"]["receiver"] = "slack"
    where = f"groups[{doc['groups'][0]['name']}].rules[{rule['uid']}]"
    assert format_errors(broken, _datasource_uids()) == [
        f"{where}.title: missing or not <class 'str'>",
        f"{where}.for: not a duration",
        f"{where}.data[A]: datasource not provisioned",
        f"{where}.condition: names no query",
        f"{where}: routed to no contact point of this file",
    ]


def _stale_sql() -> str:
    (rule,) = _doc()["groups"][0]["rules"]
    (query,) = [q for q in rule["data"] if q["datasourceUid"] != "__expr__"]
    return str(query["model"]["rawSql"])


def _decide(db: psycopg.Connection, benchmark: str, lane: str, age: dt.timedelta) -> None:
    db.execute(
        "INSERT INTO omni.gate_decision (benchmark, model, lane, nightly, candidate_branch,"
        " baseline_branch, variant, policy_version, verdict, policy, decided_at)"
        " VALUES (%s, 'Qwen/Qwen3-Omni-30B-A3B-Instruct', %s, (now() - %s)::date, 'main',"
        " 'v0.1', 'default', %s, 'SAME', '{}'::jsonb, now() - %s)",
        (benchmark, lane, age, f"p-{age.total_seconds():.0f}", age),
    )


def test_the_query_returns_a_row_for_a_stale_series_and_none_for_a_fresh_one(db) -> None:
    _decide(db, "seed_tts_en", "cuda-h100x2", dt.timedelta(hours=50))  # stale: last night missed
    _decide(db, "seed_tts_en", "cuda-h100x2", dt.timedelta(hours=27))
    _decide(db, "seed_tts_zh", "cuda-h100x2", dt.timedelta(hours=30))  # fresh: decided 2 h ago
    _decide(db, "seed_tts_zh", "cuda-h100x2", dt.timedelta(hours=2))
    _decide(db, "seed_tts_en", "rocm-mi300x", dt.timedelta(days=20))  # retired a while ago
    db.commit()
    with db.transaction():
        db.execute("SET LOCAL ROLE omni_reader")  # what Grafana's datasource logs in as
        rows = db.execute(_stale_sql()).fetchall()
    assert [(r["series"], r["variant"], round(r["hours_since_decision"])) for r in rows] == [
        ("seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|cuda-h100x2", "default", 27)
    ]
    # The rule's threshold fires on that row, and on nothing when every series is fresh.
    (rule,) = _doc()["groups"][0]["rules"]
    (threshold,) = [q for q in rule["data"] if q["refId"] == rule["condition"]]
    (condition,) = threshold["model"]["conditions"]
    assert condition["evaluator"] == {"type": "gt", "params": [26]}
    assert all(r["hours_since_decision"] > 26 for r in rows)
    assert rule["noDataState"] == "OK"
    _decide(db, "seed_tts_en", "cuda-h100x2", dt.timedelta(hours=1))
    db.commit()
    with db.transaction():
        db.execute("SET LOCAL ROLE omni_reader")
        assert db.execute(_stale_sql()).fetchall() == []


@pytest.mark.parametrize("hours", [25, 26.5])
def test_the_threshold_is_twenty_six_hours(db, hours: float) -> None:
    _decide(db, "seed_tts_en", "cuda-h100x2", dt.timedelta(hours=hours))
    db.commit()
    rows = db.execute(_stale_sql()).fetchall()
    assert len(rows) == (1 if hours > 26 else 0)
