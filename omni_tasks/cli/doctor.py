"""`omni-tasks doctor`: is this host set up the way the platform needs it?"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, doctor_app

# Run inside the sandbox: what it can see of processes, and where it can write.
_PROBE = """
import json, os, sys
pids = [p for p in os.listdir("/proc") if p.isdigit()]
def writes(path):
    try:
        with open(os.path.join(path, ".omni-sandbox-probe"), "w"):
            pass
        os.remove(os.path.join(path, ".omni-sandbox-probe"))
        return True
    except OSError:
        return False
print(json.dumps({"pids": len(pids), "uid": os.getuid(),
                  "writes": {p: writes(p) for p in sys.argv[1:]}}))
"""


@doctor_app.command("sandbox")
def doctor_sandbox(as_json: opt.JsonFlag = False) -> None:
    """Print the sandbox code under test runs in (tool, version, namespaces, uid, what is
    read-only and writable, GPU nodes), after starting one and checking it: its own PID
    namespace, the product's code read-only, its scratch writable. Exits non-zero naming the
    missing piece when bubblewrap is not on PATH or cannot create its namespaces."""
    from omni_tasks.trust import sandbox
    from omni_tasks.trust.child_env import child_env

    with opt.fails_on(sandbox.SandboxUnavailable):
        rep = sandbox.report()
        checked = _check(sandbox, child_env()) if rep.mode == "bwrap" else None
    if as_json:
        sys.stdout.write(json.dumps({**asdict(rep), "checked": checked}, indent=2) + "\n")
        return
    console.print(f"sandbox: {rep.mode}" + (f" ({rep.tool}, {rep.version})" if rep.tool else ""))
    for note in rep.notes:
        console.print(f"[bold red]warning[/]: {note}")
    console.print(f"namespaces: {', '.join(rep.namespaces) or 'none'}")
    console.print(f"worker uid {rep.uid}; code under test runs as uid {rep.runs_as}")
    console.print("read-only: " + ", ".join(rep.readable))
    console.print("writable: " + ", ".join(rep.writable))
    console.print("GPU device nodes: " + (", ".join(rep.devices) or "none found"))
    if checked is not None:
        console.print(
            f"checked: {checked['pids']} process(es) visible inside, product code read-only, "
            "scratch writable"
        )


def _check(sandbox: ModuleType, env: dict[str, str]) -> dict[str, object]:
    """Start a sandbox and verify what it promises; a broken promise is a failure."""
    package = str(Path(str(sandbox.__file__)).parent)
    with tempfile.TemporaryDirectory() as scratch:
        out = sandbox.run(
            [sys.executable, "-c", _PROBE, package, scratch],
            env,
            sandbox.Paths(writable=(Path(scratch),)),
            timeout=60,
        )
    if out.returncode != 0:
        raise sandbox.SandboxUnavailable(f"sandbox: a probe failed to start: {out.stderr[-300:]}")
    seen = json.loads(out.stdout)
    if seen["pids"] > 3:
        raise sandbox.SandboxUnavailable(f"sandbox: {seen['pids']} processes visible inside")
    if seen["writes"][package] or not seen["writes"][scratch]:
        raise sandbox.SandboxUnavailable(f"sandbox: writable paths not as set: {seen['writes']}")
    return {"pids": seen["pids"], "uid": seen["uid"]}
