"""(b) Upstream's own benchmark request function against our simulator gets the text and audio
our client gets. (c) Streams shaped as upstream's server emits them (role chunks, continuous
usage, audio metadata, finish_reason, a final usage chunk), replayed whole and in small TCP
pieces, are read identically by our client and by upstream's. The rules a harness row states
are replayed case by case in `test_client_rules.py`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from omni_tasks.evidence.audio import STORE_RATE
from omni_tasks.harness import LONGEST_CLIP_S, OUR_CLIENT, ClientRules, RetryRule, client_rules
from omni_tasks.synthesis.bounded import MAX_EVENT, MAX_STREAM_BYTES
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator
from tests.conformance.conftest import harness_request
from tests.conformance.replay import (
    LONG_CLIP_S,
    OK_HEAD,
    TEXT,
    ScriptedServer,
    body,
    one_long_chunk,
    our_client,
    pcm16,
    same_audio,
    server_stream,
)
from tests.conformance.upstream import Upstream

NO_RETRY = ClientRules(RetryRule("none", retries=0, delay_s=0.0))


# (b) ------------------------------------------------------------------------------------------
def test_b_upstreams_request_function_hears_what_our_client_hears(
    upstream: Upstream, prompt_wav: Path
) -> None:
    with running_simulator(SimulatorConfig("clean")) as url:
        ours = our_client(url, prompt_wav, NO_RETRY)
        theirs = harness_request(upstream, url, body(prompt_wav))
    assert ours.status == "ok" and theirs.success, theirs.error
    assert theirs.text.strip() == ours.thinker_text == TEXT
    same_audio(ours, theirs.pcm)


def test_b_stream_errors_count_alike(upstream: Upstream, row: str, prompt_wav: Path) -> None:
    """With the stream-errors profile some streams end in the server's error chunk: ours under
    the version's client rules fails exactly the clips upstream's client of that version fails
    (0.30 on: each such stream; 0.28, which read no error chunks: none, and it scores what
    arrived, as ours then does)."""
    rules = client_rules(row)
    failed_ours = failed_theirs = errored = 0
    with running_simulator(SimulatorConfig("stream-errors")) as url:
        for i in range(8):
            text = f"Sentence number {i} is read aloud now."
            ours = our_client(url, prompt_wav, rules, text)
            theirs = harness_request(upstream, url, body(prompt_wav, text))
            strict = our_client(url, prompt_wav, NO_RETRY, text)  # error chunks read: how many
            errored += strict.status == "request_failed"
            failed_ours += ours.status == "request_failed"
            failed_theirs += not theirs.success
            assert (ours.status == "request_failed") == (not theirs.success), (i, theirs.error)
            if theirs.success and theirs.pcm is not None:
                same_audio(ours, theirs.pcm)
    assert errored > 0
    assert failed_theirs == failed_ours == (errored if rules.error_chunks else 0)


# (c) ------------------------------------------------------------------------------------------
def test_c_server_shaped_streams_read_the_same_whole_and_in_pieces(
    upstream: Upstream, prompt_wav: Path
) -> None:
    payload = OK_HEAD + server_stream()
    results = []
    for piece in (None, 1009, 7):
        with ScriptedServer([payload], piece) as server:
            ours = our_client(server.url, prompt_wav, NO_RETRY)
            theirs = harness_request(upstream, server.url, body(prompt_wav))
        assert ours.status == "ok" and theirs.success, theirs.error
        assert ours.thinker_text == "Turn left at the light." == theirs.text.strip()
        same_audio(ours, theirs.pcm)
        results.append(pcm16(ours))
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert results[0].size == 2 * (STORE_RATE // 4)


# (e) the request deadline ---------------------------------------------------------------------
def test_e_the_request_deadline_is_the_versions(upstream: Upstream, row: str) -> None:
    """The client's whole-request deadline, read from the release's own code: 0.30 on,
    `_omni_request_timeout_s()` with no CLI override; 0.28, the `ClientTimeout(total=…)` its
    session is built with."""
    import ast

    source = upstream.source("vllm_omni.benchmarks.patch.patch")
    if upstream.version >= "0.30.0":
        fn = upstream.load("vllm_omni.benchmarks.patch.patch", ["_omni_request_timeout_s"])
        theirs = fn["_omni_request_timeout_s"]()
    else:
        (call,) = [
            n
            for n in ast.walk(ast.parse(source.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "ClientTimeout"
        ]
        (total,) = [k.value for k in call.keywords if k.arg == "total"]
        theirs = eval(compile(ast.Expression(total), "total", "eval"))  # a constant expression
    assert client_rules(row).timeout_s == theirs


# (f) how large an event may be ----------------------------------------------------------------
def test_an_event_may_hold_the_longest_clip_a_run_keeps() -> None:
    """A 900 s clip of 24 kHz 16-bit mono WAV in one event (base64 plus its chunk's JSON), and
    the stream around it: the audio up to the cap, one such event past it, and the rest."""
    wav = 44 + 2 * int(LONGEST_CLIP_S * 24_000)
    event = 4 * -(-wav // 3) + 4096
    assert 57_000_000 < event < MAX_EVENT
    assert 2 * event < MAX_STREAM_BYTES


def test_our_own_runs_read_a_whole_clip_in_one_event(prompt_wav: Path) -> None:
    """A 300 s clip in one event (what an `async_chunk: false` server sends) under the rules
    of a run with no harness version: kept up to that run's 60 s audio cap, not refused."""
    with ScriptedServer(list(one_long_chunk())) as server:
        got = our_client(server.url, prompt_wav, OUR_CLIENT)
    assert got.status == "over_long", got.detail
    assert got.audio is not None and got.audio.size == 60 * STORE_RATE
    assert got.audio_seconds == 60.0 < LONG_CLIP_S
