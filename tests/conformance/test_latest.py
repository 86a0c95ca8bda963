"""What `make conformance-latest` watches besides the suite: where a release's client takes its
SSE framing from (vLLM's handler, or an `endpoint_request_func.py` vllm-omni ships), and
which definitions the suite reads from vLLM changed in a newer vLLM release. The trees are
scratch copies of the pinned 0.32.0rc1 wheel and its vLLM sdist with the move planted."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.latest import VLLM_MODULE, changed, framing_moved, suite_modules
from tests.conformance.test_mutants import HANDLER, MUTANTS, PATCH, Edit, scratch_copy

SHIPPED = "vllm_omni/benchmarks/lib/endpoint_request_func.py"


def test_the_pinned_client_frames_by_vllms_handler(tmp_path: Path) -> None:
    root, _ = scratch_copy(tmp_path)
    assert framing_moved(root) == []


def test_a_shipped_request_func_and_a_moved_import_are_reported(tmp_path: Path) -> None:
    moved = Edit(
        PATCH,
        "from vllm.benchmarks.lib.endpoint_request_func import (",
        "from vllm_omni.benchmarks.lib.endpoint_request_func import (",
    )
    root, vllm = scratch_copy(tmp_path, [moved])
    (root / SHIPPED).parent.mkdir(parents=True, exist_ok=True)
    (root / SHIPPED).write_text((vllm / HANDLER).read_text(encoding="utf-8"), encoding="utf-8")
    assert framing_moved(root) == [
        "framing: StreamedResponseHandler from vllm_omni.benchmarks.lib.endpoint_request_func",
        f"framing: ships {SHIPPED}",
    ]


def test_a_ships_only_request_func_is_reported_too(tmp_path: Path) -> None:
    root, vllm = scratch_copy(tmp_path)
    (root / SHIPPED).parent.mkdir(parents=True, exist_ok=True)
    (root / SHIPPED).write_text((vllm / HANDLER).read_text(encoding="utf-8"), encoding="utf-8")
    assert framing_moved(root) == [f"framing: ships {SHIPPED}"]


def test_a_newer_vllms_changed_handler_is_named(tmp_path: Path) -> None:
    """A vLLM whose SSE handler splits events by line: the definition is named, vLLM's other
    modules the suite reads are not."""
    modules = [*suite_modules(VLLM_MODULE), "vllm.sampling_params"]
    assert "vllm.benchmarks.lib.endpoint_request_func" in modules
    _, pinned = scratch_copy(tmp_path / "pinned")
    _, newer = scratch_copy(tmp_path / "newer", [MUTANTS["events framed by line"]])
    assert changed(pinned, pinned, modules) == []
    assert changed(pinned, newer, modules) == [
        "vllm.benchmarks.lib.endpoint_request_func.StreamedResponseHandler"
    ]
