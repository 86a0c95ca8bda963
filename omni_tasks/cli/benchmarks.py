"""The benchmarks tracked."""

from __future__ import annotations

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import benchmarks_app, console, json_out
from omni_tasks.reports.tables import print_table


@benchmarks_app.command("list")
def benchmarks_list(wide: opt.WideFlag = False, as_json: opt.JsonFlag = False) -> None:
    """Each benchmark: its id, family, per-item metric, what makes an item broken, the labels
    its items are broken down by, and what can be asked of it."""
    from omni_tasks import benchmarks

    rows = [b.describe() for b in benchmarks.all_benchmarks()]
    if as_json:
        json_out(rows)
        return
    cells = [
        [
            r.id,
            r.family,
            r.metric,
            "WER > tau" if r.judged == "wer" else "answer wrong",
            ", ".join(r.breakdowns),
            ", ".join((["run"] if r.runnable else []) + r.capabilities) or "import only",
        ]
        for r in rows
    ]
    # The id is what every command takes; what it can do is what a reader came for.
    print_table(
        console,
        ["id", "family", "metric", "broken when", "breakdowns", "can"],
        cells,
        keep="id",
        drop_first=["breakdowns", "metric", "broken when", "family", "can"],
        wide=wide,
    )
