"""The benchmarks omni-tasks knows, by id. Everything outside a benchmark's own module reaches
it through :func:`get` or :func:`detect`; a new family registers its instances here, or, from
a package of its own, through an entry point in the `omni_tasks.benchmarks` group that names
a `Benchmark` instance (installed code: the same trust as this package). The group is loaded
on the first lookup, not at import, so a family package may import `omni_tasks.benchmarks.base`
at its top without an import cycle."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from omni_tasks.benchmarks.artifact import ArtifactError, Document, ParsedArtifact, read_document
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, RunOption
from omni_tasks.benchmarks.duplex_eval import DUPLEX_EVAL
from omni_tasks.benchmarks.librispeech import LibriSpeech
from omni_tasks.benchmarks.multiple_choice.daily_omni import DAILY_OMNI
from omni_tasks.benchmarks.multiple_choice.videomme import VIDEOMME
from omni_tasks.benchmarks.seed_tts.artifact import adopt_audio as adopt_audio
from omni_tasks.benchmarks.seed_tts.family import SeedTts
from omni_tasks.benchmarks.voice_isolation import VOICE_ISOLATION

if TYPE_CHECKING:
    from omni_tasks.synthesis.simulator import Answerer

ENTRY_POINTS = "omni_tasks.benchmarks"
__all__ = ["Benchmark", "ImportOptions", "UnknownBenchmark", "detect", "get", "import_artifact"]

_REGISTRY: dict[str, Benchmark] = {}
_entry_points_loaded = False


class UnknownBenchmark(ValueError):
    pass


def register(benchmark: Benchmark) -> Benchmark:
    if benchmark.id in _REGISTRY and _REGISTRY[benchmark.id] is not benchmark:
        raise ValueError(f"benchmark id {benchmark.id!r} is already registered")
    _REGISTRY[benchmark.id] = benchmark
    return benchmark


def _registry() -> dict[str, Benchmark]:
    """Every benchmark, the installed families' entry points loaded on the first call."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        # Set first: a family's module that looks a benchmark up while it is being loaded
        # sees the built-ins rather than recursing.
        _entry_points_loaded = True
        try:
            _load_entry_points()
        except BaseException:
            _entry_points_loaded = False  # the next lookup fails loudly again
            raise
    return _REGISTRY


def all_benchmarks() -> list[Benchmark]:
    return list(_registry().values())


def answerers() -> tuple[Answerer, ...]:
    """How the simulator answers every registered item-suite family (`simulator serve`)."""
    return tuple(b.suite.simulate for b in _registry().values() if b.suite is not None)


def form_options() -> dict[str, RunOption]:
    """The run options configs and forms may give, of every family, by name (the name is the
    config key and the form field)."""
    return {n: o for b in _registry().values() for n, o in b.options.items() if o.form}


def ids() -> list[str]:
    return list(_registry())


def get(benchmark_id: str) -> Benchmark:
    registry = _registry()
    try:
        return registry[benchmark_id]
    except KeyError:
        raise UnknownBenchmark(
            f"unknown benchmark {benchmark_id!r} (known: {', '.join(registry)})"
        ) from None


def detect(document: Document) -> Benchmark:
    """The benchmark whose results the document holds (the first registered that claims it)."""
    registry = _registry()
    for b in registry.values():
        if b.claims(document.doc):
            return b
    raise ArtifactError(
        f"{document.path}: not a results file of any known benchmark "
        f"({', '.join(registry)}); pass --benchmark to name one"
    )


def import_artifact(
    path: Any, options: ImportOptions, benchmark_id: str | None = None
) -> ParsedArtifact:
    """Read an upstream results file and parse it as `benchmark_id`, or as the benchmark it is
    detected to be."""
    document = read_document(path)
    try:
        benchmark = get(benchmark_id) if benchmark_id else detect(document)
    except UnknownBenchmark as exc:
        raise ArtifactError(str(exc)) from None
    return benchmark.parse(document, options)


def _load_entry_points() -> None:
    for ep in entry_points(group=ENTRY_POINTS):
        found = ep.load()
        if not isinstance(found, Benchmark):
            raise TypeError(
                f"entry point {ep.name} = {ep.value} ({ENTRY_POINTS}) is not a Benchmark instance"
            )
        register(found)


for _b in (
    SeedTts("en"),
    SeedTts("zh"),
    DAILY_OMNI,
    VIDEOMME,
    LibriSpeech(),
    DUPLEX_EVAL,
    VOICE_ISOLATION,
):
    register(_b)
