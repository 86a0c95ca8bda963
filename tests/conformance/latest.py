"""`make conformance-latest`: the conformance suite against vllm-omni releases newer than the
pinned ones, and what differs.

Lists the releases on PyPI newer than every pinned wheel, takes the newest stable one and the
newest pre-release (flagged as such in the report), and for each:
- runs this suite with that wheel alone (`OMNI_UPSTREAM_CANDIDATE`: its version and PyPI's
  sha256 digests for the wheel and for vLLM's sdist of the same release), and lists the checks
  that fail;
- names the upstream definitions the suite reads (the `vllm_omni.*` modules its tests name)
  whose source changed since the newest pinned wheel.
CI stays on the pinned versions. Adding a version is its row in `omni_tasks/harness.py` plus
its hashes in `upstream.py`.

    python -m tests.conformance.latest [--json PATH] [--no-pre] [--vllm-omni-checkout DIR]

With a vllm-omni checkout it also compares our nightly deploy overlay
(`omni_tasks/synthesis/qwen3_omni_moe_ci.yaml`) with `_CI_OVERLAYS["qwen3_omni_moe"]` in the
checkout's `tests/helpers/stage_config.py` (upstream's tests ship in no wheel, so CI, which
reaches only PyPI, cannot run this part).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from packaging.version import Version

from omni_tasks.config import get_settings
from omni_tasks.jobs.upstream_watch import Release, newer, releases, sdist_sha256, to_check
from tests.conformance.upstream import CANDIDATE_ENV, PINNED, vllm_release, wheel_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODULE = re.compile(r'"(vllm_omni(?:\.[a-z_0-9]+)+)"')


def suite_modules() -> list[str]:
    """The upstream modules the suite's tests name."""
    found: set[str] = set()
    for path in HERE.glob("*.py"):
        found.update(MODULE.findall(path.read_text(encoding="utf-8")))
    return sorted(found)


def _definitions(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = ast.dump(node, include_attributes=False)
    return out


def changed(old_root: Path, new_root: Path) -> list[str]:
    """`module.name` of each top-level definition of the suite's modules that differs (added
    `+`, removed `-`) between two unpacked wheels."""
    out = []
    for module in suite_modules():
        rel = Path(*module.split(".")).with_suffix(".py")
        old, new = _definitions(old_root / rel), _definitions(new_root / rel)
        short = module.removeprefix("vllm_omni.")
        for name in sorted(old.keys() | new.keys()):
            if name not in old:
                out.append(f"+{short}.{name}")
            elif name not in new:
                out.append(f"-{short}.{name}")
            elif old[name] != new[name]:
                out.append(f"{short}.{name}")
    return out


def run_suite(release: Release, vllm_sha: str) -> dict[str, Any]:
    env = dict(os.environ)
    env[CANDIDATE_ENV] = json.dumps(
        {"version": release.version, "sha256": release.wheel_sha256, "vllm_sha256": vllm_sha}
    )
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        cmd += ["-n", "2", str(HERE), f"--junitxml={junit}"]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if not junit.is_file():
            return {
                "error": f"pytest wrote no results (rc {proc.returncode}): {proc.stderr[-500:]}"
            }
        passed, failed, reasons = 0, [], {}
        for case in ET.parse(junit).iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if problem is None and case.find("skipped") is None:
                passed += 1
            elif problem is not None:
                name = case.get("name", "?")
                failed.append(name)
                reasons[name] = (problem.get("message") or "").splitlines()[0][:300]
    return {"passed": passed, "failed": failed, "reasons": reasons}


def ci_overlay_differences(checkout: Path, name: str = "qwen3_omni_moe") -> list[str]:
    """Where our shipped overlay differs from upstream's CI overlay `name` for CUDA: the dict
    literal `_CI_OVERLAYS` read from the checkout's tests/helpers/stage_config.py without
    running it; each difference as "field: ours != theirs"."""
    import yaml

    from omni_tasks.synthesis.stages import CI_OVERLAY

    source = (checkout / "tests" / "helpers" / "stage_config.py").read_text(encoding="utf-8")
    (node,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.AnnAssign | ast.Assign)
        and "_CI_OVERLAYS"
        in ast.unparse(n.target if isinstance(n, ast.AnnAssign) else n.targets[0])
    ]
    assert node.value is not None
    theirs = ast.literal_eval(node.value)[name]
    ours = yaml.safe_load(CI_OVERLAY.read_text(encoding="utf-8"))
    out = [
        f"{k}: {ours.get(k)!r} != {theirs.get(k)!r}"
        for k in ("base_config", "async_chunk")
        if ours.get(k) != theirs.get(k)
    ]
    mine = {s["stage_id"]: s for s in ours.get("stages", [])}
    for stage in theirs.get("stages", []):
        got = mine.pop(stage["stage_id"], {})
        for k in sorted(set(stage) | set(got)):
            if got.get(k) != stage.get(k):
                out.append(f"stage {stage['stage_id']} {k}: {got.get(k)!r} != {stage.get(k)!r}")
    out += [f"stage {sid}: ours only" for sid in mine]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the report here")
    ap.add_argument("--no-pre", action="store_true", help="stable releases only")
    ap.add_argument(
        "--vllm-omni-checkout",
        type=Path,
        help="a vllm-omni checkout: also compare our deploy overlay with its CI overlay",
    )
    args = ap.parse_args(argv)
    overlay: list[str] = []
    if args.vllm_omni_checkout:
        overlay = ci_overlay_differences(args.vllm_omni_checkout)
        print("deploy overlay against the checkout's _CI_OVERLAYS['qwen3_omni_moe']:")
        for line in overlay or ["the same"]:
            print(f"  {line}")
    pypi = get_settings().pypi_url
    new = newer(releases(pypi), PINNED)
    picked = [r for r in to_check(new) if not (args.no_pre and r.prerelease)]
    newest_pinned = max(PINNED, key=Version)
    print(f"pinned: {', '.join(sorted(PINNED, key=Version))}")
    print(f"newer on PyPI: {', '.join(r.version for r in new) or 'none'}")
    report: dict[str, Any] = {"pinned": sorted(PINNED), "newer": [r.version for r in new]}
    runs = []
    for rel in picked:
        flag = " (pre-release)" if rel.prerelease else ""
        print(f"\n== vllm-omni {rel.version}{flag}: the suite, against its wheel alone")
        vllm_sha = sdist_sha256(pypi, "vllm", vllm_release(rel.version))
        result = run_suite(rel, vllm_sha)
        candidate = wheel_root(rel.version, rel.wheel_sha256)
        result["changed"] = changed(wheel_root(newest_pinned), candidate)
        result.update(version=rel.version, prerelease=rel.prerelease)
        runs.append(result)
        _print(result, newest_pinned)
    report["runs"] = runs
    report["overlay_differences"] = overlay
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if overlay or any(r.get("failed") or r.get("error") for r in runs) else 0


def _print(result: dict[str, Any], newest_pinned: str) -> None:
    if "error" in result:
        print(f"  could not run: {result['error']}")
        return
    print(f"  {result['passed']} checks pass, {len(result['failed'])} fail")
    for name in result["failed"]:
        print(f"  FAIL {name}: {result['reasons'].get(name, '')}")
    print(f"  upstream definitions the suite reads that changed since {newest_pinned}:")
    for name in result["changed"] or ["none"]:
        print(f"    {name}")


if __name__ == "__main__":
    raise SystemExit(main())
