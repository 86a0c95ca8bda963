"""Message titles within Slack's 150 characters: an alert's header keeps what it says happened
(the verdict, the night, how long it has been open) and gives up, in turn, the length of its
model's and lane's names and then its branches, each cut at a word; never a word cut in half
where a word boundary is near. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from omni_tasks.series import Series

MAX_HEADER = 150
SHORT_NAME = 18  # a long model or lane name, shortened, keeps about this much of its start
_BREAKS = " -_./"


def clip_words(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after a whole word (…-marked); mid-word only
    when the last boundary is in the first half (one very long token)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    at = max(cut.rfind(c) for c in _BREAKS)
    if at > limit // 2:
        cut = cut[:at].rstrip(" ,;:·—-")
    return cut + "…"


def series_name(series: Series, model: str | None = None, lane: str | None = None) -> str:
    """`seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · lane cuda-h100x2`: the lane named as one, so
    it never reads as the variant (`default` is the name of both defaults)."""
    model = model if model is not None else series.model.rsplit("/", 1)[-1]
    return f"{series.benchmark} · {model} · lane {lane if lane is not None else series.lane}"


@dataclass(frozen=True)
class Title:
    """`{head}{series}{middle}{tail}`: `head` and `tail` are kept whole (what happened, the
    verdict, the night, the update's suffix); the series' names and then `middle` (branches,
    variant) give way when the whole is too long."""

    head: str
    series: Series
    middle: str
    tail: str

    def fitted(self, limit: int = MAX_HEADER) -> str:
        model = self.series.model.rsplit("/", 1)[-1]
        lane = self.series.lane
        for m, ln in ((model, lane), (_short(model), lane), (_short(model), _short(lane))):
            named = f"{self.head}{series_name(self.series, m, ln)}"
            text = f"{named}{self.middle}{self.tail}"
            if len(text) <= limit:
                return text
        room = limit - len(named) - len(self.tail)
        if room >= 8:  # the branches cut at a word, the verdict and suffix kept
            return f"{named}{clip_words(self.middle, room)}{self.tail}"
        return clip_words(text, limit)  # only for absurd branch or variant names

    def __str__(self) -> str:
        return f"{self.head}{series_name(self.series)}{self.middle}{self.tail}"


def _short(name: str) -> str:
    return clip_words(name, SHORT_NAME)
