"""Ablations of a confirmed regression: which deploy override brings it back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omni_tasks.cli.common import (
    TRANSCRIPT,
    BenchmarkOpt,
    JsonFlag,
    LaneOpt,
    ServedModelOpt,
    TranscriptOpt,
    app,
    console,
    err,
    fail,
    json_out,
    open_db,
    parse_date,
    run_options,
)


@app.command("ablate")
def ablate_cmd(
    nightly: Annotated[
        str, typer.Option(metavar="DATE", help="The confirmed night (YYYY-MM-DD) to ablate")
    ],
    candidate_target: Annotated[
        str, typer.Option(help="The candidate stack: vllm-serve, URL or simulator:PROFILE")
    ],
    baseline_target: Annotated[
        str, typer.Option(help="The baseline stack: vllm-serve, URL or simulator:PROFILE")
    ],
    branch: Annotated[str, typer.Option(metavar="BRANCH", help="The candidate branch")] = "rebase",
    baseline: Annotated[str, typer.Option(metavar="BRANCH", help="The baseline branch")] = "main",
    variant: Annotated[str, typer.Option(help="Variant")] = "default",
    benchmark: BenchmarkOpt = None,
    model: ServedModelOpt = None,
    lane: LaneOpt = None,
    dataset: Annotated[
        str, typer.Option(metavar="DIR", help="demo or the night's dataset root")
    ] = "demo",
    ablations: Annotated[
        Path | None,
        typer.Option(
            help="YAML list of {name, overrides, why} (default: the shipped four: eager "
            "thinker, eager talker, greedy talker, the thinker's own token budget)"
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="The first fresh seed (each round adds the next)")
    ] = 3000,
    control: Annotated[int, typer.Option(help="Control clips (fine on both sides)")] = 25,
    budget: Annotated[
        float,
        typer.Option(
            help="GPU it may use, in full-run equivalents (clips run / clips); the first round "
            "always runs"
        ),
    ] = 1.0,
    transcript: TranscriptOpt = False,
    alert_id: Annotated[
        int | None, typer.Option(help="Reply in this alert's thread (default: the key's open one)")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run the candidate stack with each ablation (one deploy override, merged by stage_id) on
    the confirmed night's regressed and control clips, beside fresh runs of the candidate and
    the baseline at the same seeds, adding a seed per round until each ablation is decided
    (regression gone, partial or unchanged) or the budget's rounds are spent; say what was
    decided, with the budget's arithmetic. Exit 1 on an error."""
    import dataclasses

    import yaml
    from pydantic import ValidationError

    from omni_tasks.jobs.ablate import AblateError, AblateParams, run_ablations, summary

    fields: dict[str, object] = {
        "nightly": parse_date(nightly),
        "candidate_target": candidate_target,
        "baseline_target": baseline_target,
        "branch": branch,
        "baseline": baseline,
        "variant": variant,
        "benchmark": benchmark,
        "lane": lane or "default",
        "dataset": dataset,
        "seed": seed,
        "control": control,
        "budget": budget,
        **run_options({TRANSCRIPT: transcript}),
        "alert_id": alert_id,
    }
    if model:
        fields["server"] = {"model": model}
    if ablations is not None:
        try:
            fields["ablations"] = yaml.safe_load(ablations.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            fail(f"{ablations}: cannot read the ablations: {exc}", code=2)
    try:
        p = AblateParams.model_validate(fields)
    except (ValidationError, ValueError) as exc:
        fail(f"ablate: {exc}", code=2)
    conn = open_db()
    with conn:
        try:
            result = run_ablations(conn, p, p.nightly)
        except AblateError as exc:
            fail(str(exc))
        import contextlib
        import sys

        from omni_tasks.alerts.slack import default_sink, dispatch

        with contextlib.redirect_stdout(sys.stderr):  # the local outbox prints what it keeps
            dispatch(conn, default_sink())
    if as_json:
        json_out(
            {
                "ablate_id": p.ablate_id,
                "clips": len(result.selection.clips),
                "reference": dataclasses.asdict(result.reference),
                "ablations": [dataclasses.asdict(v) for v in result.verdicts],
                "seeds": list(result.ablated.seeds),
                "budget": result.ablated.arithmetic,
                "full_runs": result.full_runs,
                "run_keys": result.run_keys,
            }
        )
        return
    err.print(f"ablate {p.ablate_id}: {len(result.run_keys)} runs stored", highlight=False)
    console.print(summary(p, result), highlight=False, soft_wrap=True)
