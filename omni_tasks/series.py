"""A series: what one baseline is kept for and one gate decides within — model × benchmark ×
hardware lane (× branch × variant, the gate's candidates). Runs, decisions, alert keys,
freshness, reports and dashboards carry the three names; a cross-lane comparison is only ever
an explicit `compare`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from omni_tasks.trust.names import check_model, check_name, path_component

# What rows stored before series existed belong to: the one model and GPU class the platform
# then benchmarked (migration 0009 fills these in).
DEFAULT_MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
DEFAULT_LANE = "default"
# How a series' server is spoken to (a run's variant names it when it is not chat): an imported
# artifact's own fields and its step say which (importers/identity.py), a published reference
# holds for one. `realtime` is explicit Realtime TTS on /v1/realtime, `realtime-duplex` native
# per-unit duplex on /v1/realtime?duplex=1 (vllm-omni#7413): two protocols, two gates;
# `audio-speech` a TTS model's /v1/audio/speech.
Protocol = Literal["chat", "realtime", "realtime-duplex", "reference-as-input", "audio-speech"]
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)

__all__ = ["DEFAULT_LANE", "DEFAULT_MODEL", "PROTOCOLS", "Protocol", "Series"]


@dataclass(frozen=True)
class Series:
    benchmark: str
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE

    def __post_init__(self) -> None:
        check_name(self.benchmark, "benchmark")
        check_model(self.model)
        check_name(self.lane, "lane")
        for part in (self.benchmark, self.model, self.lane):
            if "|" in part:  # the separator of alert keys
                raise ValueError(f"series name {part[:60]!r}: must not contain '|'")

    @property
    def key(self) -> str:
        """The series' part of an alert key (`benchmark|model|lane`)."""
        return f"{self.benchmark}|{self.model}|{self.lane}"

    @property
    def label(self) -> str:
        """How people read it: `seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · cuda-h100x2`."""
        return f"{self.benchmark} · {self.model.rsplit('/', 1)[-1]} · {self.lane}"

    @property
    def name(self) -> str:
        """The label, or the benchmark alone for the single-series default (how it always
        read)."""
        return self.benchmark if self.is_default else self.label

    @property
    def is_default(self) -> bool:
        return (self.model, self.lane) == (DEFAULT_MODEL, DEFAULT_LANE)

    @property
    def slug(self) -> str:
        """The series as one name (run keys, report paths): the benchmark alone for the
        series every row stored before lanes belongs to, so its keys and paths stay."""
        if self.is_default:
            return self.benchmark
        return path_component(f"{self.benchmark}@{self.lane}@{self.model.replace('/', '=')}")

    def args(self) -> dict[str, str]:
        """The series as SQL parameters (every series-scoped query takes all three)."""
        return {"benchmark": self.benchmark, "model": self.model, "lane": self.lane}

    @classmethod
    def parse(cls, key: str) -> Series:
        """The series of its key (`benchmark|model|lane`, as `key` spells it)."""
        parts = key.split("|")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"series {key[:200]!r}: expected BENCHMARK|MODEL|LANE")
        return cls(*parts)

    @classmethod
    def of(cls, row: Mapping[str, object]) -> Series:
        """The series of a stored run or decision row."""
        return cls(
            str(row["benchmark"]),
            str(row.get("model") or DEFAULT_MODEL),
            str(row.get("lane") or DEFAULT_LANE),
        )
