"""A run's content hash is what a stored run is compared with when its key is written again:
its document's spelling never changes, whatever types the spec's JSON fields are given."""

from __future__ import annotations

import datetime as dt

from omni_tasks.records import ClipAudio, RunSpec
from omni_tasks.store.runs import content_of

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
