"""Multiple-choice benchmarks (Daily-Omni, Video-MME through vLLM-Omni): each question is
answered right or wrong. Upstream's scorer writes one item per question
(`<prefix>_eval_items`, with `--<prefix>-save-eval-items`); an item is broken when its answer
is wrong, so the paired A/B is McNemar on correctness, and shifts are per breakdown label
(task, category, duration...).

Pairing key: upstream's `request_id` is the position in the (shuffled, filtered) sample, so
it pairs nothing across seeds or subsets. Each family names the item fields that identify its
question instead (Video-MME: `question_id`; Daily-Omni has none, so video and task type)."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from omni_tasks.analysis.official import disagreements
from omni_tasks.benchmarks.artifact import (
    MAX_UTT_ID,
    ArtifactError,
    Document,
    ParsedArtifact,
    artifact_judge,
    check_item_text,
    finite_number,
    harness_setup,
    imported_spec,
    nightly_of,
    require,
    summary_figures,
    summary_mismatch,
)
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, Words
from omni_tasks.benchmarks.suite import ItemSet, ItemSuite
from omni_tasks.contracts import JsonObject
from omni_tasks.records import INFRA_STATUSES, ClipAudio, ClipGrade, ClipRecord, Grader, records_of

if TYPE_CHECKING:
    import numpy as np

    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.synthesis.profiles import Profile


MAX_LABEL = 200
MAX_ANSWER = 16
MAX_DETAIL = 500  # upstream keeps the first 500 characters of an error; so does a stored row


class QuestionSetError(ValueError):
    """A question set that cannot be run; the message names the file and the row."""


@dataclass(frozen=True)
class Recipe:
    """How upstream's nightly asks a family's questions of one model: the packing it names,
    its output length, system text (none when empty), extra body (beside `modalities`), and
    the flags its test serves the model with."""

    pack: str
    output_len: int
    system_text: str
    extra: JsonObject
    server_args: tuple[str, ...] = ()

    def recorded(self) -> JsonObject:
        """What a run's config keeps of it."""
        return {"pack_mode": self.pack, "output_len": self.output_len}


@dataclass(frozen=True)
class ChoiceSuite(ItemSuite):
    """What a runnable multiple-choice family gives the item runner (benchmarks/items.py):
    its questions (a root in upstream's layout, or its shipped demo set), upstream's request
    for one, and upstream's rule for reading the answer."""

    grader: Grader
    system_text: str
    user_format: str
    load_questions: Callable[[Path], ItemSet]
    demo_root: Callable[[Path], Path]  # writes the demo set under a cache dir, returns its root
    body: Callable[[Any, str, int | None], JsonObject]
    extract_choice: Callable[[str | None], str | None]
    # The served model's own way of asking (Daily-Omni's recipes; None: every model alike).
    recipe: Callable[[str], Recipe] | None = None

    def prompt(self, req: RunRequest) -> tuple[str, JsonObject]:
        if self.recipe is None:
            return super().prompt(req)
        recipe = self.recipe(req.model)
        return recipe.system_text, recipe.recorded()

    def load(self, dataset: str) -> ItemSet:
        from omni_tasks.config import get_settings

        root = self.demo_root(get_settings().cache_dir) if dataset == "demo" else Path(dataset)
        return self.load_questions(root)

    def reference(self, item: Any) -> str:
        return str(item.answer)

    def request_body(self, item: Any, req: RunRequest) -> JsonObject:
        return self.body(item, req.model, req.seed)

    def simulate(self, body: JsonObject, profile: Profile, seed: int) -> str | None:
        """It listens to the question's audio or looks at its frames and picks the matching
        letter (synthesis/choices.py)."""
        from omni_tasks.synthesis import choices

        return choices.answer(body, profile, seed) if choices.is_choice_request(body) else None

    def judge(self, item: Any, text: str) -> ClipGrade:
        predicted = self.extract_choice(text)
        return ClipGrade(
            item.key,
            "graded",
            hypothesis=predicted,
            incorrect=not is_correct(predicted, item.answer),
            breakdown=item.breakdown,
        )


def is_correct(predicted: str | None, gold: str) -> bool:
    """Upstream's scorers: a strict letter match after strip/upper (no letter: wrong)."""
    return bool(predicted) and predicted.strip().upper() == gold.strip().upper()  # type: ignore[union-attr]


def demo_mp4(frames: Iterable[np.ndarray], fps: int, size: int) -> bytes:
    """A demo set's video: an MP4 (MPEG-4 part 2, PyAV's bundled encoder) of RGB frames."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    return buf.getvalue()


def data_url(mime: str, data: bytes) -> str:
    """Media inlined in a request, as upstream's `--*-inline-local-video` sends it."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def omni_chat_body(
    model: str,
    messages: list[JsonValue],
    max_tokens: int,
    extra: JsonObject,
) -> JsonObject:
    """A question as upstream's `openai-chat-omni` backend sends it (streamed, temperature 0,
    usage in the stream), text out, with the suite's extra body. No `seed`: upstream sends
    none (greedy decoding needs none), so a run's seed is its repeat's label only."""
    return {
        "model": model,
        "messages": messages,
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "modalities": ["text"],
        **extra,
    }


class MultipleChoice(Benchmark):
    family = "multiple_choice"
    metric = "accuracy"
    judged = "incorrect"
    words = Words("question", "questions", "answered", "", "wrong answers", "no answer")

    def __init__(
        self,
        id: str,
        prefix: str,
        breakdown_fields: dict[str, str],
        key_fields: tuple[str, ...],
        description: str,
        suite: ChoiceSuite | None = None,
    ) -> None:
        self.id = id
        self.prefix = prefix
        self.breakdown_fields = breakdown_fields  # dimension -> item field
        self.breakdowns = tuple(breakdown_fields)
        self.key_fields = key_fields
        self.description = description
        self.suite = suite  # how to run it here (None: its results arrive as artifacts)
        self.items_key = f"{prefix}_eval_items"
        self.gate_figure = (f"{prefix}_accuracy", ">=")
        self.grader = artifact_judge(
            f"artifact:vllm-omni-{prefix.replace('_', '-')}",
            f"vLLM-Omni {id} scorer (answer letter extracted by upstream's rules)",
        )

    def claims(self, doc: JsonObject) -> bool:
        return any(k.startswith(f"{self.prefix}_") for k in doc)

    def server_args(self, model: str) -> tuple[str, ...]:
        suite = self.suite
        if not isinstance(suite, ChoiceSuite) or suite.recipe is None:
            return ()
        return suite.recipe(model).server_args

    def figure_values(self, figure: str, clips: Sequence[ClipRecord]) -> list[float | None]:
        # `…_accuracy` leaves failed requests out; `…_accuracy_incl_http_fail` counts them wrong.
        with_failed = figure == f"{self.prefix}_accuracy_incl_http_fail"
        if figure != f"{self.prefix}_accuracy" and not with_failed:
            return super().figure_values(figure, clips)
        out: list[float | None] = []
        for c in clips:
            if c.synth_status in INFRA_STATUSES:
                out.append(0.0 if with_failed else None)
            else:
                out.append(None if c.incorrect is None else float(not c.incorrect))
        return out

    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
        """Upstream's figures from the items: accuracy over successful responses (failed
        requests excluded), and with them counted wrong; a wrong answer with no letter found
        is a parse failure."""
        p = self.prefix
        failed = [c for c in clips if c.synth_status in INFRA_STATUSES]
        ok = [c for c in clips if c.synth_status not in INFRA_STATUSES and c.incorrect is not None]
        correct = sum(1 for c in ok if not c.incorrect)
        evaluated = len(ok) + len(failed)
        return {
            f"{p}_accuracy": correct / len(ok) if ok else None,
            f"{p}_accuracy_incl_http_fail": correct / evaluated if evaluated else None,
            f"{p}_correct": correct,
            f"{p}_evaluated": evaluated,
            f"{p}_evaluated_ok": len(ok),
            f"{p}_request_failed": len(failed),
            f"{p}_parse_failed": sum(1 for c in ok if not c.hypothesis),
        }

    @property
    def figures(self) -> tuple[str, ...]:
        return tuple(self.official_summary(()))

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        path, doc = document.path, document.doc
        require(
            self.claims(doc),
            path,
            f"no {self.prefix}_* keys: not a vLLM-Omni {self.id} results file",
        )
        nightly = nightly_of(doc, path, options.nightly, options.built)
        items = doc.get(self.items_key)
        require(
            items is None or isinstance(items, list), path, f"'{self.items_key}' must be a list"
        )
        warnings: list[str] = []
        clips: list[ClipAudio] = []
        grades: list[ClipGrade] = []
        keys: dict[str, int] = {}
        no_gold = fallback_keys = 0
        for i, item in enumerate(items or []):
            where = f"{self.items_key}[{i}]"
            require(isinstance(item, dict), path, f"{where} must be an object")
            for key in (
                "request_id",
                "gold",
                "predicted",
                "error",
                *self.key_fields,
                *self.breakdown_fields.values(),
            ):
                check_item_text(item, key, path, where)
            if item.get("skipped"):
                no_gold += 1
                continue
            key, fallback = self._pair_key(item, path, where)
            fallback_keys += fallback
            n = keys[key] = keys.get(key, 0) + 1
            if n > 1:  # the same question twice (oversampling): kept apart, in file order
                key = f"{key}#{n}"
            clip, grade = self._item(item, len(clips), key, path, where)
            clips.append(clip)
            if grade is not None:
                grades.append(grade)
        if no_gold:
            warnings.append(f"{path}: {no_gold} items without a gold answer skipped (as upstream)")
        if fallback_keys:
            warnings.append(
                f"{path}: {fallback_keys} items lack {'/'.join(self.key_fields)}; keyed by "
                "request_id, which pairs only with a run of the same seed and subset"
            )
        repeated = sum(n - 1 for n in keys.values())
        if repeated:
            warnings.append(
                f"{path}: {repeated} items repeat a question (oversampled); repeats are keyed "
                "'#2', '#3'... in file order"
            )
        if clips:
            recomputed = self.official_summary(records_of(clips, grades))
            warnings += summary_mismatch(path, disagreements(doc, recomputed, self.figures))
            n_expected, status = len(clips), "complete"
        else:
            warnings.append(
                f"{path}: no per-item rows ({self.items_key}); imported as summary_only — the "
                f"gate needs per-item rows (rerun with --{self.prefix.replace('_', '-')}"
                "-save-eval-items)"
            )
            evaluated = doc.get(f"{self.prefix}_evaluated")
            n_expected = int(evaluated) if finite_number(evaluated) and evaluated >= 0 else 0
            status = "summary_only"
        spec = imported_spec(
            path,
            self.id,
            options.branch,
            nightly=nightly,
            status=status,
            n_expected=n_expected,
            commit_sha=options.commit,
            **harness_setup(document),
            summary=summary_figures(doc, f"{self.prefix}_", self.items_key),
            source=document.source(f"vllm-omni-{self.prefix.replace('_', '-')}"),
        )
        return ParsedArtifact(spec, clips, grades, self.grader, warnings)

    def _pair_key(self, item: JsonObject, path: Path, where: str) -> tuple[str, bool]:
        parts = [item.get(f) for f in self.key_fields]
        if all(isinstance(p, str) and p for p in parts):
            key, fallback = "/".join(parts), False  # type: ignore[arg-type]
        else:
            rid = item.get("request_id")
            require(
                isinstance(rid, str | int) and not isinstance(rid, bool) and str(rid) != "",
                path,
                f"{where}: needs {'/'.join(self.key_fields)} or a 'request_id'",
            )
            key, fallback = f"request:{rid}", True
        require(len(key) <= MAX_UTT_ID, path, f"{where}: question key longer than {MAX_UTT_ID}")
        return key, fallback

    def _item(
        self, item: JsonObject, ordinal: int, key: str, path: Path, where: str
    ) -> tuple[ClipAudio, ClipGrade | None]:
        gold = item.get("gold")
        if not (isinstance(gold, str) and 0 < len(gold) <= MAX_LABEL):
            raise ArtifactError(
                f"{path}: {where} ({key}): 'gold' must be a non-empty string of at most "
                f"{MAX_LABEL} characters"
            )
        if "error" in item:  # the request failed: no answer to judge (infra, as upstream)
            detail = item["error"][:MAX_DETAIL] if isinstance(item["error"], str) else ""
            return ClipAudio(key, ordinal, gold, "request_failed", error_detail=detail), None
        correct = item.get("correct")
        require(isinstance(correct, bool), path, f"{where} ({key}): 'correct' must be true/false")
        predicted = item.get("predicted")
        require(
            predicted is None or (isinstance(predicted, str) and len(predicted) <= MAX_ANSWER),
            path,
            f"{where} ({key}): 'predicted' must be null or a string of at most {MAX_ANSWER}",
        )
        breakdown: dict[str, str] = {}
        for dim, field_name in self.breakdown_fields.items():
            label = item.get(field_name)
            require(
                label is None or (isinstance(label, str) and len(label) <= MAX_LABEL),
                path,
                f"{where} ({key}): {field_name!r} must be null or a short string",
            )
            breakdown[dim] = label if isinstance(label, str) and label else "unknown"
        clip = ClipAudio(key, ordinal, gold, "ok")
        grade = ClipGrade(
            key,
            "graded",
            hypothesis=predicted if isinstance(predicted, str) else None,
            incorrect=not correct,
            breakdown=breakdown,
        )
        return clip, grade
