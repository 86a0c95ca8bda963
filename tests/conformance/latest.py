"""`make conformance-latest`: the conformance suite against vllm-omni releases newer than the
pinned ones, and what differs.

Lists the releases on PyPI newer than every pinned wheel, takes the newest stable one and the
newest pre-release (flagged as such in the report), and for each:
- runs this suite with that wheel alone (`OMNI_UPSTREAM_CANDIDATE`: its version and PyPI's
  sha256 digests for the wheel and for vLLM's sdist of the same release), and lists the checks
  that fail; a release without a harness row is held to the nearest row, and the report says
  so first: "no harness row for X; the replayed rules agree with <row> except: <cases>";
- names the upstream definitions the suite reads (the `vllm_omni.*` modules its tests name)
  whose source changed since the newest pinned wheel, and where its client takes its SSE
  framing from: the module `patch.py` imports `StreamedResponseHandler` from (vLLM's
  `vllm.benchmarks.lib.endpoint_request_func` in every pinned wheel) and any
  `endpoint_request_func.py` the wheel ships itself; either moving is listed as a change.
It also watches vLLM: the releases on PyPI newer than the newest pinned vLLM sdist (the next
vllm-omni rebases onto one), and for the newest of them the vLLM definitions the suite reads
(the `vllm.*` modules its tests name, and `vllm.sampling_params`) that changed since.
CI stays on the pinned versions. Adding a version is its row in `omni_tasks/harness.py` plus
its hashes in `upstream.py`.

    python -m tests.conformance.latest [--json PATH] [--no-pre] [--vllm-omni-checkout DIR]

With a vllm-omni checkout it also compares our nightly deploy overlay
(`omni_tasks/synthesis/qwen3_omni_moe_ci.yaml`), as the nightly serves it on CUDA, ROCm and XPU,
with `_CI_OVERLAYS["qwen3_omni_moe"]` in the checkout's `tests/helpers/stage_config.py` as the
checkout's accuracy test (`tests/e2e/accuracy/qwen3_omni/test_qwen3_omni.py`) serves it there:
its `get_chunk_config()` switch applied, so a flip of it is reported (upstream's tests ship in no
wheel, so CI, which reaches only PyPI, cannot run this part).
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

import httpx
from packaging.version import Version

from omni_tasks.config import get_settings
from omni_tasks.jobs.upstream_watch import ANCHOR, HREF, Release, newer, releases
from tests.conformance.upstream import (
    CANDIDATE_ENV,
    PINNED,
    PINNED_VLLM,
    vllm_release,
    vllm_root,
    wheel_root,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODULE = re.compile(r'"(vllm_omni(?:\.[a-z_0-9]+)+)"')
VLLM_MODULE = re.compile(r'"(vllm(?:\.[a-z_0-9]+)+)"')
# Where every pinned wheel's client takes its SSE framing (`StreamedResponseHandler`) from.
FRAMING_MODULE = "vllm.benchmarks.lib.endpoint_request_func"


def sdist_sha256(pypi_url: str, package: str, version: str) -> str:
    """PyPI's sha256 of a release's sdist (simple index)."""
    r = httpx.get(f"{pypi_url.rstrip('/')}/simple/{package}/", timeout=60, follow_redirects=True)
    r.raise_for_status()
    name = re.escape(f"{package}-{version}.tar.gz")
    found = re.search(rf"/{name}#sha256=([0-9a-f]{{64}})", r.text)
    if found is None:
        raise LookupError(f"{package}-{version}.tar.gz is not on {pypi_url}")
    return found.group(1)


def to_check(new: list[Release]) -> list[Release]:
    """The newest stable release, and the newest pre-release when it is newer still."""
    stable = [rel for rel in new if not rel.prerelease]
    picked = stable[-1:]
    if new and new[-1].prerelease:
        picked.append(new[-1])
    return picked


def suite_modules(pattern: re.Pattern[str] = MODULE) -> list[str]:
    """The upstream modules (vllm-omni's, or with VLLM_MODULE vLLM's) the suite's tests name."""
    found: set[str] = set()
    for path in HERE.glob("*.py"):
        found.update(pattern.findall(path.read_text(encoding="utf-8")))
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


def changed(old_root: Path, new_root: Path, modules: list[str] | None = None) -> list[str]:
    """`module.name` of each top-level definition of `modules` (the suite's vllm-omni modules)
    that differs (added `+`, removed `-`) between two unpacked source trees."""
    out = []
    for module in suite_modules() if modules is None else modules:
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


def framing_moved(root: Path) -> list[str]:
    """How a vllm-omni tree's client frames SSE otherwise than every pinned wheel's: the
    module `patch.py` now imports `StreamedResponseHandler` from, if not vLLM's, and each
    `endpoint_request_func.py` the tree ships (its handler may be the one that frames)."""
    patch = root / "vllm_omni" / "benchmarks" / "patch" / "patch.py"
    source = patch.read_text(encoding="utf-8") if patch.is_file() else ""
    found = {
        "." * node.level + (node.module or "")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        and any(alias.name == "StreamedResponseHandler" for alias in node.names)
    }
    where = ", ".join(sorted(found)) or "nowhere (patch.py imports none)"
    out = [] if found == {FRAMING_MODULE} else [f"framing: StreamedResponseHandler from {where}"]
    for path in sorted(root.rglob("endpoint_request_func.py")):
        out.append(f"framing: ships {path.relative_to(root)}")
    return out


def vllm_sdists(pypi_url: str) -> dict[str, str]:
    """vLLM's releases with an sdist on PyPI's simple index (vLLM's wheels are built per
    platform; the suite reads the sdist): version → sha256, oldest first, yanked files and
    names that do not parse left out."""
    r = httpx.get(f"{pypi_url.rstrip('/')}/simple/vllm/", timeout=60, follow_redirects=True)
    r.raise_for_status()
    sdist = re.compile(r"/vllm-([^/#]+)\.tar\.gz#sha256=([0-9a-f]{64})$")
    out = {}
    for anchor in ANCHOR.finditer(r.text):
        href = HREF.search(anchor.group("attrs"))
        found = sdist.search(href.group(1)) if href else None
        if found is None or "data-yanked" in anchor.group("attrs"):
            continue
        try:
            out[str(Version(found.group(1)))] = found.group(2)
        except ValueError:
            continue
    return dict(sorted(out.items(), key=lambda item: Version(item[0])))


def watch_vllm(pypi_url: str) -> dict[str, Any]:
    """vLLM releases newer than the newest pinned sdist, and for the newest of them the
    definitions the suite reads from vLLM that changed."""
    found = vllm_sdists(pypi_url)
    pinned = max(PINNED_VLLM, key=Version)
    new = [v for v in found if Version(v) > Version(pinned)]
    report: dict[str, Any] = {"pinned": pinned, "newer": new, "changed": []}
    if new:
        modules = [*suite_modules(VLLM_MODULE), "vllm.sampling_params"]
        old, latest = vllm_root(pinned), vllm_root(new[-1], found[new[-1]])
        report.update(checked=new[-1], changed=changed(old, latest, modules))
    return report


def run_suite(release: Release, vllm_sha: str) -> dict[str, Any]:
    env = dict(os.environ)
    env[CANDIDATE_ENV] = json.dumps(
        {"version": release.version, "sha256": release.wheel_sha256, "vllm_sha256": vllm_sha}
    )
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        # The mutation check tests the suite itself on a pinned wheel, not the candidate.
        cmd += ["-n", "2", str(HERE), f"--ignore={HERE / 'test_mutants.py'}"]
        cmd += [f"--junitxml={junit}"]
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
    rules = rules_verdict(release.version, failed)
    return {"passed": passed, "failed": failed, "reasons": reasons, "rules": rules}


def rules_verdict(version: str, failed: list[str]) -> str:
    """The replay cases' verdict (`replay.verdict`) from the suite's failed test names: a
    release without a harness row is replayed against the nearest row, so "no row" and "a
    rule changed" read apart."""
    from tests.conformance.replay import verdict
    from tests.conformance.test_client_rules import test_replayed_rule_agrees

    prefix = f"{test_replayed_rule_agrees.__name__}[{version}-"
    return verdict(version, [n[len(prefix) : -1] for n in failed if n.startswith(prefix)])


ACCURACY_TEST = Path("tests/e2e/accuracy/qwen3_omni/test_qwen3_omni.py")
# The platforms whose served deploy `main` compares (upstream's accuracy lanes).
OVERLAY_PLATFORMS = ("cuda", "rocm", "xpu")


class SwitchUnread(ValueError):
    """The accuracy test no longer has the shape its switch is read from; says what moved."""


def ci_overlay_differences(
    checkout: Path, name: str = "qwen3_omni_moe", platform: str = "cuda"
) -> list[str]:
    """Where our shipped overlay, as the nightly serves it on `platform`, differs from upstream's
    CI overlay `name` as upstream's accuracy test serves it there: the dict literal
    `_CI_OVERLAYS` read from the checkout's tests/helpers/stage_config.py, under the updates the
    test's own switch applies on that platform (`get_chunk_config()`'s `modify_stage_config`
    updates where the test serves it, none where it serves `_CI_DEPLOY`), both read without
    running them; each difference as "field: ours != theirs"."""
    import yaml

    from omni_tasks.synthesis.stages import CI_OVERLAY, served_switch

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
    try:
        served = accuracy_switches(checkout, platform)
    except SwitchUnread as exc:
        return [f"accuracy test: {exc}"]
    if len(served) != 1:
        return [f"accuracy test: serves {len(served)} deploy configs on {platform}, ours one"]
    theirs = apply_updates(theirs, served[0])
    ours = yaml.safe_load(CI_OVERLAY.read_text(encoding="utf-8"))
    ours = {**ours, **served_switch(platform)}
    out = [
        f"{k}: {ours.get(k)!r} != {theirs.get(k)!r}"
        for k in sorted((set(ours) | set(theirs)) - {"stages", "platforms"})
        if ours.get(k) != theirs.get(k)
    ]
    out += _stage_differences(ours.get("stages", []), theirs.get("stages", []), "stage")
    mine, their = ours.get("platforms") or {}, theirs.get("platforms") or {}
    for plat in sorted(set(mine) | set(their)):
        a, b = mine.get(plat) or {}, their.get(plat) or {}
        for k in sorted((set(a) | set(b)) - {"stages"}):
            if a.get(k) != b.get(k):
                out.append(f"platforms.{plat} {k}: {a.get(k)!r} != {b.get(k)!r}")
        out += _stage_differences(
            a.get("stages", []), b.get("stages", []), f"platforms.{plat} stage"
        )
    return out


def _stage_differences(ours: list[Any], theirs: list[Any], label: str) -> list[str]:
    out = []
    mine = {s["stage_id"]: s for s in ours}
    for stage in theirs:
        got = mine.pop(stage["stage_id"], {})
        for k in sorted(set(stage) | set(got)):
            if got.get(k) != stage.get(k):
                out.append(f"{label} {stage['stage_id']} {k}: {got.get(k)!r} != {stage.get(k)!r}")
    return out + [f"{label} {sid}: ours only" for sid in mine]


def accuracy_switches(checkout: Path, platform: str) -> list[dict[str, Any]]:
    """The updates upstream's Qwen3-Omni accuracy test applies to the CI deploy it serves on
    `platform`, one per deploy config it serves: the module's `if
    current_omni_platform.is_<p>(): stage_configs = [...]` chain decides which, and each entry is
    `_CI_DEPLOY` (no updates) or `get_chunk_config()` (the `updates=` literal of its
    `modify_stage_config` call). Read from the source, never run."""
    path = checkout / ACCURACY_TEST
    if not path.is_file():
        raise SwitchUnread(f"no {ACCURACY_TEST} in the checkout")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    chunk = _chunk_updates(funcs["get_chunk_config"]) if "get_chunk_config" in funcs else None
    chosen = _served_configs(tree.body, platform)
    if chosen is None:
        raise SwitchUnread(f"{ACCURACY_TEST}: no `stage_configs = [...]` for {platform}")
    out: list[dict[str, Any]] = []
    for entry in chosen:
        if isinstance(entry, ast.Name) and entry.id == "_CI_DEPLOY":
            out.append({})
        elif (
            isinstance(entry, ast.Call)
            and isinstance(entry.func, ast.Name)
            and entry.func.id == "get_chunk_config"
            and not entry.args
            and chunk is not None
        ):
            out.append(chunk)
        else:
            raise SwitchUnread(f"{ACCURACY_TEST}: serves {ast.unparse(entry)} on {platform}")
    return out


def _chunk_updates(fn: ast.FunctionDef) -> dict[str, Any]:
    calls = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "modify_stage_config"
    ]
    if len(calls) != 1:
        raise SwitchUnread(f"get_chunk_config: {len(calls)} modify_stage_config calls, not one")
    (call,) = calls
    updates = next((k.value for k in call.keywords if k.arg == "updates"), None)
    if updates is None and len(call.args) > 1:
        updates = call.args[1]
    if updates is None:
        return {}
    try:
        value = ast.literal_eval(updates)
    except ValueError:
        raise SwitchUnread(
            f"get_chunk_config: updates {ast.unparse(updates)} is not a literal"
        ) from None
    if not isinstance(value, dict):
        raise SwitchUnread(f"get_chunk_config: updates {value!r} is not a mapping")
    return value


def _served_configs(body: list[ast.stmt], platform: str) -> list[ast.expr] | None:
    """The `stage_configs` list the module's top level assigns on `platform` (following its
    `if`/`elif`/`else` on `current_omni_platform.is_<p>()`)."""
    found = None
    for node in body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "stage_configs" for t in node.targets
        ):
            if not isinstance(node.value, ast.List):
                raise SwitchUnread(f"stage_configs = {ast.unparse(node.value)} is not a list")
            found = list(node.value.elts)
        elif isinstance(node, ast.If):
            branch = node.body if _holds(node.test, platform) else node.orelse
            found = _served_configs(branch, platform) or found
    return found


def _holds(test: ast.expr, platform: str) -> bool:
    if isinstance(test, ast.BoolOp):
        values = [_holds(v, platform) for v in test.values]
        return any(values) if isinstance(test.op, ast.Or) else all(values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return not _holds(test.operand, platform)
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and isinstance(test.func.value, ast.Name)
        and test.func.value.id == "current_omni_platform"
        and test.func.attr.startswith("is_")
        and not test.args
    ):
        return test.func.attr == f"is_{platform}"
    raise SwitchUnread(f"{ACCURACY_TEST}: cannot tell on which platform `{ast.unparse(test)}`")


def apply_updates(config: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    """`modify_stage_config`'s updates over a config, as upstream applies them: a top-level key
    is set, a dotted one walks the mappings, `stages` / `stage_args` maps a stage id to its
    keys (dotted within the stage)."""
    import copy

    out = copy.deepcopy(config)
    for key, value in updates.items():
        if key in ("stages", "stage_args") and isinstance(value, dict):
            by_id = {s.get("stage_id"): s for s in out.get("stages", [])}
            for sid, fields in value.items():
                if int(sid) not in by_id:
                    raise SwitchUnread(f"updates name stage {sid}, which the overlay lacks")
                for path, v in fields.items():
                    _set(by_id[int(sid)], path, v)
        else:
            _set(out, key, value)
    return out


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        doc = doc.setdefault(part, {})
    doc[last] = value


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
        print(
            "deploy overlay as served against the checkout's _CI_OVERLAYS['qwen3_omni_moe'] "
            f"under its accuracy test's switch ({ACCURACY_TEST}):"
        )
        for platform in OVERLAY_PLATFORMS:
            found = ci_overlay_differences(args.vllm_omni_checkout, platform=platform)
            overlay += [f"{platform}: {line}" for line in found]
            for line in found or ["the same"]:
                print(f"  {platform}: {line}")
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
        result["changed"] += framing_moved(candidate)
        result.update(version=rel.version, prerelease=rel.prerelease)
        runs.append(result)
        _print(result, newest_pinned)
    report["runs"] = runs
    report["overlay_differences"] = overlay
    report["vllm"] = vllm = watch_vllm(pypi)
    print(f"\nvLLM newer than the pinned {vllm['pinned']}: {', '.join(vllm['newer']) or 'none'}")
    if vllm["newer"]:
        print(f"  vLLM definitions the suite reads that changed in {vllm['checked']}:")
        for name in vllm["changed"] or ["none"]:
            print(f"    {name}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    failing = any(r.get("failed") or r.get("error") for r in runs)
    return 1 if overlay or failing or vllm["changed"] else 0


def _print(result: dict[str, Any], newest_pinned: str) -> None:
    if "error" in result:
        print(f"  could not run: {result['error']}")
        return
    print(f"  {result['rules']}")
    print(f"  {result['passed']} checks pass, {len(result['failed'])} fail")
    for name in result["failed"]:
        print(f"  FAIL {name}: {result['reasons'].get(name, '')}")
    print(f"  upstream definitions the suite reads that changed since {newest_pinned}:")
    for name in result["changed"] or ["none"]:
        print(f"    {name}")


if __name__ == "__main__":
    raise SystemExit(main())
