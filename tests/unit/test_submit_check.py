"""The submit check (issue 64) as a middleware in front of a stand-in API: a form the DAG's
first task would refuse is answered 400 naming its field and never reaches the API; a good
form, an unrelated request, an unauthorized caller and a config that cannot be read all pass
through unchanged; a body is read to a bound. The real api-server:
tests/reliability/test_submit_check_api.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from omni_tasks.ab.config import resolve_ab
from omni_tasks.dag_support.submit import FORMS, MAX_BODY, SubmitCheck, check
from omni_tasks.deployment.reading import ConfigError

BASE, HEAD = "1" * 40, "2" * 40
ALIASES = {"seed_tts_nightly", "seed_tts_bisect", "seed_tts_regrade"}  # renamed, one release
CONFIG = """
version: 2
lanes:
  cuda: {queue: default, pool: default_pool, gpus_per_server: 1}
defaults: {transcript_mode: true, seeds: [42], dataset: demo}
form_choices:
  targets: ["http://gpu-box.internal:8000"]
series:
  - {benchmark: seed_tts_en, lane: cuda, branches: [main, rebase], baseline: main,
     targets: {main: 'simulator:main', rebase: 'simulator:rebase'}}
ab: {repos: [vllm-project/vllm-omni], series: 'seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|cuda'}
"""
GOOD_AB = {"repo": "vllm-project/vllm-omni", "pr": 7, "base_sha": BASE, "head_sha": HEAD}
# (dag id, conf, the field named): each a form the DAG's first task refuses.
HOSTILE = [
    ("omni_nightly", {"gpu_hours": 1}, "gpu_hours"),
    ("seed_tts_nightly", {"gpu_hours": 1}, "gpu_hours"),  # an alias is checked as its DAG is
    ("seed_tts_bisect", {"history": [BASE, HEAD], "lane": "rocm-mi300"}, "lane"),
    ("omni_nightly", {"lane": "cuda"}, "lane"),
    ("omni_nightly", {"targets": {"main": "http://evil.example/"}}, "targets.main"),
    ("omni_nightly", {"limit": float("nan")}, "limit"),
    ("omni_bisect", {"history": [BASE, HEAD], "lane": "rocm-mi300"}, "lane"),
    ("omni_bisect", {"history": [BASE, HEAD], "target": "http://evil.example/"}, "target"),
    ("omni_ablate", {"baseline_target": "http://evil.example/"}, "baseline_target"),
    ("omni_ab", {**GOOD_AB, "repo": "someone/else"}, "repo"),
    ("omni_ab", {**GOOD_AB, "target": "file:///etc/passwd"}, "target"),
    ("omni_ab", {**GOOD_AB, "pr": 2**40}, "pr"),
    ("omni_regrade", {"run_key": "r1", "model": "/etc/passwd"}, "model"),
]
GOOD = [
    ("omni_nightly", {}),
    (
        "omni_nightly",
        {"targets": {"main": "http://gpu-box.internal:8000", "rebase": "simulator:rebase"}},
    ),
    ("omni_bisect", {"history": [BASE, HEAD], "target": "http://gpu-box.internal:8000"}),
    ("omni_ablate", {"nightly": "2026-11-20"}),
    ("omni_ab", GOOD_AB),
    ("omni_regrade", {"run_key": "r1", "backend": "whisper"}),
]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(CONFIG)
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", str(path))
    return path


class Api:
    """A stand-in for Airflow's API: records what reached it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def app(self) -> Starlette:
        async def any_path(request: Request) -> JSONResponse:
            self.bodies.append(await request.body())
            return JSONResponse({"reached": request.url.path})

        return Starlette(routes=[Route("/{p:path}", any_path, methods=["GET", "POST"])])


def client(
    api: Api,
    *,
    allowed: bool = True,
    variable: Callable[[], str | None] = lambda: None,
    max_body: int = MAX_BODY,
) -> TestClient:
    async def authorize(scope: object, dag_id: str) -> bool:
        return allowed

    app = SubmitCheck(api.app(), authorize=authorize, variable=variable, max_body=max_body)
    return TestClient(app)


def trigger(c: TestClient, dag_id: str, conf: object) -> Any:  # the test client's response
    body = json.dumps({"logical_date": None, "conf": conf})  # NaN as the JSON literal NaN
    return c.post(f"/api/v2/dags/{dag_id}/dagRuns", content=body)


def test_every_form_taking_dag_is_checked() -> None:
    assert set(FORMS) == {
        "omni_nightly",
        "omni_bisect",
        "omni_ablate",
        "omni_ab",
        "omni_regrade",
        *ALIASES,
    }
    # Each of them has a form (Params), the others none: a new form-taking DAG must be listed.
    dags = Path(__file__).resolve().parents[2] / "dags"
    with_params = {p.stem for p in dags.glob("*.py") if "params." in p.read_text()}
    assert with_params == set(FORMS) - ALIASES


@pytest.mark.parametrize(("dag_id", "conf", "field"), HOSTILE)
def test_a_form_the_task_refuses_is_refused_at_submit(
    config: Path, dag_id: str, conf: dict, field: str
) -> None:
    api = Api()
    r = trigger(client(api), dag_id, conf)
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field, r.json()
    assert r.json()["detail"].startswith(f"trigger form: {field}")
    assert api.bodies == []  # Airflow never saw it: no run


@pytest.mark.parametrize(("dag_id", "conf"), GOOD)
def test_a_good_form_reaches_the_api_unchanged(config: Path, dag_id: str, conf: dict) -> None:
    api = Api()
    body = json.dumps({"logical_date": None, "conf": conf}).encode()
    r = client(api).post(f"/api/v2/dags/{dag_id}/dagRuns", content=body)
    assert r.status_code == 200, r.text
    assert api.bodies == [body]


def test_a_backfills_conf_is_the_same_form(config: Path) -> None:
    api = Api()
    c = client(api)
    body = {"dag_id": "omni_nightly", "from_date": "2026-11-01T00:00:00Z"}
    r = c.post("/api/v2/backfills", json={**body, "dag_run_conf": {"lane": "cuda"}})
    assert (r.status_code, r.json()["field"]) == (400, "lane")
    assert c.post("/api/v2/backfills", json={**body, "dag_run_conf": {}}).status_code == 200
    other = {**body, "dag_id": "someone_elses", "dag_run_conf": {"lane": "x"}}
    assert c.post("/api/v2/backfills", json=other).status_code == 200
    assert len(api.bodies) == 2


def test_the_check_reads_the_variable_first(config: Path) -> None:
    """The Airflow Variable (here a YAML text) wins over OMNI_NIGHTLY_CONFIG, as in the task."""
    api = Api()
    yaml = CONFIG.replace("http://gpu-box.internal:8000", "http://other-box.internal:8000")
    conf = {"history": [BASE, HEAD], "target": "http://gpu-box.internal:8000"}
    r = trigger(client(api, variable=lambda: yaml), "omni_bisect", conf)
    assert (r.status_code, r.json()["field"]) == (400, "target")


def test_what_the_check_does_not_own_passes_untouched(config: Path) -> None:
    api = Api()
    c = client(api, max_body=1000)
    big = b"x" * 5000  # beyond the bound: not ours, so never read
    assert c.post("/api/v2/dags/omni_freshness/dagRuns", content=big).status_code == 200
    assert c.post("/api/v2/dags/omni_nightly/dagRuns/list", content=big).status_code == 200
    assert c.post("/omni-github/webhook", content=big).status_code == 200
    assert c.get("/api/v2/dags/omni_nightly/dagRuns").status_code == 200
    assert api.bodies == [big, big, big, b""]


def test_a_body_is_read_to_a_bound(config: Path) -> None:
    api = Api()
    c = client(api, max_body=1000)
    padded = json.dumps({"logical_date": None, "conf": {"lane": "cuda", "pad": "x" * 2000}})
    r = c.post("/api/v2/dags/omni_nightly/dagRuns", content=padded)
    assert r.status_code == 413

    def chunks() -> Iterator[bytes]:  # no content-length: streamed
        yield b'{"conf": {"pad": "'
        for _ in range(100):
            yield b"x" * 100

    r = c.post("/api/v2/dags/omni_nightly/dagRuns", content=chunks())
    assert r.status_code == 413
    assert api.bodies == []


def test_a_caller_airflow_would_refuse_gets_airflows_answer(config: Path) -> None:
    """The check answers only a caller who may trigger the DAG: its refusal names what the
    config offers, so anyone else gets Airflow's own 401/403."""
    api = Api()
    r = trigger(client(api, allowed=False), "omni_nightly", {"targets": {"main": "x"}})
    assert r.status_code == 200 and len(api.bodies) == 1


def test_a_config_problem_blocks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreadable config, a broken one or an unreadable Variable: the request goes to
    Airflow unchanged (the task reports the config); so does a body Airflow will refuse."""
    api = Api()
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", str(tmp_path / "missing.yaml"))
    assert trigger(client(api), "omni_bisect", {"lane": "x"}).status_code == 200
    (tmp_path / "broken.yaml").write_text("version: 2\nseries: {")
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", str(tmp_path / "broken.yaml"))
    assert trigger(client(api), "omni_ab", {"repo": "x/y"}).status_code == 200

    def down() -> str:
        raise OSError("metadata DB unreachable")

    assert trigger(client(api, variable=down), "omni_nightly", {"x": 1}).status_code == 200
    c = client(api)
    assert c.post("/api/v2/dags/omni_nightly/dagRuns", content=b"{not json").status_code == 200
    assert trigger(c, "omni_nightly", ["not", "a", "mapping"]).status_code == 200
    assert len(api.bodies) == 5


def test_the_ab_form_is_held_to_forms_schema(config: Path) -> None:
    """resolve_ab (the omni_ab task) holds the form to forms.FIELDS["ab"], as its Params do."""
    assert resolve_ab(GOOD_AB, None).pr == 7
    for bad, field in (
        ({"pr": 2**40}, "pr"),
        ({"base_sha": "A" * 40}, "base_sha"),
        ({"series": "x" * 400}, "series"),
        ({"lane": "cuda"}, "lane"),
    ):
        with pytest.raises(ConfigError, match=f"trigger form: {field}"):
            resolve_ab({**GOOD_AB, **bad}, None)
    assert check("omni_ab", {**GOOD_AB, "pr": None, "series": ""}, None) is None
