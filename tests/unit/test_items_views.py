"""What `items chronic` prints of a ledger built by hand (rows, JSON, group lines), and the
deployment config's opt-in `ledger_digest:` section."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from omni_tasks.cli.common import _plain
from omni_tasks.cli.items import chronic_rows, group_line, ledger_json
from omni_tasks.deployment.reading import ConfigError
from omni_tasks.deployment.sections import ledger_digest
from omni_tasks.ledger.model import GroupShare, Ledger, LedgerItem
from omni_tasks.series import Series

D = dt.date(2026, 12, 1)


def item(utt: str, state: str, mode: str | None, low: float, **kw) -> LedgerItem:
    return LedgerItem(
        utt_id=utt,
        state=state,
        broken=kw.pop("broken", 10),
        nights=14,
        low=low,
        high=0.95,
        first_broken=D - dt.timedelta(days=10),
        last_broken=D,
        mode=mode,
        origin="thinker",
        leak_share=kw.pop("leak_share", 0.25),
        **kw,
    )


LEDGER = Ledger(
    "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|default",
    "seed_tts_en",
    "main",
    D - dt.timedelta(days=13),
    D,
    (
        item("f1", "flaky", "truncated", 0.1, broken=4),
        item("c1", "chronic", "answered", 0.55),
        item("c2", "chronic", "answered", 0.8, elsewhere=("seed_tts_en|M|mi300x",)),
        item("n1", "new", "over_generation", 0.6, since=D - dt.timedelta(days=3)),
        item("x1", "fixed", "answered", 0.0, broken=2, commit_range=("a" * 40, "b" * 40)),
        item("z1", "clean", None, 0.0, broken=0),
    ),
    (GroupShare("kind", "question", 3, 4, 20, 100, 0.0123),),
)


def test_rows_list_chronic_then_new_then_flaky_each_by_its_lower_bound() -> None:
    rows = chronic_rows(LEDGER, None)
    assert [r[0] for r in rows] == ["c2", "c1", "n1", "f1"]
    assert rows[0][2] == "10/14 (71 % [80 %, 95 %])" and rows[0][8] == "seed_tts_en · M · mi300x"
    assert rows[2][7] == "2026-11-28"  # chronic since
    assert [r[0] for r in chronic_rows(LEDGER, "answered")] == ["c2", "c1"]


def test_json_carries_every_listed_item_the_fixed_ones_and_the_groups() -> None:
    doc = json.loads(
        json.dumps(ledger_json("label", LEDGER.series_key, LEDGER, None), default=_plain)
    )
    assert [i["utt_id"] for i in doc["items"]] == ["c2", "c1", "n1", "f1"]  # as the table
    assert doc["fixed"][0]["range"] == "aaaaaaaaaaaa..bbbbbbbbbbbb"
    c1 = doc["items"][1]
    assert (c1["mode"], c1["state"], c1["low"]) == ("answered", "chronic", 0.55)
    assert abs(c1["rate"] - 10 / 14) < 1e-12
    assert doc["groups"][0]["value"] == "question"
    assert doc["headline"].startswith("3 chronic (2 answered, 1 over_generation), 1 flaky")


def test_a_group_line_sets_its_share_of_the_chronic_set_against_the_suite() -> None:
    assert group_line(LEDGER.groups[0]) == (
        "kind=question: 3 of 4 chronic items (75 %), 20 of 100 of the suite (20 %), exact p 0.012"
    )


def test_the_digest_is_opt_in_per_series(tmp_path) -> None:
    assert ledger_digest("version: 2\nseries: []\n").opted_in() == []
    key = "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|default"
    got = ledger_digest(
        f"version: 2\nseries: []\nledger_digest: {{series: ['{key}'], nights: 14}}\n"
    )
    assert got.opted_in() == [Series.parse(key)] and got.nights == 14 and got.branch == "main"
    with pytest.raises(ConfigError, match="ledger_digest"):
        ledger_digest("version: 2\nseries: []\nledger_digest: {series: ['seed_tts_en']}\n")
