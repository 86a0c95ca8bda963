"""Code under test in production's process shape: a Celery main exec'd with every secret, a
pool process (Airflow's supervisor) forked from it holding a token on its heap, the task runner
forked from that, and, launched by the task runner through the product's own functions, a
hostile `vllm` and a hostile pull request's build backend.

The hostile code reads every process it can see (environ, cmdline, heap through /proc/PID/mem),
tries to plant a `.pth` in the worker's venv and to edit the trusted config, leaves a `setsid`
daemon, and prints what it found base64-encoded, so the text travels on in the errors. With the
sandbox, it finds nothing, writes nothing and leaves nothing alive; with `OMNI_SANDBOX=none` the
same code finds the secrets (so the test can fail)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.fakes.hostile import (
    HEAP_MARKER,
    SECRETS,
    VALUES,
    attack_targets,
    cmdline,
    daemon_tag,
    hostile_vllm,
    nightly_config,
    payload,
)
from tests.fakes.planted import leaks
from tests.reliability.conftest import CeleryNight


def _hostile_repo(tmp: Path, targets: list[Path]) -> tuple[Path, str]:
    """A pull request whose in-tree build backend attacks, then fails the build."""
    repo = tmp / "pr-head"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "hostile"\nversion = "1"\n'
    )
    (repo / "backend.py").write_text(
        "def _attack():\n"
        + textwrap.indent(payload(tmp, targets) + "\nraise SystemExit('build failed')\n", "    ")
        + "\ndef get_requires_for_build_wheel(config_settings=None):\n    _attack()\n"
        "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
        "    _attack()\n"
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "pr"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return repo, head


# The task runner: the product's launches, with their errors written out as they would travel.
TASK = r"""
import json, sys
from pathlib import Path
from omni_tasks.environments import EnvironmentBuildError
from omni_tasks.environments.venv import VenvStrategy
from omni_tasks.synthesis.server import ServerSpec, ServerStartError, launched
tmp, repo, head, config = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
errors = []
spec = ServerSpec(python=sys.executable, model="m", log_path=tmp / "logs" / "server.log",
                  startup_timeout_s=60, env={"OMNI_NIGHTLY_CONFIG": config})
try:
    with launched(spec):
        pass
except ServerStartError as exc:
    errors.append(str(exc))
try:
    VenvStrategy(repo, tmp / "envs").prepare(head)
except EnvironmentBuildError as exc:
    errors.append(str(exc))
(tmp / "errors.json").write_text(json.dumps(errors))
"""

# The Celery main (exec'd with the secrets, never sealed), its pool process holding a token on
# its heap, and the task runner forked from that.
SHAPE = r"""
import os, sys
heap = bytearray(b"{marker}" * 4)  # the supervisor's heap holds the task's token
pid = os.fork()
if pid == 0:
    runner = os.fork()
    if runner == 0:
        sys.argv = ["task"] + sys.argv[1:]
        exec(compile(open(os.environ["TASK_FILE"]).read(), "task", "exec"))
        os._exit(0)
    _, status = os.waitpid(runner, 0)
    os._exit(os.waitstatus_to_exitcode(status))
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
""".replace("{marker}", HEAP_MARKER)


def _leaks(text: str) -> list[str]:
    return leaks(text, [*VALUES, HEAP_MARKER])


def _attack(tmp: Path, sandbox: str) -> tuple[list[dict[str, object]], list[str], list[Path]]:
    """Run the process shape once; returns the hostile reports, the errors the product raised,
    and the targets it tried to write."""
    worker_pth = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    worker_pth = worker_pth / "site-packages" / f"omni-hostile-{uuid.uuid4().hex[:8]}.pth"
    config = tmp / "srv-omni" / "nightly.yaml"
    config.parent.mkdir()
    config.write_text("version: 2\n")
    targets = [worker_pth, config]
    bin_dir = hostile_vllm(tmp, targets)
    repo, head = _hostile_repo(tmp, targets)
    (tmp / "task.py").write_text(TASK)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "AIRFLOW"))},
        **SECRETS,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "OMNI_SANDBOX": sandbox,
        "OMNI_HOME": str(tmp / "home"),
        "TASK_FILE": str(tmp / "task.py"),
    }
    try:
        subprocess.run(
            [sys.executable, "-c", SHAPE, str(tmp), str(repo), head, str(config)],
            env=env,
            check=True,
            timeout=300,
        )
        time.sleep(0.5)
        # What the hostile code printed reached the server's and the build's logs.
        reports = [
            json.loads(bytes.fromhex(line.split("HOSTILE-HEX ", 1)[1].strip()))
            for path in tmp.rglob("*.log")
            for line in path.read_text(errors="replace").splitlines()
            if "HOSTILE-HEX " in line
        ]
        errors = json.loads((tmp / "errors.json").read_text())
        alive = [
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and daemon_tag(tmp) in cmdline(p)
        ]
        for pid in alive:
            os.kill(pid, 9)
        return [*reports, {"alive": alive}], errors, targets
    finally:
        written = worker_pth.exists()
        worker_pth.unlink(missing_ok=True)  # never leave a .pth in the test's own venv
        if written:
            reports_note = tmp / "pth-written"
            reports_note.write_text("yes")


def test_code_under_test_finds_no_secret_writes_nothing_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    reports, errors, targets = _attack(tmp_path, "bwrap")
    *hostile, alive = reports
    assert len(hostile) == 2, hostile  # the server and the build both ran their attack
    for report in hostile:
        assert report["found"] == [], report
        assert report["wrote"] == [], report
    assert alive == {"alive": []}
    assert not (tmp_path / "pth-written").exists()
    assert (tmp_path / "srv-omni" / "nightly.yaml").read_text() == "version: 2\n"
    assert len(errors) == 2 and "server log:" in errors[0] and "build log:" in errors[1]
    # Nothing planted in what travels on, nor in any file the run left (logs included).
    assert _leaks("\n".join(errors)) == []
    for path in tmp_path.rglob("*"):
        attack = {"pr-head", "src", "bin", "task.py"} & set(path.relative_to(tmp_path).parts)
        if path.is_file() and not attack:  # not the attack's own text
            assert _leaks(path.read_text(errors="replace")) == [], path
    assert targets[1].read_text() == "version: 2\n"


def test_without_the_sandbox_the_same_code_finds_every_secret(tmp_path: Path) -> None:
    """The same attack with OMNI_SANDBOX=none: it reads the ancestors' secrets and the
    supervisor's heap, writes the trusted config and leaves its daemon (so the test above
    can fail)."""
    reports, _, _ = _attack(tmp_path, "none")
    *hostile, alive = reports
    found = {v for r in hostile for v in r["found"]}  # type: ignore[union-attr]
    assert set(VALUES) <= found and HEAP_MARKER in found
    assert any(r["wrote"] for r in hostile)
    assert alive["alive"]


def test_seal_works_under_a_distributions_python(tmp_path: Path) -> None:
    """Debian's /usr/bin/python3.11 defines `environ` by copy relocation: seal() must scrub the
    block /proc shows there too (CDLL("libc.so.6") read a NULL pointer)."""
    system = Path("/usr/bin/python3.11")
    assert system.is_file(), "make test installs Debian's python3.11 (.ci/system-deps)"
    code = (
        "from omni_tasks.trust.child_env import seal; import os, json; seal(); "
        "print(json.dumps([open('/proc/self/environ','rb').read().decode(errors='replace'), "
        "os.environ['OMNI_SLACK_TOKEN']]))"
    )
    out = subprocess.run(
        [str(system), "-I", "-c", f"import sys; sys.path.insert(0, {str(Path.cwd())!r}); {code}"],
        env={"PATH": "/usr/bin:/bin", **SECRETS},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    block, still = json.loads(out.stdout)
    assert still == SECRETS["OMNI_SLACK_TOKEN"]  # the process itself still reads it
    assert _leaks(block) == []  # /proc/self/environ does not


def test_doctor_says_what_is_missing(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "omni-tasks"
    ok = subprocess.run([str(cli), "doctor", "sandbox", "--json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    shown = json.loads(ok.stdout)
    assert shown["mode"] == "bwrap" and "bubblewrap" in shown["version"]
    assert shown["checked"]["pids"] <= 3
    # bwrap not on PATH: refused, naming it.
    env = {**os.environ, "PATH": str(tmp_path)}
    missing = subprocess.run(
        [str(cli), "doctor", "sandbox"], capture_output=True, text=True, env=env
    )
    assert missing.returncode != 0 and "bubblewrap (`bwrap`) is not on PATH" in missing.stderr
    # bwrap present but unable to make its namespaces: refused, naming that.
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 0.8.0' && exit 0\n"
        "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    env["PATH"] = f"{tmp_path}{os.pathsep}/usr/bin:/bin"
    broken = subprocess.run(
        [str(cli), "doctor", "sandbox"], capture_output=True, text=True, env=env
    )
    assert broken.returncode != 0 and "cannot create its namespaces" in broken.stderr


def _runs_of(dsn: str, nightly: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT status FROM omni.run WHERE nightly = %s", (nightly,)).fetchall()
    done = sum(1 for (status,) in rows if status == "complete")
    return f"{done} complete of {len(rows)}"


def _everything_stored(dsn: str) -> str:
    """Every row of every table of the results schema, as text."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'omni' AND table_type = 'BASE TABLE'"
        ).fetchall()
        return "\n".join(
            str(row)
            for (table,) in tables
            for row in conn.execute(f'SELECT t::text FROM omni."{table}" t').fetchall()
        )


def _files_text(*roots: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for root in roots
        if root.exists()
        for p in root.rglob("*")
        if p.is_file() and p.suffix not in (".wav", ".flac", ".pyc") and "bin" not in p.parts
    )


def _reports(outputs: str) -> list[dict[str, object]]:
    return [
        json.loads(bytes.fromhex(line.split("HOSTILE-HEX ", 1)[1].split()[0]))
        for line in outputs.splitlines()
        if "HOSTILE-HEX " in line
    ]


def _assert_contained(tmp: Path, targets: list[Path], outputs: str) -> None:
    assert "planted" not in targets[1].read_text(), "the trusted config was edited"
    assert not any(t.name.endswith(".pth") and t.exists() for t in targets)
    # The sandbox's processes die with it, but a SIGKILL lands asynchronously: under load a
    # killed daemon can still be exiting when the night's last task returns. One that is
    # still there 10 s later escaped.
    deadline = time.monotonic() + 10
    while True:
        alive = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
        escaped = [p for p in alive if daemon_tag(tmp) in cmdline(p)]
        if not escaped or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert escaped == []
    found = _reports(outputs)
    assert found, "the attack ran and its words were kept somewhere"
    assert all(f["found"] == [] and f["wrote"] == [] for f in found), found
    assert _leaks(outputs) == []


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_the_nightly_dag_in_an_unsealed_parent_contains_a_hostile_server(
    results_dsn: str, tmp_path: Path, sandbox: str
) -> None:
    """`airflow dags test` run by a parent exec'd with every secret (never sealed): the hostile
    `vllm` the nightly launches finds nothing, writes nothing, leaves nothing, and no planted
    value reaches the outbox, any table, the task log or any file under the home. Without the
    sandbox the same night hands it the secrets (so the test can fail)."""
    from tests.airflow_env import REPO, airflow_env, migrate

    targets = attack_targets(tmp_path)
    _, planted = nightly_config(tmp_path, targets)
    env = airflow_env(tmp_path / "airflow", results_dsn, tmp_path / "omni-home")
    migrate(env)
    env.update(planted, OMNI_DATABASE_URL=f"{results_dsn} password={VALUES[3]}")
    env["OMNI_SANDBOX"] = sandbox
    wrapper = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
    try:
        out = subprocess.run(
            [sys.executable, "-c", wrapper, str(REPO / ".venv/bin/airflow"), "dags", "test",
             "omni_nightly", "2026-11-21", "-c", "{}"],
            env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    finally:
        targets[0].unlink(missing_ok=True)
    outputs = "\n".join(
        [
            out.stdout,
            out.stderr,
            _everything_stored(results_dsn),
            _files_text(tmp_path / "omni-home", tmp_path / "airflow"),
        ]
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "2 complete" in _runs_of(results_dsn, "2026-11-21")  # the night went on
    if sandbox == "none":
        found = {v for r in _reports(outputs) for v in r["found"]}  # type: ignore[attr-defined]
        assert set(VALUES) <= found and HEAP_MARKER in found
        for proc in Path("/proc").iterdir():  # its daemon is expected; don't leave it running
            if proc.name.isdigit() and daemon_tag(tmp_path) in cmdline(proc):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(proc.name), 9)
        return
    _assert_contained(tmp_path, targets, outputs)


@pytest.mark.xdist_group("celery_night")
def test_on_the_real_celery_worker_a_hostile_server_finds_nothing(
    celery_night: CeleryNight,
) -> None:
    """The same night on the real scheduler: `airflow celery worker` exec'd with the planted
    secrets (the shape the audit attacked), its prefork pool process, Airflow's supervisor and
    the task runner above the hostile `vllm`. Triggered through the REST API (the night and its
    cluster: tests/reliability/conftest.py)."""
    night = celery_night
    assert night.state == "success"
    # The second layer: the Celery main and its pool processes sealed themselves
    # (celery_config.py), so even their own environ blocks hold no planted value.
    assert len(night.celery) >= 2, "the Celery main and its pool processes"
    assert {cmd[:80]: _leaks(env) for cmd, env in night.celery.items() if _leaks(env)} == {}
    assert "2 complete" in _runs_of(night.results_dsn, "2026-11-21")
    outputs = "\n".join(
        [_everything_stored(night.results_dsn), _files_text(night.tmp / "omni-home", night.cluster)]
    )
    _assert_contained(night.tmp, night.targets, outputs)


def test_a_root_worker_runs_code_under_test_as_another_uid(tmp_path: Path) -> None:
    """Where the worker is root and OMNI_SANDBOX_UID is set, code under test runs as that uid
    (an escape from the namespaces still meets uid separation) and can write only its scratch,
    which it owns."""
    from omni_tasks.trust import sandbox

    assert os.geteuid() == 0, "CI runs as root, as the images' entrypoint may"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = (
        "import os, sys; open(sys.argv[1] + '/mine', 'w').write('x'); "
        "print(os.getuid(), os.getgid(), os.getgroups())"
    )
    out = sandbox.run(
        ["/usr/bin/python3.11", "-I", "-c", code, str(scratch)],
        {"PATH": "/usr/bin:/bin"},
        sandbox.Paths(writable=(scratch,)),
        timeout=60,
        pol=sandbox.Policy(uid=65534),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["65534", "65534", "[]"]
    assert (scratch / "mine").stat().st_uid == 65534
