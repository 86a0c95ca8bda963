"""A fake serving environment: `vllm` on PATH serves the simulator (transcript mode), and the
environment reports vllm / vllm-omni versions like a real one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FAKE_VLLM = """#!{python}
# A stand-in for `vllm serve MODEL --port P ...`: serves the simulator (transcript mode).
import sys
args = sys.argv[1:]
assert args[0] == "serve" and "--omni" in args, args
print("fake vllm", " ".join(args), flush=True)
if "{mode}" == "crash":
    sys.exit("CUDA out of memory (pretend)")
if "{mode}" == "hang":  # loads forever: never healthy
    import time
    time.sleep(3600)
from omni_tasks import benchmarks
from omni_tasks.synthesis.simulator import SimulatorConfig, serve_forever
config = SimulatorConfig("clean", transcript=True, answerers=benchmarks.answerers())
serve_forever(config, int(args[args.index("--port") + 1]))
"""


def fake_vllm_env(tmp_path: Path, mode: str = "serve") -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "vllm"
    exe.write_text(FAKE_VLLM.format(python=sys.executable, mode=mode))
    exe.chmod(0o755)
    site = tmp_path / "site"  # distributions the serving environment reports
    for name, version in (("vllm", "0.11.0"), ("vllm_omni", "0.11.0rc1")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(site)}
