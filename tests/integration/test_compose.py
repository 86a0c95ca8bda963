"""docker-compose.yml: valid for Debian's docker-compose, laid out as Airflow's own compose file,
and consistent with the code; .dockerignore keeps what the images copy."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from omni_tasks.config import Settings

REPO = Path(__file__).resolve().parents[2]
PUBLIC_URLS = ("OMNI_PUBLIC_URL", "OMNI_AIRFLOW_URL", "OMNI_GRAFANA_PUBLIC_URL")
# The services that run an omni-tasks image (Airflow's own compose file: `<<: *airflow-common`).
AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
    "airflow-gpu-worker",
    "flower",
    "airflow-cli",
)
ONE_SHOT = ("airflow-init", "airflow-cli")  # run to completion: no healthcheck, no restart


def env_file(tmp_path: Path, **without: str) -> Path:
    """A filled-in .env as an operator makes it from .env.example: every empty value gets a
    generated secret (a real Fernet key for the Fernet key, a URL for a URL)."""
    from cryptography.fernet import Fernet

    lines = []
    for line in (REPO / ".env.example").read_text().splitlines():
        name, eq, value = line.partition("=")
        if eq and not line.startswith("#") and name not in without:
            if not value:
                if "FERNET" in name:
                    value = Fernet.generate_key().decode()
                elif name.endswith("_URL"):
                    value = f"https://{name.lower().replace('_', '-')}.example.test"
                else:
                    value = secrets.token_urlsafe(24)
            lines.append(f"{name}={value}")
    path = tmp_path / ".env"
    path.write_text("\n".join(lines) + "\n")
    return path


def _config(env: Path | None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("docker-compose")
    assert exe, "Debian's docker-compose is required (`apt-get install docker-compose`)"
    args = [exe, *(["--env-file", str(env)] if env else []), "-f", str(REPO / "docker-compose.yml")]
    # Only the .env counts: compose would also take a value from the caller's environment.
    clean = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [*args, "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=clean,
    )


def test_compose_file_validates_and_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    """Debian's docker-compose 1.29 checks the file against its schema (Compose file 3.9 plus
    `profiles`, `init`, `depends_on` conditions): an unknown key or a wrongly typed one (a
    `profiles` that is not a list, an `init` that is not a boolean) fails. It does not check a
    duration's format (`stop_grace_period`), which test_compose_shuts_down_as_airflow_does does."""
    out = _config(env_file(tmp_path))
    assert out.returncode == 0, out.stderr
    # No literal password or key: without .env, compose stops naming what is missing.
    empty = tmp_path / "empty.env"
    empty.write_text("")
    out = _config(empty)
    assert out.returncode != 0 and "in .env" in out.stderr, out.stderr
    assert ".env" in (REPO / ".gitignore").read_text().split()  # the filled-in file stays local
    # Nor a link with a forgotten host: each public URL has no default.
    for var in PUBLIC_URLS:
        out = _config(env_file(tmp_path, **{var: ""}))
        assert out.returncode != 0 and f"set {var} in .env" in out.stderr, (var, out.stderr)


def test_compose_is_fit_for_a_team() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    env = services["airflow-scheduler"]["environment"]
    # One JWT secret and one Fernet key for every Airflow service, from .env.
    for var in ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__CORE__FERNET_KEY"):
        assert str(env[var]).startswith("${") and ":?" in str(env[var]), var
        assert all(
            services[s]["environment"][var] == env[var]
            for s in services
            if s.startswith("airflow-")
        ), var
    assert env["AIRFLOW__CORE__AUTH_MANAGER"].endswith("FabAuthManager")
    # Passwords only by reference.
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|_CONN|SQL_ALCHEMY|DATABASE_URL|BACKEND", key) and value:
                assert "${" in str(value), (name, key, value)
    for name, service in services.items():
        assert "healthcheck" in service or name in ONE_SHOT, name
        assert service.get("restart") == ("no" if name in ONE_SHOT else "unless-stopped"), name
        tag = str(service.get("image", "")).rsplit(":", 1)[-1]
        assert re.search(r"\d", tag) and tag != "latest", (name, service.get("image"))
        if name in AIRFLOW_SERVICES and name not in ONE_SHOT:
            init = service["depends_on"]["airflow-init"]
            assert init == {"condition": "service_completed_successfully"}, name
        if name in AIRFLOW_SERVICES:
            assert any(v.endswith(":/srv/omni:ro") for v in service["volumes"]), name
    assert env["OMNI_TRUSTED_ROOTS"] == '["/srv/omni"]'
    assert {"pg-data", "omni-data", "grafana-data"} <= set(compose["volumes"])
    assert any(v.startswith("grafana-data:") for v in services["grafana"]["volumes"])
    gpu = (REPO / "docker" / "Dockerfile.gpu").read_text()
    assert gpu.startswith("#") and "FROM nvidia/cuda:" in gpu and "[airflow,whisper]" in gpu
    # The sandbox is in both images, and code under test cannot write the worker's code.
    for dockerfile in ("Dockerfile", "Dockerfile.gpu"):
        assert "bubblewrap" in (REPO / "docker" / dockerfile).read_text(), dockerfile
    chowned = " ".join(re.findall(r"chown[^\n&]*", gpu))
    assert "/opt/venv" not in chowned and "/srv/omni" not in chowned, chowned
    # Redis takes a password from .env, and the broker URL carries it.
    assert "--requirepass" in services["redis"]["command"]
    assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://:${REDIS_PASSWORD:?")
    worker_env = services["airflow-gpu-worker"]["environment"]
    assert worker_env["OMNI_SANDBOX"] == "bwrap"
    assert env["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"].endswith("celery_config.CELERY_CONFIG")


def test_compose_matches_settings_provisioning_and_dags() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {*AIRFLOW_SERVICES, "postgres", "redis", "grafana"} <= set(services)
    env = services["airflow-scheduler"]["environment"]
    from omni_tasks.deployment.reading import ENV as CONFIG_ENV

    known = {f"OMNI_{name.upper()}" for name in Settings.model_fields} | {CONFIG_ENV}
    omni_vars = {k for k in env if k.startswith("OMNI_")}
    assert omni_vars <= known, omni_vars - known  # every OMNI_* is a real setting
    # Links people click point where a browser can go: the operator says where, in .env
    # (no default, neither localhost nor a container name), and every Airflow service has it.
    example = dict(
        line.split("=", 1)
        for line in (REPO / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    for var in PUBLIC_URLS:
        assert example[var] == "", (var, example[var])
        for name in AIRFLOW_SERVICES:
            value = services[name]["environment"][var]
            assert value == f"${{{var}:?set {var} in .env}}", (name, var, value)
    # The GPU worker consumes the queue the DAGs put GPU tasks on, with a device reservation.
    gpu = services["airflow-gpu-worker"]
    assert "--queues ${OMNI_GPU_QUEUES:-gpu}" in gpu["command"]  # the default lane's queue
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    # The nightly's GPU tasks go to their series' lane's queue (test_dags.py reads it off the
    # parsed DAG, per lane); a one-series config's lane is the default, whose queue is `gpu`.
    from omni_tasks.deployment.night import Lane

    assert Lane().queue == "gpu"
    # Grafana gets every variable its datasource provisioning interpolates.
    datasource = (REPO / "dashboards/provisioning/datasources/omni-results.yaml").read_text()
    needed = set(re.findall(r"\$\{(\w+)\}", datasource))
    assert needed <= set(services["grafana"]["environment"]), needed
    mounts = " ".join(services["grafana"]["volumes"])
    assert "./dashboards/provisioning:/etc/grafana/provisioning" in mounts
    # The pool the DAGs use is created at init with room for at least one two-GPU server.
    assert "pools set gpu" in _script(services["airflow-init"])


def _script(service: dict[str, Any]) -> str:
    command = service.get("command", "")
    return command if isinstance(command, str) else " ".join(command)


def _mount(service: dict[str, Any], volume: str) -> str | None:
    """Where a service mounts a named volume."""
    for spec in service.get("volumes", []):
        source, _, target = str(spec).partition(":")
        if source == volume:
            return target.split(":")[0]
    return None


def _seconds(duration: str) -> float:
    """A compose duration (`1h30m`, `90s`, `1m30.5s`); anything else fails."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    return sum(float(n) * scale[u] for n, u in parts)


def test_compose_owns_its_volumes_as_airflow_does() -> None:
    """Airflow's own compose file: every Airflow service runs as ${AIRFLOW_UID}:0 and airflow-init,
    as root, creates the shared folders and hands them to that user. Without that step the
    omni-data volume is root:root where it is first mounted (the CPU image has no such folder) and
    no task can write audio, reports or the outbox."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    init = services["airflow-init"]
    assert init["user"] == "0:0"
    for name in AIRFLOW_SERVICES:
        if name != "airflow-init":
            assert services[name]["user"] == "${AIRFLOW_UID:-50000}:0", name
    example = (REPO / ".env.example").read_text()
    assert re.search(r"^AIRFLOW_UID=50000$", example, re.M)
    # Both volumes an Airflow service writes, where each service mounts them.
    data = {_mount(services[name], "omni-data") for name in AIRFLOW_SERVICES}
    logs = {_mount(services[name], "airflow-logs") for name in AIRFLOW_SERVICES}
    assert data == {"/var/lib/omni-tasks"}, data  # a task's log on every service, same place
    assert logs == {"/opt/airflow/logs"}, logs
    assert {"omni-data", "airflow-logs"} <= set(compose["volumes"])
    env = services["airflow-worker"]["environment"]
    assert env["OMNI_HOME"] == "/var/lib/omni-tasks"
    assert env["OMNI_AUDIO_ROOT"].startswith("/var/lib/omni-tasks/")
    # The logs volume is Airflow's log folder in both images (AIRFLOW_HOME/logs; the CPU image's
    # AIRFLOW_HOME is apache/airflow's /opt/airflow).
    gpu = (REPO / "docker" / "Dockerfile.gpu").read_text()
    assert "AIRFLOW_HOME=/opt/airflow" in gpu
    assert "AIRFLOW__LOGGING__BASE_LOG_FOLDER" not in env
    # The ownership step: both folders made and handed to AIRFLOW_UID, after every step that
    # may write there as root.
    script = _script(init)
    steps = [line.strip() for line in script.splitlines() if line.strip()]
    mkdir = next(s for s in steps if s.startswith("mkdir "))
    chown = shlex.split(steps[-1])
    assert chown[:3] == ["chown", "-R", "${AIRFLOW_UID:-50000}:0"], steps[-1]
    for folder in ("/var/lib/omni-tasks", "/opt/airflow/logs"):
        assert folder in shlex.split(mkdir) and folder in chown, (folder, script)
    assert steps.index(mkdir) < next(i for i, s in enumerate(steps) if "db migrate" in s)


def test_compose_shuts_down_as_airflow_does() -> None:
    """Celery workers shut down warm (the running task finishes) and only once the api-server
    answers do they start; the GPU worker has an init and time for its task."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    workers = [n for n, s in services.items() if _script(s).startswith("celery worker")]
    assert sorted(workers) == ["airflow-gpu-worker", "airflow-worker"], workers
    for name in workers:
        worker = services[name]
        assert worker["environment"]["DUMB_INIT_SETSID"] == "0", name
        assert worker["depends_on"]["airflow-apiserver"] == {"condition": "service_healthy"}, name
        assert worker["depends_on"]["airflow-init"] == {
            "condition": "service_completed_successfully"
        }, name
    gpu = services["airflow-gpu-worker"]
    # The GPU image runs `airflow` itself: Docker's init is PID 1 (reaps, forwards SIGTERM).
    assert gpu["init"] is True
    # Compose's 10 s default would kill run_branch mid-clip; the grace covers the default
    # lane's task, by default and as .env.example sets it.
    from omni_tasks.deployment.night import Lane

    longest = Lane().execution_timeout_s
    grace = re.fullmatch(r"\$\{OMNI_GPU_STOP_GRACE_PERIOD:-([^}]+)\}", gpu["stop_grace_period"])
    assert grace, gpu["stop_grace_period"]
    example = re.search(
        r"^OMNI_GPU_STOP_GRACE_PERIOD=(\S+)$", (REPO / ".env.example").read_text(), re.M
    )
    assert example
    for value in (grace.group(1), example.group(1)):
        assert _seconds(value) >= longest, (value, longest)


def test_compose_has_airflows_optional_services() -> None:
    """Flower (profile flower) and an airflow CLI (profile debug), as Airflow's compose file has
    them; `docker compose up` starts neither."""
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    profiled = {name: s["profiles"] for name, s in services.items() if "profiles" in s}
    assert profiled == {"flower": ["flower"], "airflow-cli": ["debug"]}, profiled
    flower = services["flower"]
    assert flower["command"] == "celery flower" and flower["ports"] == ["5555:5555"]
    # Flower can revoke and terminate tasks: never without a login.
    auth = flower["environment"]["AIRFLOW__CELERY__FLOWER_BASIC_AUTH"]
    assert auth.endswith("${FLOWER_PASSWORD:?set FLOWER_PASSWORD in .env}"), auth
    assert "/healthcheck" in " ".join(flower["healthcheck"]["test"])  # the one open endpoint
    cli = services["airflow-cli"]
    assert cli["command"] == ["bash", "-c", "airflow"]
    assert cli["environment"]["CONNECTION_CHECK_MAX_COUNT"] == "0"
    assert "airflow-init" not in cli["depends_on"]  # for looking into a failed init too


def _copies(dockerfile: Path) -> list[str]:
    """The sources of a Dockerfile's COPY lines from the build context (not --from=)."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    sources: list[str] = []
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if len(words) < 2 or words[0].upper() not in ("COPY", "ADD"):
            continue
        rest = words[1].strip()
        flags = re.findall(r"--\S+", rest)
        if any(f.startswith("--from=") for f in flags):
            continue
        rest = re.sub(r"--\S+\s*", "", rest)
        args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
        sources += args[:-1]
    return sources


def _dockerignore() -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore as Docker reads it: a pattern also excludes what is under what it matches;
    `**` spans folders; a later `!pattern` takes back an earlier exclusion."""
    rules = []
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rx, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                rx, i = rx + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                rx, i = rx + ".*", i + 2
            elif pattern[i] == "*":
                rx, i = rx + "[^/]*", i + 1
            elif pattern[i] == "?":
                rx, i = rx + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                rx, i = rx + pattern[i : end + 1], end + 1
            else:
                rx, i = rx + re.escape(pattern[i]), i + 1
        rules.append((negate, re.compile(rx)))
    return rules


def _ignored(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for negate, rx in rules:
        if any(rx.fullmatch(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_keeps_what_the_images_copy_and_nothing_local() -> None:
    rules = _dockerignore()
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for dockerfile in sorted((REPO / "docker").glob("Dockerfile*")):
        sources = _copies(dockerfile)
        assert sources, dockerfile
        for source in sources:
            source = source.rstrip("/")
            assert (REPO / source).exists(), (dockerfile.name, source)
            files = [f for f in tracked if f == source or f.startswith(source + "/")]
            assert files, (dockerfile.name, source)
            dropped = [f for f in files if _ignored(f, rules)]
            assert not dropped, (dockerfile.name, dropped[:5])
    # What never goes to the daemon: the 4 GB venv, the repository, secrets, caches, local data.
    for local in (
        ".venv/bin/python",
        ".git/HEAD",
        ".env",
        ".env.production",
        "omni_tasks/__pycache__/config.cpython-311.pyc",
        "omni_tasks.egg-info/PKG-INFO",
        ".pytest_cache/README.md",
        ".omni-home/audio/clip.wav",
        "bench/.data/seed-tts/meta.lst",
    ):
        assert _ignored(local, rules), local
