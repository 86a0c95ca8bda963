"""The item-suite protocol: what a family whose items are asked one by one gives the shared
item runner (benchmarks/items.py): its items from a dataset root, upstream's request for one,
and upstream's rule for judging the answer. Light to import: the registry loads every family."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipGrade, Grader

if TYPE_CHECKING:
    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.synthesis.profiles import Profile


@dataclass(frozen=True)
class ItemSet:
    items: tuple[Any, ...]  # the family's items, each with a `key` stable across runs
    fingerprint: str  # rows + media: two runs share items iff fingerprints match


class ItemSuite(ABC):
    """What an item-suite family gives the runner."""

    grader: Grader
    system_text: str  # for the prompt fingerprint ("" when upstream sends none)
    user_format: str

    def prompt(self, req: RunRequest) -> tuple[str, JsonObject]:
        """The system text `req`'s requests carry (its prompt fingerprint) and what its run's
        config records of how they are asked: the family's own, unless its request depends on
        the served model (Daily-Omni's recipe)."""
        return self.system_text, {}

    @abstractmethod
    def load(self, dataset: str) -> ItemSet:
        """The items of a dataset root in the family's layout, or of its shipped `demo` set;
        a malformed one raises ValueError naming its file and row."""

    @abstractmethod
    def reference(self, item: Any) -> str:
        """What the stored row keeps as the item's reference (the gold letter, the text)."""

    @abstractmethod
    def request_body(self, item: Any, req: RunRequest) -> JsonObject:
        """Upstream's chat request for one item (ValueError/OSError: its media is unreadable,
        stored as a failed request)."""

    @abstractmethod
    def judge(self, item: Any, text: str) -> ClipGrade:
        """The item's grade from the answer's text, by upstream's rule."""

    @abstractmethod
    def simulate(self, body: JsonObject, profile: Profile, seed: int) -> str | None:
        """How the simulator answers a request of this family at `profile`'s rates (its
        `wrong_answer` share, deterministically per seed and item: profiles.uniform): the
        answer text, or None when `body` is not this family's request. A request that is the
        family's but cannot be read raises simulator.UnreadableRequest (a 400)."""


def subset_suffix(limit: int | None, only: Sequence[str] | None = None) -> str:
    """What tells a run's subset apart in its dataset fingerprint: its first `limit` items,
    then its `only` keys (a bisect's or an A/B's chosen items)."""
    suffix = f":first{limit}" if limit else ""
    if only is not None:
        suffix += ":only" + hashlib.sha256(",".join(sorted(set(only))).encode()).hexdigest()[:12]
    return suffix
