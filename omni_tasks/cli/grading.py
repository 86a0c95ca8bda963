"""Score one clip; grade a stored run."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, json_out


@app.command("wer")
def wer_cmd(
    reference: Annotated[str, typer.Argument(help="Reference (target) text")],
    hypothesis: Annotated[str, typer.Argument(help="What the ASR heard")],
    system_prompt: Annotated[
        str | None, typer.Option(help="System prompt for the task-leak flag (default: §1's)")
    ] = None,
    tail_threshold: opt.TailThreshold = None,
    lang: Annotated[
        str, typer.Option(help="en (words, lowercased) or zh (per character), as seed-tts-eval")
    ] = "en",
    as_json: opt.JsonFlag = False,
) -> None:
    """Score one clip exactly as seed-tts-eval does, with its failure mode and flags."""
    from omni_tasks.analysis.failure_modes import diagnose
    from omni_tasks.grading import flags
    from omni_tasks.grading.wer import score
    from omni_tasks.records import ClipRecord

    with opt.fails_on(ValueError):
        result = score(reference, hypothesis, lang)
    _, tau = opt.policy_and_tau(tail_threshold)
    prompt = flags.DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
    clip = ClipRecord(
        utt_id="-",
        reference_text=reference,
        synth_status="ok",
        grade_status="graded",
        wer=result.wer,
        ref_words=result.ref_words,
        hyp_words=result.hyp_words,
        task_leak=flags.task_leak(reference, hypothesis, prompt),
        is_question=flags.is_question(reference),
    )
    diag = diagnose(clip, tau)
    out: dict[str, Any] = result.to_dict()
    out.pop("hypothesis_norm")
    out.update(
        tau=tau,
        broken=diag is not None,
        failure_mode=diag.mode if diag else None,
        task_leak=clip.task_leak,
        is_question=clip.is_question,
        answered=bool(diag and diag.answered),
    )
    if as_json:
        json_out(out)
        return
    console.print(
        f"WER {result.wer:.4f} (capped {result.wer_capped:.4f}); S={result.substitutions} "
        f"D={result.deletions} I={result.insertions} hits={result.hits}; "
        f"{result.ref_words} reference words, {result.hyp_words} heard",
    )
    if diag:
        flags_on = [f for f in ("task_leak", "is_question", "answered") if out[f]]
        console.print(
            f"broken at tau {tau}: {diag.mode}" + (f" ({', '.join(flags_on)})" if flags_on else ""),
        )


@app.command("grade")
def grade_cmd(
    run_key: Annotated[
        str, typer.Argument(help="Run whose stored audio to grade (key or unique prefix)")
    ],
    backend: opt.BackendOpt = "faster-whisper",
    model: opt.ModelOpt = None,
    precision: opt.PrecisionOpt = None,
    window: opt.WindowOpt = None,
    harness_version: opt.HarnessOpt = None,
    beam_size: opt.BeamOpt = 1,
    batch_size: opt.BatchOpt = 8,
    device: opt.DeviceOpt = "cpu",
    replace: Annotated[
        bool, typer.Option(help="Grade again even if this grader already graded the run")
    ] = False,
    as_json: opt.JsonFlag = False,
) -> None:
    """Grade a run's stored audio into a new grading (re-grading never creates a run).

    Compare it with the original afterwards: `omni-tasks compare --baseline K --candidate K
    --baseline-grader OLD --candidate-grader NEW` (fingerprints say if they are comparable).
    """
    from omni_tasks.grading.grade import grade_run
    from omni_tasks.store.runs import RunNotFoundError

    grader = opt.load_grader_or_fail(
        backend=backend,
        model=model,
        precision=precision,
        window=window,
        beam_size=beam_size,
        batch_size=batch_size,
        device=device,
        harness_version=harness_version,
    )
    (run_key,) = opt.run_keys_of(run_key)
    outcome = opt.on_db(
        lambda conn: grade_run(conn, run_key, grader, replace=replace, show_progress=not as_json),
        RunNotFoundError,
    )
    if as_json:
        json_out(outcome)
        return
    verb = "graded" if outcome.created else "already graded (use --replace to grade again)"
    console.print(f"{outcome.run_key}: {verb} by [bold]{outcome.grader_id}[/]")
    console.print(
        f"  {outcome.n_graded} graded, {outcome.n_empty} empty transcripts, "
        f"{outcome.n_errors} grader errors (grading {outcome.grading_id})"
    )
