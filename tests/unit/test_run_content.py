"""A run's content hash is what a stored run is compared with when its key is written again:
its document's spelling never changes, whatever types the spec's JSON fields are given."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from omni_tasks.records import ClipAudio, ClipGrade, RunSpec
from omni_tasks.store.content import content_of
from omni_tasks.store.queries import sql

# Computed by the store before the spec's JSON fields were typed (LineageFlags, Execution,
# JsonObject): a run stored then, saved again with the same content, must still match.
STORED_DIGEST = "ad01b262702e1e954294036dabddd10bd80c753ed58ea6bb200bfe347e6c0d00"


def test_typed_json_fields_hash_as_stored_runs_did() -> None:
    spec = RunSpec(
        benchmark="seed_tts_en",
        nightly=dt.date(2026, 11, 28),
        branch="main",
        trigger="nightly",
        status="complete",
        n_expected=1,
        commit_sha="c0ffee",
        lineage={
            "differs_from_recorded_head": None,
            "reachable_from_baseline_head": False,
            "reconstructed_head": True,
        },
        config={"target": "http://x", "overrides": {"max_num_seqs": 4}, "seed_requested": 7},
        stack={"vllm": "0.1", "gpu": None, "deploy": {"platform": "cuda", "config": None}},
        execution={
            "gpu_class": "H100",
            "client_concurrency": 10,
            "audio_cap_s": 60.0,
            "seed_sent": True,
            "stage_settings": None,
        },
    )
    clip = ClipAudio("u1", 0, "hello", "ok", audio_seconds=1.5)
    assert content_of(spec, [clip], None).digest == STORED_DIGEST


def test_copy_statements_list_the_clip_rows_fields_in_order() -> None:
    """store.runs writes a COPY row as the id, then the row's fields in declaration order."""
    for name, cls, head in (
        ("copy_clip_audio", ClipAudio, "run_id"),
        ("copy_clip_grade", ClipGrade, "grading_id"),
    ):
        listed = re.search(r"\(([^)]*)\)", sql(name))
        assert listed is not None
        columns = [c.strip() for c in listed.group(1).split(",")]
        assert columns == [head, *(f.name for f in dataclasses.fields(cls))]
