"""What every benchmark family provides: its identity, how an item is judged, its upstream's
own summary, and the import of upstream's artifact. Statistics, gate, alerts, dashboards and
report read only this interface, so a new benchmark is one module that registers itself."""

from __future__ import annotations

import datetime as dt
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from omni_tasks.benchmarks.artifact import Document, ParsedArtifact
from omni_tasks.benchmarks.request import BenchError
from omni_tasks.benchmarks.suite import ItemSuite, subset_suffix
from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipRecord

if TYPE_CHECKING:
    import psycopg

    from omni_tasks.benchmarks.request import RunRequest

Judged = Literal["wer", "incorrect"]
# What every family with an item suite can be asked, through the shared item runner.
SUITE_CAPABILITIES = frozenset({"ab", "bisect", "concurrency"})


@dataclass(frozen=True)
class ImportOptions:
    """What the person importing says about an artifact (the artifact cannot say it)."""

    branch: str
    commit: str | None = None
    nightly: dt.date | None = None
    audio_roots: list[str] | None = None
    references: dict[str, str] | None = None
    harness_version: str | None = None
    built: dt.date | None = None  # the CI build's day, for an artifact that carries no date


@dataclass(frozen=True)
class BenchmarkInfo:
    """What `omni-tasks benchmarks list` shows of a benchmark (and prints as JSON)."""

    id: str
    family: str
    metric: str
    judged: str
    breakdowns: list[str]
    runnable: bool
    capabilities: list[str]
    diagnoses: list[str]
    description: str


@dataclass(frozen=True)
class Words:
    """How a family's items and outputs are spoken of in its report, `stats`, alerts and A/B
    messages, so that no family reads as another's (a question is never a clip)."""

    item: str = "item"
    items: str = "items"
    said: str = "output"  # an output as the family reads it: "{branch} {said}: …"
    metric: str = ""  # the per-item figure beside an output ("": only right or wrong)
    broken: str = "broken items"  # the items the gate counts against a side
    no_output: str = "no output"  # an item the model gave nothing for


class MissingCapability(ValueError):
    """A caller asked a family for what it cannot do (bisect a summary-only series, …)."""


@dataclass(frozen=True)
class RunOption:
    """One of a family's own run options. Its name is a deployment config key, a trigger form
    field and (hyphenated) a command-line flag; `schema` is its value's JSON schema, as the
    forms check it (deployment/forms.py); `form`: offered by configs and forms (else a flag)."""

    default: bool | int | float | str
    schema: Mapping[str, object]
    title: str
    description: str
    examples: tuple[str, ...] = ()
    form: bool = True

    def check(self, name: str, value: object) -> None:
        kind = type(self.default)
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise BenchError(f"run option {name}: a {kind.__name__}, got {value!r}")


class Benchmark(ABC):
    id: str
    family: str
    metric: str  # the per-item metric stored in clip_grade.metric
    judged: Judged  # "wer": broken when WER > tau; "incorrect": broken when the answer is wrong
    breakdowns: tuple[str, ...] = ()  # dimensions an item is labelled with
    words: Words = Words()
    description: str = ""
    # How an item-suite family's items are loaded, asked and judged (benchmarks/items.py);
    # None for a family that runs its own way (seed-TTS) or arrives only as artifacts.
    suite: ItemSuite | None = None
    # The file a dataset root holds (`meta.lst`, `qa.json`); `demo` is always the shipped set.
    dataset_file: str | None = None
    # Diagnosis hooks the statistics run for this family only: "failure_modes" (mode, origin
    # and flags of each broken item, read from transcripts) and "questions" (the tail split by
    # question/statement). A family that declares none gets neither.
    diagnoses: frozenset[str] = frozenset()
    # The harness's own mean that the old nightly gated on (reported beside the verdict).
    legacy_mean_figure: str | None = None
    # The figure an upstream-style gate on this benchmark watches, and which way it must stay
    # (when the gate table names none): e.g. ("videomme_accuracy", ">=").
    gate_figure: tuple[str, Literal["<=", ">="]] | None = None
    # The judge protocol a night must carry to be on the series' scale (a summary's
    # `protocol_pin`), for a family whose artifacts name one.
    protocol_pin: str | None = None
    # A family whose artifacts never have per-item rows (judge means): its nights are figures,
    # trended and shown, never paired-gated.
    summary_only_family: bool = False

    @property
    def runnable(self) -> bool:
        """The nightly can run it here (else it arrives as artifacts): a family with a `suite`
        can; one that runs its own way (seed-TTS) declares `runnable` itself."""
        return self.suite is not None

    @property
    def capabilities(self) -> frozenset[str]:
        """What a caller may ask of the family beyond importing it: "ab" (a paired A/B on the
        discriminating items, through `run`), "bisect" (repeats of `run` on chosen items),
        "concurrency" (the same items alone and co-batched, through `run`) and "ablate"
        (deploy overrides per stage: a family whose request carries stage settings, seed-TTS).
        A family with a `suite` has the first three; one without has none. A family opts out,
        or in (seed-TTS runs its own way), by declaring `capabilities` itself. Every caller
        asks (`require`) before planning, never on a GPU task."""
        return SUITE_CAPABILITIES if self.suite is not None else frozenset()

    # The family's own run options by name (seed-TTS: its transcript mode, prompt template…):
    # the generic request knows none of them; `request` reads them.
    options: Mapping[str, RunOption] = MappingProxyType({})

    def request(self, generic: RunRequest, options: Mapping[str, object]) -> RunRequest:
        """The family's request for `generic`, with its own `options` (checked). A family with
        options returns its own subclass of RunRequest."""
        self.check_options(options)
        return generic

    def check_options(self, options: Mapping[str, object]) -> None:
        """Refuse an option the family does not have, or a value of the wrong type, naming it."""
        for name, value in options.items():
            if name not in self.options:
                has = ", ".join(self.options) or "none"
                raise BenchError(f"{self.id} has no run option {name!r} (its options: {has})")
            self.options[name].check(name, value)

    def server_args(self, model: str) -> tuple[str, ...]:
        """The flags upstream's test serves `model` with for this family (appended to a
        launched server's `vllm serve`); none unless the family says."""
        return ()

    def graded_by_asr(self, options: Mapping[str, object]) -> bool:
        """Whether a run with these options is graded by the configured ASR grader (its
        `grader` fields are then checked before the night)."""
        return False

    def reproduce_args(self, config: JsonObject) -> list[str]:
        """The family's own flags that ask `bench` again for a stored run (from its config)."""
        return []

    def thinker_texts(self, req: RunRequest) -> dict[str, str | None]:
        """Each chosen item's thinker text alone (the talker skipped) at `req.target`: what an
        ablation's stage isolation compares."""
        raise MissingCapability(f"{self.id} has no thinker text to isolate")

    def reference_voices(self, req: RunRequest) -> tuple[dict[str, str], dict[str, Path]]:
        """The reference voices `req` mixed over its items: each item's voice and each
        voice's reference audio (none for a family without speech out)."""
        return {}, {}

    def require(self, capability: str, doing: str) -> None:
        """Refuse `doing` on this benchmark when its family lacks `capability`."""
        if capability not in self.capabilities:
            has = ", ".join(sorted(self.capabilities)) or "none: its results arrive as artifacts"
            raise MissingCapability(
                f"{self.id} ({self.family}) cannot be {doing}: its family has no "
                f"'{capability}' capability (it has {has})"
            )

    def broken_label(self, tau: float) -> str:
        """How a broken item is named in alerts and reports."""
        return f"WER > {tau:g}" if self.judged == "wer" else "wrong answers"

    def official_line(self, official: JsonObject) -> str:
        """Upstream's figures on one line, as its own names say them."""
        return ", ".join(
            f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in official.items()
        )

    def gated_metric(self, tau: float) -> str:
        """What a regression alert of this benchmark watches (part of its alert key)."""
        return f"tail_fraction@{tau:g}" if self.judged == "wer" else "wrong_answers@answer"

    @property
    def bench_option(self) -> str:
        """What `omni-tasks bench --benchmark` takes to run this benchmark."""
        return self.id

    def describe(self) -> BenchmarkInfo:
        return BenchmarkInfo(
            self.id,
            self.family,
            self.metric,
            self.judged,
            list(self.breakdowns),
            self.runnable,
            sorted(self.capabilities),
            sorted(self.diagnoses),
            self.description,
        )

    def run(
        self,
        conn: psycopg.Connection[Any],
        req: RunRequest,
        grader: JsonObject,
        *,
        show_progress: bool = False,
    ) -> str:
        """Run the benchmark against `req.target` (its own dataset, its upstream's request,
        its client options), judge every item, store the run; returns its run key. `grader`:
        the deployment config's grader fields, for a family that grades with one. An
        item-suite family runs through the shared item runner (benchmarks/items.py)."""
        if self.suite is None:
            raise NotImplementedError(
                f"{self.id} is not runnable here: its results arrive as artifacts (`import`)"
            )
        from omni_tasks.benchmarks.items import run_items

        return run_items(conn, self.id, self.suite, req, show_progress=show_progress)

    def subset_fingerprint(self, dataset: str, limit: int | None) -> str:
        """The dataset fingerprint a run of `dataset`'s first `limit` items stores (how a
        bisect finds the endpoints' nightly runs of the same items)."""
        if self.suite is None:
            raise MissingCapability(f"{self.id} is not runnable here")
        return self.suite.load(dataset).fingerprint + subset_suffix(limit)

    def check_dataset(self, dataset: str) -> str | None:
        """Why `dataset` cannot be this benchmark's (None when it can)."""
        if dataset == "demo" or self.dataset_file is None:
            return None
        if not (Path(dataset) / self.dataset_file).is_file():
            return f"{dataset} has no {self.dataset_file} (a {self.id} root, or demo)"
        return None

    def guard_failures(self, summary: JsonObject, expected_items: int | None) -> list[str]:
        """What upstream's test asserts about a night before any threshold (its protocol, its
        sample count), as the assertions it would fail; none for a family whose test checks
        only its figures."""
        return []

    def figure_values(self, figure: str, clips: Sequence[ClipRecord]) -> list[float | None]:
        """Each item's part in upstream's summary figure `figure`, a mean over items: its
        value, or None where upstream leaves the item out (the gate advisor resamples these)."""
        raise ValueError(f"{self.id}: {figure!r} is not a per-item mean of this benchmark")

    def figure_mean(self, figure: str, clips: Sequence[ClipRecord]) -> float | None:
        """Upstream's figure `figure` recomputed from the items (None when no item counts)."""
        present = [x for x in self.figure_values(figure, clips) if x is not None]
        return math.fsum(present) / len(present) if present else None

    @abstractmethod
    def claims(self, doc: JsonObject) -> bool:
        """Whether an upstream results document is this benchmark's."""

    @property
    @abstractmethod
    def figures(self) -> tuple[str, ...]:
        """The names of upstream's summary figures (kept for a summary-only import)."""

    @abstractmethod
    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
        """Upstream's own summary figures, recomputed from stored items by upstream's rules."""

    @abstractmethod
    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        """One run from upstream's results document, validated before anything is stored."""
