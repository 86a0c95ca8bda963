"""Video-MME (video QA, 2,700 questions on 900 videos; vLLM-Omni `videomme_dataset` /
`videomme_eval`, from 0.30): a question is its `question_id`.

Running it here follows upstream's MiniCPM-o nightly recipe (OmniEvalKit's `videomme`, w/o
subtitles): `--videomme-pack-mode minicpm-frames --videomme-max-frames 96`, temperature 0,
128 output tokens, frames inlined as JPEG `image_url` parts (`--videomme-inline-local-video`)
and the answer read by the official `extract_characters_regex`. A root is upstream's local
layout: `videomme/test-00000-of-00001.parquet` and the extracted videos under `video/`. The
conformance suite checks frames, prompt, body and rule against upstream's own functions."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from omni_tasks.benchmarks.multiple_choice.family import (
    ChoiceSuite,
    MultipleChoice,
    QuestionSetError,
    data_url,
    demo_mp4,
    omni_chat_body,
)
from omni_tasks.benchmarks.suite import ItemSet
from omni_tasks.contracts import JsonObject
from omni_tasks.records import Grader
from omni_tasks.trust.names import InvalidName, check_text, path_component, under

PARQUET = "videomme/test-00000-of-00001.parquet"  # the Hub snapshot's layout
VIDEO_DIR = "video"  # where upstream extracts videos_chunked_*.zip
MAX_FRAMES = 96  # VIDEOMME_DEFAULT_MAX_FRAMES (minicpm-frames)
OUTPUT_LEN = 128  # VideoMMEDataset.DEFAULT_OUTPUT_LEN, and the nightly's --output-len
JPEG_QUALITY = 85  # daily_omni_dataset._pil_to_jpeg_bytes
SEEK_S = 3.0  # upstream decodes forward to a target this close, else seeks to a keyframe
# The nightly's --videomme-extra-body-json, and what the dataset adds for a video sample
# (OmniEvalKit: one slice per frame, frames not labelled as separate pictures).
EXTRA_BODY: JsonObject = {
    "chat_template_kwargs": {"enable_thinking": False},
    "mm_processor_kwargs": {
        "use_audio_in_video": False,
        "max_slice_nums": 1,
        "use_image_id": False,
    },
}
USER_PROMPT = (
    "Carefully read the following question and select the letter corresponding to the "
    "correct answer.Highlight the applicable choices without giving explanations.\n"
    "{question}\n"
    "Options:\n"
    "{options}\n"
    "Please select the correct answer from the options above. Only respond with the letter."
)
OPTION_LETTERS = "ABCDEFGHIJKL"
_OPTION_PREFIX = re.compile(r"^([A-L])\s*[.、:：)]\s*(.*)$")
_ANSWER_PREFIXES = (  # the official list, its two accidental concatenations split as upstream does
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
    "Answer:",
    "Option:",
    "The correct answer",
    "The correct option",
)
VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".avi")
MAX_QUESTIONS = 100_000
MAX_PARQUET_BYTES = 256 * 1024 * 1024
FINGERPRINT_SPAN = 1 << 20  # bytes hashed at each end of a video (the full set is ~95 GB)
DEMO_ROWS = Path(__file__).resolve().parents[2] / "datasets" / "demo_videomme" / "rows.json"


@dataclass(frozen=True)
class Question:
    question_id: str
    video_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    duration: str
    domain: str
    sub_category: str
    task_type: str
    video: Path

    @property
    def key(self) -> str:
        return self.question_id

    @property
    def breakdown(self) -> dict[str, str]:
        return {  # upstream's buckets: duration lower-cased, an empty label "unknown"
            "task": self.task_type or "unknown",
            "domain": self.domain or "unknown",
            "sub_category": self.sub_category or "unknown",
            "duration": self.duration.lower() or "unknown",
        }


# ---------------------------------------------------------------- prompt, body, answer
def format_options(options: tuple[str, ...]) -> str:
    """Upstream's `_format_options`: `A. content` per line; existing labels are replaced only
    when every option carries the right one (so `A.M. shift` keeps its text)."""
    matches = [_OPTION_PREFIX.match(o.strip()) for o in options]
    relabel = all(
        m is not None and m.group(1) == k for m, k in zip(matches, OPTION_LETTERS, strict=False)
    )
    lines = []
    for key, raw, m in zip(OPTION_LETTERS, options, matches, strict=False):
        content = m.group(2).strip() if (relabel and m is not None) else raw.strip()
        lines.append(f"{key}. {content}")
    return "\n".join(lines)


def user_prompt(q: Question) -> str:
    return USER_PROMPT.format(question=q.question, options=format_options(q.options))


def request_body(q: Question, model: str, seed: int | None) -> JsonObject:
    """One question as the nightly sends it: its sampled frames (JPEG, inline) then the
    prompt, no system message (upstream's MiniCPM system text is empty)."""
    frames: list[JsonValue] = [
        {"type": "image_url", "image_url": {"url": url}} for url in frame_urls(q.video)
    ]
    messages: list[JsonValue] = [
        {"role": "user", "content": [*frames, {"type": "text", "text": user_prompt(q)}]}
    ]
    return omni_chat_body(model, messages, OUTPUT_LEN, EXTRA_BODY)


def extract_choice(text: str | None) -> str | None:
    """The official `extract_characters_regex`: answer prefixes removed, then the first A-D
    (its guard against a long answer without any letter comes to the same None)."""
    if not text:
        return None
    s = str(text).strip()
    for prefix in _ANSWER_PREFIXES:
        s = s.replace(prefix, "")
    match = re.search(r"[ABCD]", s)
    return match.group(0) if match else None


# ---------------------------------------------------------------- frames
def uniform_indices(n: int, k: int) -> list[int]:
    """`k` indices evenly from 0..n-1 (numpy linspace with an int dtype, as upstream)."""
    import numpy as np

    if k <= 0:
        return []
    if n <= k:
        return list(range(n))
    return [int(i) for i in np.linspace(0, n - 1, k, dtype=int)]


def sample_timestamps(duration: float, max_frames: int = MAX_FRAMES) -> list[float]:
    """OmniEvalKit's frame times: one per second up to `max_frames` seconds, else
    `max_frames` spread over a 0.1 s grid."""
    if duration > max_frames:
        return [round(i * 0.1, 1) for i in uniform_indices(int(duration / 0.1), max_frames)]
    return [float(i) for i in range(max(1, int(duration)))]


def video_duration(path: Path) -> float:
    """The container's duration in seconds, without decoding."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / av.time_base
        elif stream.frames and stream.average_rate:
            duration = stream.frames / float(stream.average_rate)
        else:
            duration = 0.0
    if duration <= 0:
        raise ValueError(f"cannot tell the duration of {path}")
    return duration


def frames_at(path: Path, timestamps: list[float]) -> list[bytes]:
    """A JPEG of the first frame at or after each (ascending) time: decoded forward when the
    next time is near, after a seek to the preceding keyframe when not; a stream shorter
    than its container says repeats its last frame."""
    import av

    jpegs: list[bytes] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        base = float(stream.time_base) if stream.time_base else 0.0
        tb = stream.time_base
        start = float(stream.start_time * tb) if stream.start_time and tb else 0.0
        decoded: Iterator[Any] | None = None
        frame, at = None, -1.0
        for ts in timestamps:
            if decoded is None or ts < at or ts - at > SEEK_S:
                container.seek(
                    int((ts + start) / base) if base > 0 else 0, stream=stream, backward=True
                )
                decoded, frame, at = container.decode(stream), None, -1.0
            while frame is None or at < ts:
                nxt = next(decoded, None)
                if nxt is None:
                    break
                frame = nxt
                if nxt.pts is not None and base > 0:
                    at = float(nxt.pts) * base - start
            if frame is None:
                break
            jpegs.append(jpeg_bytes(frame.to_image()))
    if not jpegs:
        raise ValueError(f"decoded no frames from {path}")
    return jpegs + [jpegs[-1]] * (len(timestamps) - len(jpegs))


@lru_cache(maxsize=4)  # a video's questions are asked together; frames are megabytes
def frame_urls(video: Path, max_frames: int = MAX_FRAMES) -> tuple[str, ...]:
    frames = frames_at(video, sample_timestamps(video_duration(video), max_frames))
    return tuple(data_url("image/jpeg", f) for f in frames)


def jpeg_bytes(image: Any) -> bytes:
    """A frame (a PIL image) as upstream inlines it, at its JPEG quality."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


# ---------------------------------------------------------------- dataset
def load_questions(root: Path) -> ItemSet:
    """A Video-MME root: the parquet's rows, each with its video under `video/`. Every row
    is checked before anything runs; a bad row names the file and its index."""
    import pyarrow.parquet as pq

    parquet = root / PARQUET
    if not parquet.is_file():
        raise QuestionSetError(f"{root}: no {PARQUET} (a Video-MME root, or demo)")
    if parquet.stat().st_size > MAX_PARQUET_BYTES:
        raise QuestionSetError(f"{parquet}: larger than {MAX_PARQUET_BYTES} bytes")
    try:
        rows = pq.read_table(parquet).to_pylist()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise QuestionSetError(f"{parquet}: not a readable parquet file ({exc})") from None
    if not 0 < len(rows) <= MAX_QUESTIONS:
        raise QuestionSetError(f"{parquet}: must hold 1 to {MAX_QUESTIONS} questions")
    videos = _video_index(root)
    digest = hashlib.sha256()
    questions = [_question(parquet, i, row, videos) for i, row in enumerate(rows)]
    seen: set[str] = set()
    for q in questions:
        fields = [q.question_id, q.video_id, q.question, *q.options, q.answer]
        digest.update(json.dumps(fields, ensure_ascii=False).encode())
        if q.video_id not in seen:
            seen.add(q.video_id)
            digest.update(_video_digest(q.video))
    return ItemSet(tuple(questions), digest.hexdigest())


def _video_index(root: Path) -> dict[str, Path]:
    """videoID -> file under `video/` (flat or nested, as upstream looks), skipping dot-dirs
    and anything that resolves outside the root."""
    base = root / VIDEO_DIR
    index: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix.lower() in VIDEO_SUFFIXES and under(str(path), str(root)):
                index.setdefault(path.stem, path)
    return index


def _video_digest(path: Path) -> bytes:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(FINGERPRINT_SPAN)
        f.seek(max(size - FINGERPRINT_SPAN, 0))
        tail = f.read(FINGERPRINT_SPAN)
    return hashlib.sha256(str(size).encode() + head + tail).digest()


def _question(parquet: Path, i: int, row: dict[str, object], videos: dict[str, Path]) -> Question:
    where = f"{parquet}: row {i}"

    def text(*names: str, required: bool = True, limit: int = 200) -> str:
        value = next((row[n] for n in names if row.get(n) not in (None, "")), None)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise QuestionSetError(f"{where}: {names[0]!r} must be a non-empty string")
        try:
            return check_text(value.strip(), f"{where} {names[0]!r}", max_len=limit, multiline=True)
        except InvalidName as exc:
            raise QuestionSetError(str(exc)) from None

    video_id = text("videoID", "video_id")
    question_id = text("question_id")
    for name, value in (("videoID", video_id), ("question_id", question_id)):
        if path_component(value) != value:
            raise QuestionSetError(f"{where}: {name} {value[:80]!r} is not a plain name")
    options = row.get("options")
    if not (
        isinstance(options, list)
        and 2 <= len(options) <= len(OPTION_LETTERS)
        and all(isinstance(o, str) and 0 < len(o) <= 500 for o in options)
    ):
        raise QuestionSetError(f"{where}: 'options' must be a list of 2 to 12 short strings")
    answer = text("answer", limit=8).upper()
    if answer not in "ABCD"[: len(options)]:
        raise QuestionSetError(f"{where}: 'answer' {answer!r} is not one of A-D among the options")
    if video_id not in videos:
        raise QuestionSetError(
            f"{where}: no video {video_id!r} under {parquet.parent.parent}/video"
        )
    return Question(
        question_id=question_id,
        video_id=video_id,
        question=text("question", limit=2000),
        options=tuple(options),
        answer=answer,
        duration=text("duration", required=False, limit=50),
        domain=text("domain", required=False),
        sub_category=text("sub_category", required=False),
        task_type=text("task_type", required=False),
        video=videos[video_id],
    )


def ensure_demo_set(cache: Path) -> Path:
    """The shipped demo set, written once under `cache` in upstream's layout: its rows as the
    parquet, and each video made here from its row's colour segments (solid frames), one of
    them longer than 96 s so the grid sampling and the seeks run; nothing is downloaded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = DEMO_ROWS.read_text(encoding="utf-8")
    root = cache / "datasets" / "demo_videomme"
    rows = json.loads(text)
    for row in rows:
        video = root / VIDEO_DIR / f"{row['videoID']}.mp4"
        if not video.is_file():
            video.parent.mkdir(parents=True, exist_ok=True)
            video.write_bytes(_colour_video(row["segments"], row["fps"]))
    parquet, stamp = root / PARQUET, root / "rows.json"
    if not parquet.is_file() or not stamp.is_file() or stamp.read_text(encoding="utf-8") != text:
        parquet.parent.mkdir(parents=True, exist_ok=True)
        kept = [{k: v for k, v in r.items() if k not in ("segments", "fps")} for r in rows]
        pq.write_table(pa.Table.from_pylist(kept), parquet)
        stamp.write_text(text, encoding="utf-8")
    return root


def _colour_video(segments: list[list[Any]], fps: int, size: int = 32) -> bytes:
    """An MP4 of frames of one colour per segment ([colour, seconds]...)."""
    import numpy as np

    from omni_tasks.synthesis.choices import PALETTE  # the colours the simulator names

    def frames() -> Iterator[np.ndarray]:
        n = 0
        for colour, seconds in segments:
            for _ in range(int(seconds * fps)):
                # A darker bar whose place is the frame's number: no two neighbouring
                # frames are alike, so a frame picked at the wrong time shows.
                frame = np.full((size, size, 3), PALETTE[colour], dtype=np.uint8)
                frame[:, n % size] = frame[:, n % size] // 2
                frame[n // size % size, :] = frame[n // size % size, :] // 2
                yield frame
                n += 1

    return demo_mp4(frames(), fps, size)


VIDEOMME = MultipleChoice(
    id="videomme",
    prefix="videomme",
    breakdown_fields={
        "task": "task",
        "domain": "domain",
        "sub_category": "sub_category",
        "duration": "duration",
    },
    key_fields=("question_id",),
    description="Video-MME multiple choice: accuracy, per task, domain, sub-category, duration",
    suite=ChoiceSuite(
        grader=Grader(
            "choice:videomme-official",
            {"backend": "answer letter", "rule": "upstream extract_characters_regex"},
        ),
        system_text="",  # MINICPM_OMNI_SYSTEM_TEXT
        user_format=USER_PROMPT,
        load_questions=load_questions,
        demo_root=ensure_demo_set,
        body=request_body,
        extract_choice=extract_choice,
    ),
)
VIDEOMME.dataset_file = PARQUET
