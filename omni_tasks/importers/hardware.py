"""The hardware a Buildkite job ran on, from what the API says about its agent. Upstream's CUDA
nightly composes hardware from test marks (`-m "H100 and B200 and cards_2"`), so one step label
runs on an H100 queue one night and a B200 queue the next; the AMD steps name an agent pool
(`mi300_2`) while the test's mark says MI325; the NPU steps a queue (`ascend-a3`). The agent's
queue is what ran the job, so it decides; the pool or resource class is asked next. An
agent nobody recognises gives no SKU, and a rule whose lane needs one refuses the artifact."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# (pattern on a queue / pool / resource-class value, SKU), first match wins: upstream's queue
# names (.buildkite/common/ci_mirror_hardwares.yml: mithril-h100-pool, l4-k8s, ascend-a3,
# ascend-a2b3; the AMD pipeline's agent_pool mi300_2 / mi325_*; Intel's XPU B60 hosts).
SKUS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), sku)
    for p, sku in (
        (r"b200", "B200"),
        (r"h200", "H200"),
        (r"h100", "H100"),
        (r"(^|[^a-z])l4([^a-z0-9]|$)", "L4"),
        (r"mi355", "MI355"),
        (r"mi325", "MI325"),
        (r"mi300", "MI300"),
        (r"ascend-a3|(^|[^a-z0-9])a3([^a-z0-9]|$)", "A3"),
        (r"ascend-a2", "A2"),
        (r"b60|xpu", "B60"),
    )
)
# Agent tags that say where a job ran, in the order they are trusted.
TAGS = ("queue", "agent_pool", "pool", "resource_class")


def _tags(job: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(tag, value) pairs from the job's agent query rules and its agent's metadata."""
    agent = job.get("agent") if isinstance(job.get("agent"), dict) else {}
    for source in (job.get("agent_query_rules"), (agent or {}).get("meta_data")):
        if isinstance(source, dict):
            yield from ((str(k), str(v)) for k, v in source.items())
        elif isinstance(source, list):
            for rule in source:
                if isinstance(rule, str) and "=" in rule:
                    k, v = rule.split("=", 1)
                    yield k.strip(), v.strip()


def sku_of(job: Mapping[str, Any]) -> str | None:
    """The job's hardware SKU (H100, B200, MI300, A3, B60, …), or None when its agent does not
    say."""
    tags = list(_tags(job))
    values = (v[:200] for tag in TAGS for k, v in tags if k == tag)
    return next((sku for v in values for pattern, sku in SKUS if pattern.search(v)), None)
