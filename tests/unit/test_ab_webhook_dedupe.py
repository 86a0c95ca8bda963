"""The webhook's dedupe: one signed body re-sent under fresh `X-GitHub-Delivery` ids starts one
omni_ab run; a new head (or another PR) is a new run. The trigger here keeps Airflow's rule
(one dag run per run id) in a dict, so no metadata DB is needed."""

from __future__ import annotations

import hashlib
import hmac
import json

from fastapi.testclient import TestClient

from omni_tasks.ab.webhook import AlreadyHandled, run_id_of, webhook_app
from omni_tasks.contracts import JsonObject

SECRET = b"s3cret"
BASE, HEAD = "1" * 40, "2" * 40
REPO = "vllm-project/vllm-omni"


def event(head: str = HEAD, number: int = 7) -> bytes:
    return json.dumps(
        {
            "action": "labeled",
            "label": {"name": "omni-ab"},
            "repository": {"full_name": REPO},
            "pull_request": {
                "number": number,
                "base": {"sha": BASE},
                "head": {"sha": head, "repo": {"full_name": REPO}},
            },
        }
    ).encode()


def test_a_replayed_body_under_fresh_delivery_ids_starts_one_run() -> None:
    runs: dict[str, JsonObject] = {}

    def trigger(conf: JsonObject, key: str) -> str:
        run_id = run_id_of(conf, key)
        if run_id in runs:
            raise AlreadyHandled(run_id)
        runs[run_id] = conf
        return run_id

    client = TestClient(webhook_app(lambda: SECRET, trigger))

    def post(body: bytes, delivery: str) -> tuple[int, dict[str, object]]:
        sig = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        headers = {
            "x-github-event": "pull_request",
            "x-github-delivery": delivery,
            "x-hub-signature-256": sig,
        }
        r = client.post("/github", content=body, headers=headers)
        return r.status_code, r.json()

    first = post(event(), "d-1")
    assert first[0] == 202
    for delivery in ("d-2", "d-3", "0f1e2d3c-aaaa-bbbb-cccc-000000000000"):
        assert post(event(), delivery) == (
            200,
            {"triggered": first[1]["triggered"], "already": "handled"},
        )
    assert len(runs) == 1
    new_head = post(event(head="3" * 40), "d-4")
    other_pr = post(event(number=8), "d-5")
    assert new_head[0] == 202 and other_pr[0] == 202
    assert len(runs) == 3 and len(set(runs)) == 3
    assert sorted(str(c["head_sha"]) for c in runs.values()) == [HEAD, HEAD, "3" * 40]


def test_the_run_id_is_a_valid_airflow_run_id_for_any_repository_name() -> None:
    conf: JsonObject = {"repo": "a..b/c.d", "pr": 1, "base_sha": BASE, "head_sha": HEAD}
    run_id = run_id_of(conf, "a..b/c.d#1@" + HEAD)
    assert ".." not in run_id and "/" not in run_id and len(run_id) <= 250
