"""Multiple choice as upstream writes it: Daily-Omni and Video-MME items made by upstream's own
scorers (`compute_daily_omni_accuracy_metrics`, `compute_videomme_accuracy_metrics`, run
unmodified on requests and responses built here) are imported with the benchmark detected from
the file, their official figures reproduced, and two runs compared and gated: the McNemar
counts equal the counts taken from the two files' items independently, although the two runs
sampled the questions in different orders (so `request_id`s differ)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from scipy.stats import binomtest
from typer.testing import CliRunner

from omni_tasks.cli import app
from tests.conformance.conftest import request_function, request_input
from tests.conformance.upstream import WHEELS, Upstream
from tests.factories import write_json

# Video-MME's scorer and builders ship from vllm-omni 0.30 on.
WITH_VIDEOMME = [v for v in sorted(WHEELS) if Version(v) >= Version("0.30.0")]

runner = CliRunner()
DAILY = "vllm_omni.benchmarks.data_modules.daily_omni"
VIDEOMME = "vllm_omni.benchmarks.data_modules.videomme"
TASKS = ["Event Sequence", "AV Event Alignment", "Reasoning", "Inference"]


class Output:
    """vLLM's RequestFuncOutput, the fields the scorers read."""

    def __init__(self, text: str, success: bool = True) -> None:
        self.generated_text, self.success = text, success
        self.error = "" if success else "Server disconnected"


def questions(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [
        {
            "video": f"vid{i // 2:03d}",
            "task": TASKS[i % 4],  # two questions per video, of two task types
            "gold": "ABCD"[rng.randrange(4)],
            "category": ["Sports", "Education", ""][i % 3],
            "duration": ["30s", "60s"][i % 2],
            "domain": ["Knowledge", "Film"][i % 2],
            "qid": f"{i // 3:03d}-{i % 3 + 1}",
        }
        for i in range(n)
    ]


def answer(q: dict[str, Any], right: bool, i: int) -> Output:
    wrong = "ABCD"[("ABCD".index(q["gold"]) + 1) % 4]
    letter = q["gold"] if right else wrong
    if i == 5:
        return Output("", success=False)  # the request failed
    if i % 13 == 7 and not right:
        return Output("I cannot tell from the video.")  # no letter: a parse failure, wrong
    return Output(f"答案：{letter}" if i % 5 == 0 else f"The answer is {letter}.")


def outcome_sets(n: int) -> tuple[list[bool], list[bool]]:
    """Baseline and candidate correctness: 9 questions regress, 3 improve."""
    base = [i % 4 != 0 for i in range(n)]
    cand = list(base)
    flips_down = [i for i in range(n) if base[i]][:9]
    flips_up = [i for i in range(n) if not base[i]][:3]
    for i in flips_down:
        cand[i] = False
    for i in flips_up:
        cand[i] = True
    return base, cand


def request_class(u: Upstream, module: str, name: str) -> Any:
    """Upstream's request dataclass. Its module imports vLLM's SampleRequest inside a
    try/except (an older vLLM fallback), so that one import is resolved here, the way the
    seed-TTS module (a plain top-level import) resolves it: from vLLM's own source."""
    sample_request = u.load(
        "vllm_omni.benchmarks.data_modules.seed_tts_dataset", ["SampleRequest"]
    )["SampleRequest"]
    u._space(module).setdefault("SampleRequest", sample_request)
    return u.load(module, [name])[name]


def daily_omni_fields(q: dict[str, Any]) -> dict[str, Any]:
    return {
        "daily_omni_gold_answer": q["gold"],
        "daily_omni_video_id": q["video"],
        "daily_omni_task_type": q["task"],
        "daily_omni_video_duration": q["duration"],
        "daily_omni_video_category": q["category"],
    }


def videomme_fields(q: dict[str, Any]) -> dict[str, Any]:
    return {
        "videomme_gold_answer": q["gold"],
        "videomme_video_id": q["video"],
        "videomme_question_id": q["qid"],
        "videomme_duration": "short",
        "videomme_domain": q["domain"],
        "videomme_sub_category": "Humanity",
        "videomme_task_type": q["task"],
    }


# family -> (upstream module stem, request class, scorer, the request's gold/label fields)
FAMILIES = {
    "daily_omni": (
        DAILY,
        "DailyOmniSampleRequest",
        "compute_daily_omni_accuracy_metrics",
        daily_omni_fields,
    ),
    "videomme": (
        VIDEOMME,
        "VideoMMESampleRequest",
        "compute_videomme_accuracy_metrics",
        videomme_fields,
    ),
}


def upstream_doc(
    u: Upstream, family: str, qs: list[dict[str, Any]], right: list[bool], order: list[int]
) -> dict[str, Any]:
    """The results file upstream's scorer writes for these answers, requests numbered in
    `order` (upstream numbers them in its shuffled sample order)."""
    module, cls, scorer, fields = FAMILIES[family]
    req_cls = request_class(u, f"{module}_dataset", cls)  # first: the scorer needs it
    fn = u.load(f"{module}_eval", [scorer])[scorer]

    def request(request_id: str, **labels: Any) -> Any:
        return req_cls(
            prompt="Q",
            prompt_len=1,
            expected_output_len=8,
            multi_modal_data=None,
            request_id=request_id,
            **labels,
        )

    reqs = [request(str(k), **fields(qs[i])) for k, i in enumerate(order)]
    outs = [answer(qs[i], right[i], i) for i in order]
    if family == "daily_omni":  # a row without gold: skipped, as upstream skips it
        reqs.append(
            request(
                "nogold",
                daily_omni_gold_answer="",
                daily_omni_video_id="vid999",
                daily_omni_task_type="Reasoning",
            )
        )
        outs.append(Output("A"))
    metrics = fn(reqs, outs, include_per_item=True)
    return {"date": "20261129-021500", "model_id": "Qwen/Qwen3-Omni-30B-A3B-Instruct", **metrics}


def independent_counts(base_doc: dict[str, Any], cand_doc: dict[str, Any], items: str, key):
    """McNemar's table from the two files' items alone: questions answered (no failed request)
    in both, paired by the question's identity."""

    def answered(doc: dict[str, Any]) -> dict[Any, bool]:
        return {
            key(x): x["correct"] for x in doc[items] if not x.get("skipped") and "error" not in x
        }

    b, c = answered(base_doc), answered(cand_doc)
    both = [q for q in b if q in c]
    regressed = sum(1 for q in both if b[q] and not c[q])
    improved = sum(1 for q in both if not b[q] and c[q])
    return len(both), regressed, improved


def import_file(path: Path, branch: str) -> str:
    commit = hashlib.sha1(branch.encode()).hexdigest()  # one commit per branch
    out = runner.invoke(
        app, ["import", "vllm-omni", str(path), "--branch", branch, "--commit", commit]
    )
    assert out.exit_code == 0, out.output
    return out.stdout.strip()


def test_daily_omni_runs_pair_by_video_and_task(upstream: Upstream, db, tmp_path: Path) -> None:
    check_family(upstream, tmp_path, "daily_omni", lambda x: (x["video_id"], x["task_type"]))


@pytest.mark.parametrize("upstream", WITH_VIDEOMME, indirect=True)
def test_videomme_runs_pair_by_question_id(upstream: Upstream, db, tmp_path: Path) -> None:
    check_family(upstream, tmp_path, "videomme", lambda x: x["question_id"])


def check_family(upstream: Upstream, tmp_path: Path, family: str, key: Any) -> None:
    items = f"{family}_eval_items"
    qs = questions(60)
    base_right, cand_right = outcome_sets(len(qs))
    order = list(range(len(qs)))
    base_doc = upstream_doc(upstream, family, qs, base_right, order)
    random.Random(3).shuffle(order)  # another seed: the same questions, other request ids
    cand_doc = upstream_doc(upstream, family, qs, cand_right, order)
    base_key = import_file(write_json(tmp_path / "base.json", base_doc), "main")
    cand_key = import_file(write_json(tmp_path / "cand.json", cand_doc), "rebase")
    assert base_key.startswith(f"{family}:") and cand_key.startswith(f"{family}:")

    stats = json.loads(runner.invoke(app, ["stats", base_key, "--json"]).stdout)
    prefix = family
    for figure in (
        "accuracy",
        "correct",
        "evaluated",
        "evaluated_ok",
        "request_failed",
        "parse_failed",
        "accuracy_incl_http_fail",
    ):
        name = f"{prefix}_{figure}"
        assert stats["official"][name] == pytest.approx(base_doc[name]), name
    assert stats["mean_wer"] is None and stats["capped_mean_wer"] is None  # no fake WER
    assert stats["accuracy"] == pytest.approx(base_doc[f"{prefix}_accuracy"])
    per_task = stats["breakdown"]["task"]
    upstream_task = (
        base_doc["daily_omni_per_task"] if family == "daily_omni" else base_doc["videomme_per_task"]
    )
    for task, cell in upstream_task.items():  # upstream's per-task counts: answered only
        ok, right = cell.get("total_ok", cell["total"]), cell.get("correct_ok", cell["correct"])
        mine = per_task.get(task, {"total": 0, "correct": 0})
        assert (mine["total"], mine["correct"]) == (ok, right), task

    n, regressed, improved = independent_counts(base_doc, cand_doc, items, key)
    assert regressed > improved > 0
    cmp = runner.invoke(app, ["compare", "--baseline", base_key, "--candidate", cand_key, "--json"])
    assert cmp.exit_code == 0, cmp.output
    result = json.loads(cmp.stdout)
    assert (result["n_paired"], result["regressed"], result["improved"]) == (n, regressed, improved)
    exact = binomtest(regressed, regressed + improved, 0.5, alternative="greater").pvalue
    assert result["mcnemar_p"] == pytest.approx(exact)
    assert result["delta_capped_mean_wer"] is None
    assert any(k.startswith("task:") for k in result["mode_shift"])

    night = dt.date(2026, 11, 29).isoformat()
    gate = runner.invoke(app, ["gate", "--benchmark", family, "--nightly", night, "--json"])
    assert gate.exit_code == 0, gate.output
    (decision,) = json.loads(gate.stdout)
    assert (decision["n_paired"], decision["regressed"], decision["improved"]) == (
        n,
        regressed,
        improved,
    )
    assert decision["mcnemar_p"] == pytest.approx(exact), decision["reasons"]


ANSWERS = [
    "A",
    "b.",
    " C) because the tone is high",
    "The answer is D.",
    "assistant\nB",
    "system\nuser\nassistant C",
    "答案：B",
    "选C",
    "I think (A)",
    "None of these",
    "",
    "ABCD",
    "Option B is right",
    "a",
    "The best answer is A, not B",
    "D:",
    "e",
    "Bb",
]


def test_daily_omni_questions_are_asked_and_read_as_upstream_does(upstream: Upstream) -> None:
    """Our Daily-Omni runner's prompt, system text and answer rule are upstream's own."""
    from types import SimpleNamespace

    from omni_tasks.benchmarks.multiple_choice import daily_omni
    from omni_tasks.benchmarks.multiple_choice.family import is_correct

    rules = upstream.load(
        f"{DAILY}_eval", ["extract_choice_letter_official", "evaluate_answer_official"]
    )
    for text in ANSWERS:
        assert daily_omni.extract_choice(text) == rules["extract_choice_letter_official"](text)
        for gold in ("A", " b ", "C"):
            predicted = daily_omni.extract_choice(text)
            assert is_correct(predicted, gold) == rules["evaluate_answer_official"](predicted, gold)
    module, cls = f"{DAILY}_dataset", "DailyOmniDataset"
    me = SimpleNamespace(
        input_mode="audio",
        _media_desc_for_official_prompt=upstream.method(
            module, cls, "_media_desc_for_official_prompt"
        ),
        _choices_repr_for_official_prompt=upstream.method(
            module, cls, "_choices_repr_for_official_prompt"
        ),
    )
    prompt = upstream.method(module, cls, "_official_daily_omni_user_prompt")
    choices = ("A. 220 Hz", "B. 440 Hz", " C. 660 Hz ", "D. 880 Hz")
    question = "Which pitch does the tone in the audio have?"
    for mode in ("audio", "all"):  # a root without video is asked in audio mode
        me.input_mode = mode
        assert daily_omni.user_prompt(question, choices, mode) == prompt(
            me, question, list(choices)
        )
    system = upstream.load(module, ["DAILY_OMNI_SYSTEM_TEXT"])["DAILY_OMNI_SYSTEM_TEXT"]
    assert system == daily_omni.SYSTEM_TEXT


def sent_body(upstream: Upstream, body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """What upstream's `async_request_openai_chat_omni_completions` posts for `body`'s messages
    with the nightly's extra body: captured by a loopback server that answers `[DONE]`."""
    import asyncio
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    import aiohttp

    seen: list[dict[str, Any]] = []

    class Capture(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fn = request_function(upstream)
    rfi = request_input(upstream, f"http://127.0.0.1:{server.server_port}", body, extra)

    async def go() -> None:
        async with aiohttp.ClientSession() as session:
            await fn(rfi, session)

    try:
        asyncio.run(go())
    finally:
        server.shutdown()
        thread.join(5)
    (sent,) = seen
    return sent


def test_daily_omni_requests_are_the_ones_upstreams_builder_makes(
    upstream: Upstream, tmp_path: Path
) -> None:
    """The request our Daily-Omni run sends for a demo item: upstream's own `DailyOmniDataset`
    methods (qwen packing, input mode `all`, inline local media, as the nightly runs them),
    unmodified, build the messages and the extra body from the same files; the output length
    is the dataset's default."""
    import types

    from omni_tasks.benchmarks.multiple_choice import daily_omni

    module, cls = f"{DAILY}_dataset", "DailyOmniDataset"
    root = daily_omni.ensure_demo_set(tmp_path)
    q = daily_omni.load_questions(root).items[0]
    assert q.video is not None  # the demo set has the video the nightly sends

    me = types.SimpleNamespace(
        pack_mode="qwen",
        input_mode="all",
        inline_local_video=True,
        video_dir=root / "Videos",
        dataset_path=None,
    )
    instance = (
        "_compose_daily_omni_multimodal",
        "_get_video_content",
        "_get_audio_content",
        "_lazy_ensure_hub_media_dir",
        "_resolve_local_video_path",
        "_resolve_local_audio_path",
        "_local_file_to_video_url_payload",
        "_local_file_to_audio_url_payload",
        "_build_daily_omni_openai_messages",
        "_official_daily_omni_user_prompt",
        "_system_text_for_pack_mode",
    )
    static = (
        "_official_video_relpath",
        "_official_audio_relpath",
        "_media_desc_for_official_prompt",
        "_choices_repr_for_official_prompt",
    )
    for name in instance:
        setattr(me, name, types.MethodType(upstream.method(module, cls, name), me))
    for name in static:
        setattr(me, name, upstream.method(module, cls, name))

    payload, extra, _ = me._compose_daily_omni_multimodal(q.video_id, None)
    theirs = me._build_daily_omni_openai_messages(payload, q.question, list(q.choices))
    ours = daily_omni.request_body(q, "Qwen/Qwen3-Omni-30B-A3B-Instruct", 42)
    assert ours["messages"] == theirs
    assert {k: ours[k] for k in extra} == extra  # mm_processor_kwargs: use_audio_in_video off
    assert ours["max_tokens"] == upstream.class_value(module, cls, "DEFAULT_OUTPUT_LEN")
    # The whole body upstream's `openai-chat-omni` request function sends for it (its own
    # payload, captured by a loopback server): the same fields with the same values — no
    # `seed`, which upstream never sends, though our run has one.
    sent = sent_body(upstream, ours, {**extra, "modalities": ["text"]})
    assert ours == sent


def test_minicpm_o_daily_omni_requests_are_the_ones_upstreams_builder_makes(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MiniCPM-o's Daily-Omni request, its recipe (test_minicpmo_4_5.py, #5606 / #5625:
    `--daily-omni-pack-mode minicpm-interleave`, input mode `all`, inline media, `--output-len
    512`, thinking off): upstream's own `DailyOmniDataset` methods in that pack mode, unmodified,
    reading audio with vLLM's own WAV loader, cut the same 1 fps frames and audio seconds from
    the same files and build the same messages and extra body, for a demo item, a 3.6 s clip of
    distinct frames with 44.1 kHz stereo audio (resampled; its last second short) and a 70 s
    clip (past 64 s: the 0.1 s grid); the whole body is what upstream's request function
    posts. A Qwen3-Omni body of the same item keeps Qwen's packing."""
    import shutil
    import sys
    import types

    import av
    import numpy as np
    import soundfile

    from omni_tasks.benchmarks.multiple_choice import daily_omni, interleave
    from omni_tasks.benchmarks.multiple_choice.family import demo_mp4

    # vLLM's soundfile loader (the `auto` chain's WAV path without torchcodec), from its sdist.
    upstream._space("vllm.multimodal.media.audio")["soundfile"] = soundfile
    upstream._space("vllm.multimodal.audio")["av"] = av
    load = upstream.load("vllm.multimodal.media.audio", ["load_audio_soundfile"])
    for name in ("vllm", "vllm.multimodal", "vllm.multimodal.media", "vllm.multimodal.media.audio"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["vllm.multimodal.media.audio"].load_audio = load["load_audio_soundfile"]  # type: ignore[attr-defined]

    demo = daily_omni.ensure_demo_set(tmp_path / "demo")
    root = tmp_path / "minicpm"
    rows = json.loads((demo / "qa.json").read_text())[:1]
    shutil.copytree(demo / "Videos" / rows[0]["video_id"], root / "Videos" / rows[0]["video_id"])
    rng = np.random.default_rng(5)
    for vid, seconds, fps, rate, channels in (
        ("av36", 3.6, 5, 44_100, 2),
        ("av70", 70, 2, 16_000, 1),
    ):
        folder = root / "Videos" / vid
        folder.mkdir(parents=True)
        frames = (
            np.full((16, 16, 3), (7 * i) % 256, dtype=np.uint8) for i in range(int(seconds * fps))
        )
        (folder / f"{vid}_video.mp4").write_bytes(demo_mp4(frames, fps, 16))
        noise = 0.3 * rng.standard_normal((int(seconds * rate), channels)).astype(np.float32)
        soundfile.write(folder / f"{vid}_audio.wav", noise, rate, subtype="PCM_16")
        rows.append({**rows[0], "video_id": vid})
    (root / "qa.json").write_text(json.dumps(rows))

    module, cls = f"{DAILY}_dataset", "DailyOmniDataset"
    me = types.SimpleNamespace(
        pack_mode="minicpm-interleave",
        input_mode="all",
        inline_local_video=True,
        video_dir=root / "Videos",
        dataset_path=None,
        _minicpm_interleave_cache={},
    )
    for name in (
        "_compose_daily_omni_multimodal",
        "_compose_minicpm_interleaved_multimodal",
        "_get_minicpm_interleaved_parts",
        "_lazy_ensure_hub_media_dir",
        "_resolve_local_video_path",
        "_resolve_local_audio_path",
        "_build_daily_omni_openai_messages",
        "_official_daily_omni_user_prompt",
        "_system_text_for_pack_mode",
    ):
        setattr(me, name, types.MethodType(upstream.method(module, cls, name), me))
    for name in (
        "_extract_minicpm_frame_audio_segments",
        "_official_video_relpath",
        "_official_audio_relpath",
        "_media_desc_for_official_prompt",
        "_choices_repr_for_official_prompt",
    ):
        setattr(me, name, upstream.method(module, cls, name))

    questions = daily_omni.load_questions(root).items
    pairs = []
    for q in questions:
        payload, extra, _ = me._compose_daily_omni_multimodal(q.video_id, None)
        assert payload is not None, q.key  # upstream drops an item it cannot cut
        theirs = me._build_daily_omni_openai_messages(payload, q.question, list(q.choices))
        ours = daily_omni.request_body(q, "openbmb/MiniCPM-o-4_5", 42)
        assert ours["messages"] == theirs, q.key
        assert {k: ours[k] for k in extra} == extra, q.key
        pairs.append(len(payload) // 2)
    assert pairs == [1, 4, interleave.MAX_FRAMES]  # 1 s; 3.6 s → 4 pairs; 70 s → the grid
    assert [m["role"] for m in ours["messages"]] == ["user"]  # MiniCPM's system text is empty
    assert ours["max_tokens"] == 512
    nightly = {"modalities": ["text"], "chat_template_kwargs": {"enable_thinking": False}}
    assert ours == sent_body(upstream, ours, {**extra, **nightly})
    qwen = daily_omni.request_body(questions[0], "Qwen/Qwen3-Omni-30B-A3B-Instruct", 42)
    assert [m["role"] for m in qwen["messages"]] == ["system", "user"]
    assert (qwen["max_tokens"], "chat_template_kwargs" in qwen) == (256, False)


@pytest.mark.parametrize("upstream", WITH_VIDEOMME, indirect=True)
def test_videomme_requests_are_the_ones_upstreams_builder_makes(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request our Video-MME run sends for each demo item: upstream's own
    `VideoMMEDataset` methods (minicpm-frames, 96 frames, inline media, as the nightly runs
    them), unmodified, sample and encode the same frames (the 120 s video through the 0.1 s
    grid and its seeks), and build the same messages and extra body; the answer rule is the
    official one."""
    import sys
    import types

    from omni_tasks.benchmarks.multiple_choice import videomme

    # Only the interleaved mode reads audio, through vLLM's loader, imported in the body.
    for name in ("vllm", "vllm.multimodal", "vllm.multimodal.media", "vllm.multimodal.media.audio"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))

    def load_audio(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("minicpm-frames reads no audio")

    sys.modules["vllm.multimodal.media.audio"].load_audio = load_audio  # type: ignore[attr-defined]
    module, cls = f"{VIDEOMME}_dataset", "VideoMMEDataset"
    root = videomme.ensure_demo_set(tmp_path)
    me = types.SimpleNamespace(
        pack_mode="minicpm-frames",
        max_frames=upstream.load(module, ["VIDEOMME_DEFAULT_MAX_FRAMES"])[
            "VIDEOMME_DEFAULT_MAX_FRAMES"
        ],
        inline_local_video=True,
        video_dir=root / "video",
        use_subtitle=False,
        _frame_cache={},
        _video_index=None,
    )
    for name in (
        "_compose_multimodal",
        "_get_minicpm_frame_parts",
        "_frame_cache_dir",
        "_cached_parts_from_disk",
        "_resolve_local_video_path",
        "_video_path_index",
        "_build_user_prompt",
        "_build_openai_messages",
    ):
        setattr(me, name, types.MethodType(upstream.method(module, cls, name), me))
    me._extract_frames_and_audio = types.MethodType(
        upstream.method(module, cls, "_extract_frames_and_audio").__func__, me
    )
    for name in ("_sample_timestamps", "_emit_media", "_format_options", "_normalize_fields"):
        setattr(me, name, upstream.method(module, cls, name))

    questions = videomme.load_questions(root).items
    assert {len(videomme.frame_urls(q.video)) for q in questions} == {4, 6, 96}
    for q in questions:
        row = next(
            r for r in json.loads((root / "rows.json").read_text()) if r["question_id"] == q.key
        )
        payload, extra = me._compose_multimodal(q.video_id)
        assert payload is not None, q.key  # upstream logs and drops an item it cannot decode
        theirs = me._build_openai_messages(
            payload, me._build_user_prompt(me._normalize_fields(row))
        )
        ours = videomme.request_body(q, "openbmb/MiniCPM-o-4_5", None)
        assert ours["messages"] == theirs, q.key
        assert {k: ours[k] for k in extra} == extra
    assert ours["max_tokens"] == upstream.class_value(module, cls, "DEFAULT_OUTPUT_LEN")
    assert ours["chat_template_kwargs"] == {"enable_thinking": False}  # the nightly's extra body

    rule = upstream.load(f"{VIDEOMME}_eval", ["extract_characters_regex"])
    for text in [*ANSWERS, "The best answer is C", "Answer: (D) because", "no letter " * 3]:
        assert videomme.extract_choice(text) == rule["extract_characters_regex"](text), text
    fmt = me._format_options
    for options in (["A. x", "B. y"], ["A.M. shift", "B. night"], ["x", "y", "z"]):
        assert videomme.format_options(tuple(options)) == fmt(options)
