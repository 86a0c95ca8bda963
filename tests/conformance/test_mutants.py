"""The replay cases have teeth: upstream's 0.32.0rc1 client, copied to a scratch directory with
one of its rules edited and loaded by the suite's own loader, disagrees with ours on some case;
the unedited copy agrees on every case. And a release without a harness row (the same code
under a new version string) reads as "no harness row; the replayed rules agree", not as rule
failures.

The 300 s one-chunk case (`Case.slow`) is left out here: no edit below touches a bound, and
`test_client_rules.py` replays it against the wheel itself."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from omni_tasks.harness import client_rules
from tests.conformance.conftest import nearest_row
from tests.conformance.latest import rules_verdict
from tests.conformance.replay import CASES, Replay, verdict, write_prompt
from tests.conformance.upstream import PINNED, Upstream, source_version, vllm_root, wheel_root
from tests.conformance.vllm_facts import standins

VERSION = "0.32.0rc1"
PATCH = "vllm_omni/benchmarks/patch/patch.py"
# vLLM's SSE framing, which 0.32.0rc1's client imports (`StreamedResponseHandler`).
HANDLER = "vllm/benchmarks/lib/endpoint_request_func.py"


@dataclass(frozen=True)
class Edit:
    """Replace `old` (found exactly once) by `new` in `file` of the wheel's source (or, for a
    `vllm/` file, of vLLM's sdist)."""

    file: str
    old: str
    new: str


MUTANTS: dict[str, Edit] = {
    "token_ids are not output": Edit(PATCH, 'streamed_choice.get("token_ids")', "None"),
    "a choice's text is not output": Edit(PATCH, 'streamed_choice.get("text")', "None"),
    "a choice's message is not output": Edit(PATCH, 'streamed_choice.get("message")', "None"),
    "a role-only delta is output": Edit(PATCH, 'if key != "role"', "if True"),
    "a tool call is not output": Edit(
        PATCH, 'if key != "role"', 'if key not in ("role", "tool_calls")'
    ),
    "1 retry": Edit(PATCH, "max_retries = 3", "max_retries = 1"),
    "a 429 is retried too": Edit(
        PATCH,
        "                    if response.status == 503:\n",
        "                    retryable_response = response.status == 429\n"
        "                    if response.status == 503:\n",
    ),
    "a 500 is retried too": Edit(
        PATCH,
        "                    if response.status == 503:\n",
        "                    retryable_response = response.status == 500\n"
        "                    if response.status == 503:\n",
    ),
    "an error chunk does not fail the request": Edit(
        PATCH,
        "output.success = not streaming_error_received\n                    retryable_response =",
        "output.success = True\n                    retryable_response =",
    ),
    "strict base64": Edit(
        PATCH,
        "audio_bytes = base64.b64decode(content)",
        "audio_bytes = base64.b64decode(content, validate=True)",
    ),
    # The stream is read no further once `[DONE]` arrives: the events left in this read are
    # dropped and every later read yields none.
    "reading stops at [DONE]": Edit(
        PATCH,
        'chunk = message.removeprefix("data: ")\n                            if chunk != "[DONE]":',
        'chunk = message.removeprefix("data: ")\n'
        '                            if chunk == "[DONE]":\n'
        "                                handler.add_chunk = lambda _: []\n"
        "                                break\n"
        '                            if chunk != "[DONE]":',
    ),
    "events framed by line": Edit(
        HANDLER,
        'message, self.buffer = self.buffer.split("\\n\\n", 1)',
        'message, self.buffer = self.buffer.split("\\n", 1)',
    ),
    "a last event without its blank line is dropped": Edit(
        HANDLER, 'if self.buffer.startswith("data: "):', "if False:"
    ),
}


def scratch_copy(dest: Path, edits: Sequence[Edit] = ()) -> tuple[Path, Path]:
    """The pinned 0.32.0rc1 wheel's source and its vLLM sdist's, under `dest` with `edits`
    planted: (vllm-omni root, vLLM root). vLLM's tree is linked file by file (3,000 files),
    an edited file replaced by an edited copy, so the cache is never written."""
    root, vllm = dest / "src", dest / "vllm"
    shutil.copytree(wheel_root(VERSION, PINNED[VERSION]) / "vllm_omni", root / "vllm_omni")
    shutil.copytree(vllm_root(VERSION) / "vllm", vllm / "vllm", copy_function=os.symlink)
    for edit in edits:
        path = (vllm if edit.file.startswith("vllm/") else root) / edit.file
        text = path.read_text(encoding="utf-8")
        found = text.count(edit.old)
        assert found == 1, f"{edit.file}: {edit.old!r} found {found} times, not once"
        path.unlink()  # a link into the cache: the edit goes to a file of its own
        path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")
    return root, vllm


def loaded(roots: tuple[Path, Path]) -> Upstream:
    """The copy through the suite's loader, as the version its source says it is."""
    root, vllm = roots
    return Upstream(source_version(root), standins(VERSION), root=root, vllm=vllm)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Replay:
    prompt = write_prompt(tmp_path_factory.mktemp("prompt"))
    return Replay(client_rules(VERSION), prompt, [c for c in CASES if not c.slow])


def test_the_unedited_copy_agrees_on_every_case(replay: Replay, tmp_path: Path) -> None:
    assert replay.disagreeing(loaded(scratch_copy(tmp_path))) == []


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_one_rule_edit_is_caught(replay: Replay, tmp_path: Path, mutant: str) -> None:
    caught = replay.disagreeing(loaded(scratch_copy(tmp_path, [MUTANTS[mutant]])), first_only=True)
    assert caught, f"no case tells upstream's client with {mutant!r} from ours"


NEW = Edit("vllm_omni/_version.py", f"version = '{VERSION}'", "version = '0.33.0'")


def test_a_release_without_a_row_reads_as_a_missing_row(replay: Replay, tmp_path: Path) -> None:
    """0.32.0rc1's code as "0.33.0": no row, and every rule agrees with the nearest one."""
    upstream = loaded(scratch_copy(tmp_path, [NEW]))
    assert (upstream.version, nearest_row(upstream.version)) == ("0.33.0", VERSION)
    said = verdict(upstream.version, replay.disagreeing(upstream))
    assert said == "no harness row for 0.33.0; the replayed rules agree with 0.32.0rc1"


def test_a_release_without_a_row_names_the_rules_that_changed(
    replay: Replay, tmp_path: Path
) -> None:
    upstream = loaded(scratch_copy(tmp_path, [NEW, MUTANTS["1 retry"]]))
    said = verdict(upstream.version, replay.disagreeing(upstream))
    assert said == (
        "no harness row for 0.33.0; the replayed rules agree with 0.32.0rc1 except: 503 twice, "
        "503 four times, a drop before output twice, a drop before output four times"
    )


def test_conformance_latest_reads_the_verdict_off_the_suites_failures() -> None:
    """`make conformance-latest` runs the suite in pytest and reads the replay cases' verdict
    off the failed test ids (junit names as pytest writes them)."""
    failed = [
        "test_replayed_rule_agrees[0.33.0-503 twice]",
        "test_c_server_shaped_streams_read_the_same_whole_and_in_pieces[0.33.0]",
        "test_replayed_rule_agrees[0.33.0-a choice's text, then a drop]",
    ]
    assert rules_verdict("0.33.0", failed) == (
        "no harness row for 0.33.0; the replayed rules agree with 0.32.0rc1 except: "
        "503 twice, a choice's text, then a drop"
    )
    assert rules_verdict("0.33.0", failed[1:2]) == (
        "no harness row for 0.33.0; the replayed rules agree with 0.32.0rc1"
    )
    assert rules_verdict(VERSION, [f"test_replayed_rule_agrees[{VERSION}-a 429]"]) == (
        "0.32.0rc1: the replayed rules disagree with its harness row: a 429"
    )
