"""Ablations of a confirmed regression: which deploy override brings it back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, json_out, parse_date, say


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
    branch: opt.CandidateOpt = "rebase",
    baseline: opt.BaselineOpt = "main",
    variant: opt.VariantOpt = "default",
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    dataset: opt.DatasetOpt = "demo",
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
    transcript: opt.TranscriptOpt = False,
    alert_id: opt.AlertThreadOpt = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Run the candidate stack with each ablation (one deploy override, merged by stage_id) on
    the confirmed night's regressed and control clips, beside fresh runs of the candidate and
    the baseline at the same seeds, adding a seed per round until each ablation is decided
    (regression gone, partial or unchanged) or the budget's rounds are spent; say what was
    decided, with the budget's arithmetic. Exit 1 on an error."""
    import yaml

    from omni_tasks.jobs.ablate import AblateError, AblateParams, run_ablations, summary

    listed = {}
    if ablations is not None:
        with opt.fails_on(
            OSError, yaml.YAMLError, what=f"{ablations}: cannot read the ablations", code=2
        ):
            listed["ablations"] = yaml.safe_load(ablations.read_text(encoding="utf-8"))
    p = opt.validated(
        AblateParams,
        "ablate",
        nightly=parse_date(nightly),
        candidate_target=candidate_target,
        baseline_target=baseline_target,
        branch=branch,
        baseline=baseline,
        variant=variant,
        dataset=dataset,
        seed=seed,
        control=control,
        budget=budget,
        alert_id=alert_id,
        **opt.series_fields(benchmark, model, lane, transcript),
        **listed,
    )
    result = opt.on_db(lambda conn: run_ablations(conn, p, p.nightly), AblateError, dispatch=True)
    if as_json:
        json_out(
            {
                "ablate_id": p.ablate_id,
                "clips": len(result.selection.clips),
                "reference": result.reference,
                "ablations": result.verdicts,
                "seeds": list(result.ablated.seeds),
                "budget": result.ablated.arithmetic,
                "full_runs": result.full_runs,
                "run_keys": result.run_keys,
            }
        )
        return
    say(f"ablate {p.ablate_id}: {len(result.run_keys)} runs stored")
    console.print(summary(p, result), soft_wrap=True)
