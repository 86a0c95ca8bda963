"""Daily-Omni (audio-visual QA, 1,197 questions; vLLM-Omni `daily_omni_dataset` /
`daily_omni_eval`). Its items carry no question id: a question is its video and its task type.

Running it here follows upstream's dataset module in its audio input mode: `qa.json` rows
(`video_id`, `Question`, `Choice`, `Answer`, `Type`, `video_category`, `video_duration`) and
`Videos/<video_id>/<video_id>_audio.wav` under one root; the request is upstream's
conversation (its system text, the audio part, its official user prompt); the answer letter is
read by upstream's official rule. The conformance suite checks prompt and rule against
upstream's own functions."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from omni_tasks.benchmarks.multiple_choice import interleave
from omni_tasks.benchmarks.multiple_choice.family import (
    ChoiceSuite,
    MultipleChoice,
    QuestionSetError,
    Recipe,
    data_url,
    demo_mp4,
    omni_chat_body,
)
from omni_tasks.benchmarks.suite import ItemSet
from omni_tasks.contracts import JsonObject
from omni_tasks.records import Grader
from omni_tasks.trust.names import InvalidName, check_text, path_component, under

if TYPE_CHECKING:
    import numpy as np

# Upstream's DAILY_OMNI_SYSTEM_TEXT (the qwen pack mode).
SYSTEM_TEXT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, "
    "capable of perceiving auditory and visual inputs, as well as generating text and speech."
)
MAX_QUESTIONS = 100_000
MAX_QA_BYTES = 64 * 1024 * 1024
DEMO_QA = Path(__file__).resolve().parents[2] / "datasets" / "demo_daily_omni" / "qa.json"
DEMO_RATE = 16_000
DEMO_VIDEOS = "grey, 8 fps, as long as the audio in whole seconds"


@dataclass(frozen=True)
class Question:
    video_id: str
    question: str
    choices: tuple[str, ...]
    answer: str
    task_type: str
    category: str
    duration: str
    audio: Path
    video: Path | None = None  # the official `{id}_video.mp4`, when the root has it

    @property
    def key(self) -> str:
        return f"{self.video_id}/{self.task_type}"

    @property
    def breakdown(self) -> dict[str, str]:
        return {
            "task": self.task_type or "unknown",
            "category": self.category or "unknown",
            "duration": self.duration or "unknown",
        }


# Qwen3-Omni's (test_qwen3_omni.py): `--daily-omni-input-mode all`, inline local video,
# `--extra-body '{"modalities":["text"]}'`, the dataset's default output length
# (DailyOmniDataset.DEFAULT_OUTPUT_LEN), video and audio kept apart; the openai-chat-omni
# backend streams at temperature 0.
QWEN = Recipe("qwen", 256, SYSTEM_TEXT, {"mm_processor_kwargs": {"use_audio_in_video": False}})
# MiniCPM-o's (test_minicpmo_4_5.py, vllm-omni#5606 / #5625): 1 fps image/audio pairs, no system
# text (its omni system prompt without a reference voice is empty), `--output-len 512`,
# `--temperature 0`, `--daily-extra-body-json` with thinking off; the dataset adds one slice a
# frame and no image ids; its server interleaves the parts in order.
MINICPM = Recipe(
    "minicpm-interleave",
    512,
    "",
    {
        "mm_processor_kwargs": {
            "use_audio_in_video": False,
            "max_slice_nums": 1,
            "use_image_id": False,
        },
        "chat_template_kwargs": {"enable_thinking": False},
    },
    (
        "--trust-remote-code",
        "--interleave-mm-strings",
        "--media-io-kwargs",
        '{"video":{"fps":1,"num_frames":128}}',
    ),
)
# The recipe is the served model's (the series' `server.model`), by its name without the
# organisation; any other model is asked Qwen's way.
RECIPES = {"minicpm-o-4_5": MINICPM}
INPUT_MODE = "all"
MEDIA_DESC = {"all": "given video and audio together", "audio": "given audio"}


def recipe_for(model: str) -> Recipe:
    """The recipe of the served model (the series' `server.model`), else Qwen's."""
    return RECIPES.get(model.rstrip("/").rsplit("/", 1)[-1].lower(), QWEN)


def user_prompt(question: str, choices: tuple[str, ...], mode: str = INPUT_MODE) -> str:
    """Upstream's official user text (`_official_daily_omni_user_prompt`) for an input mode:
    `all` (video and audio) or `audio`."""
    listed = "\n".join(c.strip() for c in choices if c.strip())
    return (
        "Your task is to accurately answer multiple-choice questions "
        f"based on the {MEDIA_DESC[mode]}.\n"
        "Select the single most accurate answer from the given choices.\n"
        f"Question: {question}\n"
        f"Choices: {listed}\n"
        "Your answer should be a capital letter representing your choice: "
        "A, B, C, or D. Don't generate any other text.\n"
    )


def messages(q: Question, recipe: Recipe = QWEN) -> list[JsonValue]:
    """Upstream's conversation (`_build_daily_omni_openai_messages`): the recipe's system text
    (none when empty), then the media (inline, as `--daily-omni-inline-local-video` sends them)
    and the user prompt. Qwen packing sends the video and the audio whole, MiniCPM-o's 1 fps
    frame/audio pairs (interleave.py). A root without the video is asked in audio mode: the
    audio whole."""

    def inline(kind: str, mime: str, path: Path) -> JsonValue:
        return {"type": kind, kind: {"url": data_url(mime, path.read_bytes())}}

    media = [inline("audio_url", "audio/wav", q.audio)]
    mode = "audio" if q.video is None else "all"
    if q.video is not None and recipe.pack == MINICPM.pack:
        media = interleave.parts(q.video, q.audio)
    elif q.video is not None:
        media.insert(0, inline("video_url", "video/mp4", q.video))
    system: list[JsonValue] = (
        [{"role": "system", "content": [{"type": "text", "text": recipe.system_text}]}]
        if recipe.system_text
        else []
    )
    text: JsonValue = {"type": "text", "text": user_prompt(q.question, q.choices, mode)}
    return [*system, {"role": "user", "content": [*media, text]}]


def request_body(q: Question, model: str, seed: int | None) -> JsonObject:
    """One question as the nightly sends it for `model` (its recipe): its messages, text out,
    streamed, temperature 0, the recipe's output length and extra body."""
    recipe = recipe_for(model)
    return omni_chat_body(model, messages(q, recipe), recipe.output_len, recipe.extra)


def extract_choice(text: str | None) -> str | None:
    """The answer letter by upstream's official rule (`extract_choice_letter_official`): after
    an `assistant` marker if any, a leading A-D, else a lone A-D word, else the last A-D
    between non-letters (CJK answers such as 答案：B)."""
    raw = str(text).strip() if text else ""
    if not raw:
        return None
    match = re.search(r"assistant\s*([\s\S]*)$", raw, flags=re.IGNORECASE)
    candidate = match.group(1).strip() if match else raw
    if direct := re.match(r"(?i)^\s*([A-D])(?:[\s\.\):：]|$)", candidate):
        return direct.group(1).upper()
    if fallback := re.search(r"\b([A-D])\b", candidate.upper()):
        return fallback.group(1)
    loose = list(re.finditer(r"(?:[^A-Za-z]|^)([A-D])(?:[^A-Za-z]|$)", candidate, re.IGNORECASE))
    return loose[-1].group(1).upper() if loose else None


def load_questions(root: Path) -> ItemSet:
    """A Daily-Omni root: `qa.json` and each question's audio under `Videos/`. Every row is
    checked before anything runs; a bad row names the file and its index."""
    qa = root / "qa.json"
    try:
        raw = qa.read_bytes()
    except OSError as exc:
        raise QuestionSetError(f"{qa}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_QA_BYTES:
        raise QuestionSetError(f"{qa}: larger than {MAX_QA_BYTES} bytes")
    try:
        rows = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"{qa}: not valid JSON ({exc})") from None
    if not isinstance(rows, list) or not 0 < len(rows) <= MAX_QUESTIONS:
        raise QuestionSetError(f"{qa}: must be a list of 1 to {MAX_QUESTIONS} questions")
    digest = hashlib.sha256(raw)
    questions = []
    for i, row in enumerate(rows):
        q = _question(root, qa, i, row)
        digest.update(q.audio.read_bytes())
        questions.append(q)
    return ItemSet(tuple(questions), digest.hexdigest())


def _question(root: Path, qa: Path, i: int, row: Any) -> Question:
    where = f"{qa}: row {i}"
    if not isinstance(row, dict):
        raise QuestionSetError(f"{where}: must be an object")

    def text(*names: str, required: bool = True, limit: int = 2000) -> str:
        value = next((row[n] for n in names if row.get(n) is not None), None)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise QuestionSetError(f"{where}: {names[0]!r} must be a non-empty string")
        try:
            return check_text(value.strip(), f"{where} {names[0]!r}", max_len=limit, multiline=True)
        except InvalidName as exc:
            raise QuestionSetError(str(exc)) from None

    video_id = text("video_id", limit=200)
    if path_component(video_id) != video_id:
        raise QuestionSetError(f"{where}: video_id {video_id[:80]!r} is not a plain name")
    choices = row.get("Choice")
    if not (
        isinstance(choices, list)
        and 2 <= len(choices) <= 4
        and all(isinstance(c, str) and 0 < len(c) <= 500 for c in choices)
    ):
        raise QuestionSetError(f"{where}: 'Choice' must be a list of 2 to 4 short strings")
    answer = text("Answer", limit=8).upper()
    if answer not in "ABCD"[: len(choices)]:
        raise QuestionSetError(f"{where}: 'Answer' {answer!r} is not one of the choices' letters")
    audio = root / "Videos" / video_id / f"{video_id}_audio.wav"
    if not audio.is_file() or not under(str(audio), str(root)):
        raise QuestionSetError(f"{where}: no audio at {audio.relative_to(root)} under {root}")
    video = audio.with_name(f"{video_id}_video.mp4")
    return Question(
        video=video if video.is_file() and under(str(video), str(root)) else None,
        video_id=video_id,
        question=text("Question"),
        choices=tuple(choices),
        answer=answer,
        task_type=text("Type", "task_type", required=False, limit=200),
        category=text("video_category", required=False, limit=200),
        duration=text("video_duration", required=False, limit=50),
        audio=audio,
    )


def ensure_demo_set(cache: Path) -> Path:
    """The shipped demo set: its qa.json with audio made here (a tone of the row's pitch, or
    its number of beeps) and a video as long as its audio, in whole seconds (an MP4 of grey
    frames: the questions are about the sound; MiniCPM-o's packing cuts the audio at the
    video's end), written once under `cache`; nothing is downloaded."""
    from omni_tasks.evidence.audio import wav_bytes

    text = DEMO_QA.read_text(encoding="utf-8")
    root = cache / "datasets" / "demo_daily_omni"
    stamp = root / ".videos"  # what the cached videos are: others (1 s each, before) are redone
    stale = not stamp.is_file() or stamp.read_text(encoding="utf-8") != DEMO_VIDEOS
    for row in json.loads(text):
        audio = root / "Videos" / row["video_id"] / f"{row['video_id']}_audio.wav"
        samples = _beeps(row["tone_hz"], row["beeps"])
        if not audio.is_file():
            audio.parent.mkdir(parents=True, exist_ok=True)
            audio.write_bytes(wav_bytes(samples, DEMO_RATE))
        video = audio.with_name(f"{row['video_id']}_video.mp4")
        if stale or not video.is_file():
            video.write_bytes(_grey_video(math.ceil(len(samples) / DEMO_RATE)))
    if stale:
        stamp.write_text(DEMO_VIDEOS, encoding="utf-8")
    qa = root / "qa.json"
    if not qa.is_file() or qa.read_text(encoding="utf-8") != text:
        qa.write_text(text, encoding="utf-8")
    return root


def _grey_video(seconds: int, fps: int = 8, size: int = 64) -> bytes:
    """A valid MP4 of grey frames."""
    import numpy as np

    grey = np.full((size, size, 3), 128, dtype=np.uint8)
    return demo_mp4((grey for _ in range(seconds * fps)), fps, size)


def _beeps(hz: float, n: int) -> np.ndarray:
    """`n` beeps of 0.25 s at `hz`, 0.2 s apart (one beep: a 1 s tone)."""
    import numpy as np

    t = np.arange(DEMO_RATE) / DEMO_RATE
    if n == 1:
        return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    beep = 0.5 * np.sin(2 * np.pi * hz * t[: DEMO_RATE // 4])
    gap = np.zeros(DEMO_RATE // 5)
    return np.concatenate([np.concatenate([beep, gap]) for _ in range(n)]).astype(np.float32)


DAILY_OMNI = MultipleChoice(
    id="daily_omni",
    prefix="daily_omni",
    breakdown_fields={
        "task": "task_type",
        "category": "video_category",
        "duration": "video_duration",
    },
    key_fields=("video_id", "task_type"),
    description="Daily-Omni audio-visual multiple choice: accuracy, per task, category, duration",
    suite=ChoiceSuite(
        grader=Grader(
            "choice:daily-omni-official",
            {"backend": "answer letter", "rule": "upstream extract_choice_letter_official"},
        ),
        system_text=SYSTEM_TEXT,
        user_format=user_prompt("{question}", ("{choices}",)),
        load_questions=load_questions,
        demo_root=ensure_demo_set,
        body=request_body,
        extract_choice=extract_choice,
        recipe=recipe_for,
    ),
)
DAILY_OMNI.dataset_file = "qa.json"  # a Daily-Omni root (qa.json + Videos/)
