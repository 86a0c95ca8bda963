"""The upstream watch against a local PyPI simple index: releases newer than the harness table
are listed (yanked files and unparsable names left out) and raise one INFRA message a week."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from omni_tasks.harness import HARNESS
from omni_tasks.jobs.upstream_watch import newer, releases, watch
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.conformance.latest import sdist_sha256, to_check, vllm_sdists

SHA = {v: f"{i:x}" * 64 for i, v in enumerate(["0.30.0", "0.32.0rc1", "0.33.0", "0.34.0rc2"], 1)}
FILES = "https://files.example/packages"
OMNI_PAGE = "\n".join(
    [f'<a href="{FILES}/vllm_omni-{v}-py3-none-any.whl#sha256={h}">w</a>' for v, h in SHA.items()]
    + [
        f'<a href="{FILES}/vllm_omni-0.35.0-py3-none-any.whl#sha256={"e" * 64}" '
        'data-yanked="broken wheel">yanked</a>',
        f'<a href="{FILES}/vllm_omni-not.a.version-py3-none-any.whl#sha256={"f" * 64}">odd</a>',
        f'<a href="{FILES}/vllm_omni-0.36.0.tar.gz#sha256={"d" * 64}">sdist only</a>',
    ]
)
VLLM_PAGE = "\n".join(
    [
        f'<a href="{FILES}/vllm-{v}.tar.gz#sha256={h * 64}">s</a>'
        for v, h in [("0.32.0", "a"), ("0.34.0", "b"), ("0.33.0", "c"), ("0.35.0rc1", "d")]
    ]
    + [
        f'<a href="{FILES}/vllm-0.36.0.tar.gz#sha256={"e" * 64}" data-yanked="">yanked</a>',
        f'<a href="{FILES}/vllm-0.37.0-cp38-abi3-manylinux1_x86_64.whl#sha256={"f" * 64}">w</a>',
    ]
)


@pytest.fixture(scope="module")
def pypi() -> Iterator[str]:
    pages = {"vllm-omni": OMNI_PAGE, "vllm": VLLM_PAGE}

    async def simple(request):  # type: ignore[no-untyped-def]
        return HTMLResponse(pages[request.path_params["name"]])

    app = Starlette(routes=[Route("/simple/{name}/", simple)])
    with serve_in_thread(app) as url:
        yield url


def test_releases_newer_than_the_harness_table_are_listed(pypi: str) -> None:
    found = releases(pypi)
    assert [(r.version, r.prerelease) for r in found] == [
        ("0.30.0", False),
        ("0.32.0rc1", True),
        ("0.33.0", False),
        ("0.34.0rc2", True),
    ]
    assert found[2].wheel_sha256 == SHA["0.33.0"]
    new = newer(found, HARNESS)
    assert [r.version for r in new] == ["0.33.0", "0.34.0rc2"]
    assert [r.version for r in to_check(new)] == ["0.33.0", "0.34.0rc2"]
    assert [r.version for r in to_check(new[:1])] == ["0.33.0"]
    assert sdist_sha256(pypi, "vllm", "0.33.0") == "c" * 64
    with pytest.raises(LookupError, match=r"vllm-0\.99\.0\.tar\.gz"):
        sdist_sha256(pypi, "vllm", "0.99.0")


def test_conformance_latest_lists_vllms_sdists(pypi: str) -> None:
    """vLLM's releases by their sdists (its wheels are per platform), oldest first, a yanked
    one left out: what `make conformance-latest` compares with the pinned vLLM."""
    assert vllm_sdists(pypi) == {
        "0.32.0": "a" * 64,
        "0.33.0": "c" * 64,
        "0.34.0": "b" * 64,
        "0.35.0rc1": "d" * 64,
    }


def test_a_new_release_is_one_infra_message_a_week(db, pypi: str) -> None:
    assert watch(db, pypi, None, "2026-W49") == ["0.33.0", "0.34.0rc2"]
    assert watch(db, pypi, None, "2026-W49") == ["0.33.0", "0.34.0rc2"]
    sent = db.execute(
        "SELECT idempotency_key, payload FROM omni.alert_outbox "
        "WHERE idempotency_key LIKE 'upstream|%%'"
    ).fetchall()
    assert [m["idempotency_key"] for m in sent] == ["upstream|vllm-omni|releases|2026-W49"]
    text = str(sent[0]["payload"])
    assert "0.34.0rc2" in text and "make conformance-latest" in text
    assert "0.35.0" not in text  # yanked


def test_nothing_new_is_no_message(db, pypi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import omni_tasks.jobs.upstream_watch as w

    monkeypatch.setattr(w, "HARNESS", {**HARNESS, "0.34.0rc2": HARNESS["0.32.0rc1"]})
    assert watch(db, pypi, None, "2026-W50") == []
    assert db.execute("SELECT count(*) AS n FROM omni.alert_outbox").fetchone()["n"] == 0
