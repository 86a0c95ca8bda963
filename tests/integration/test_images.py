"""Each image as its Dockerfile writes it (there is no Docker engine here), in two checks.

**Resolution.** The image's `pip install` line, parsed from the Dockerfile (requirement,
constraints file, index options), is resolved against PyPI for the image's platform and Python
(Linux x86_64, manylinux_2_28, CPython 3.11), with no local pip configuration:

- the CPU image by pip itself, exactly as the build runs it plus `--dry-run --ignore-installed
  --report --python-version 3.11 --platform manylinux_2_28_x86_64 --only-binary=:all:` (and a
  `--platform` for each older manylinux tag, which pip does not infer);
- the GPU image by `uv pip compile` with the same inputs and `--python-platform
  x86_64-manylinux_2_28 --python-version 3.11`: pip's cross-platform flags demand wheels only,
  and openai-whisper (the [whisper] extra) is published as an sdist alone. uv is the version the
  Makefile's `lock` target pins, installed under ~/.cache when the venv has none.

Everything must resolve, the GPU image's torch must be a CUDA build (no `+cpu`), and every
`nvidia-*` wheel it pulls in must be pinned, at that version, in the GPU lock. A `+cpu` torch
planted in a copy of the GPU lock fails the check. Downloads are cached (~/.cache/pip,
~/.cache/uv); PyPI must be reachable, as it is from CI.

**Layout.** The image's file tree is made from the Dockerfile's own COPY lines (the build
context less .dockerignore) in a scratch root; the package is installed from there into a fresh
venv as the Dockerfile's pip line does, and `airflow dags list` / `airflow plugins` run with the
image's AIRFLOW__CORE__DAGS_FOLDER / PLUGINS_FOLDER (its ENV lines, under the scratch root).
To stay fast and offline the fresh venv sees the project venv's site-packages for third-party
dependencies through a `.pth` path entry, and the copied tree is installed with `pip install
--no-deps --no-build-isolation`; a path entry's own `.pth` files (the editable install's among
them) are not processed, so `omni_tasks` is the one installed from the copied tree. Removing a
COPY line (DAGs, plugins, the package, its SQL) fails it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
CPU, GPU = REPO / "docker" / "Dockerfile", REPO / "docker" / "Dockerfile.gpu"
# pip expands no `manylinux_2_N` tag to the older ones an image's pip also takes: each is named.
PIP_PLATFORM = (
    "--python-version", "3.11",
    *(a for n in range(28, 4, -1) for a in ("--platform", f"manylinux_2_{n}_x86_64")),
    *(a for p in ("manylinux2014", "manylinux2010", "manylinux1") for a in ("--platform", f"{p}_x86_64")),
)  # fmt: skip
UV_PLATFORM = ("--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28")
# Packages whose pins may differ between the two locks: the platform decides them.
GPU_ONLY = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "omni-tasks"


# --- reading a Dockerfile --------------------------------------------------------------------


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: continuation lines joined; comment and empty lines
    dropped, within a continued instruction too, as Docker does."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        keyword, _, args = whole.partition(" ")
        out.append((keyword.upper(), args.strip()))
    return out


def image_env(dockerfile: str) -> dict[str, str]:
    """The ENV the image ends with (`ENV K=V K2=V2`; the legacy `ENV K V` too)."""
    env: dict[str, str] = {}
    for keyword, args in instructions(dockerfile):
        if keyword != "ENV":
            continue
        words = shlex.split(args)
        if "=" not in words[0]:
            env[words[0]] = " ".join(words[1:])
            continue
        for word in words:
            key, _, value = word.partition("=")
            env[key] = value
    return env


@dataclass(frozen=True)
class PipStep:
    """One `pip install` of a RUN line: what it installs, under which constraints, from where."""

    requirements: tuple[str, ...]
    constraints: tuple[str, ...]
    index_options: tuple[str, ...] = field(default=())


# Options of the install line that change nothing about what resolves.
_INERT = {"--no-cache-dir", "-q", "--quiet", "--upgrade-strategy", "--progress-bar"}
_INDEX = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links"}


def pip_step(dockerfile: str) -> PipStep:
    """The image's one `pip install` step, parsed; an option this does not know fails, so the
    check never resolves something other than what the build runs."""
    steps = []
    for keyword, args in instructions(dockerfile):
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;", args):
            words = shlex.split(command)
            pip = words[:1] in (["pip"], ["pip3"]) or words[1:3] == ["-m", "pip"]
            if pip and "install" in words:
                steps.append(words[words.index("install") + 1 :])
    assert len(steps) == 1, f"expected one pip install step, found {steps}"
    (words,) = steps
    reqs, constraints, index = [], [], []
    it = iter(words)
    for word in it:
        name, eq, value = word.partition("=")
        if name in ("-c", "--constraint"):
            constraints.append(value if eq else next(it))
        elif name in _INDEX:
            index += [name, value if eq else next(it)]
        elif name in _INERT:
            if name in ("--upgrade-strategy", "--progress-bar") and not eq:
                next(it)
        elif word.startswith("-"):
            raise AssertionError(f"pip install option the image check does not know: {word}")
        else:
            reqs.append(word)
    return PipStep(tuple(reqs), tuple(constraints), tuple(index))


def in_root(root: Path, image_path: str) -> Path:
    """An absolute path of the image, under the scratch root."""
    assert image_path.startswith("/"), image_path
    return root / image_path.lstrip("/")


def local_requirement(root: Path, requirement: str) -> tuple[Path, str]:
    """`/opt/omni-tasks[airflow]` -> (the folder under the root, "[airflow]")."""
    path, bracket, extras = requirement.partition("[")
    return in_root(root, path), bracket + extras


# --- the build context and COPY --------------------------------------------------------------


def _dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore as Docker reads it: `**` spans folders, a pattern also drops what is under
    what it matches, a later `!pattern` takes an exclusion back."""
    path = REPO / ".dockerignore"
    rules = []
    for raw in path.read_text().splitlines() if path.exists() else []:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rx = re.escape(pattern)
        rx = rx.replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        rx = rx.replace(r"\?", "[^/]").replace(r"\[", "[").replace(r"\]", "]")
        rules.append((line.startswith("!"), re.compile(rx)))
    return rules


def _ignored(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for negate, rx in rules:
        if any(rx.fullmatch(p) for p in prefixes):
            ignored = not negate
    return ignored


def build_layout(dockerfile: str, root: Path) -> None:
    """The image's files under `root`, made by its COPY lines alone from the build context (the
    repository, less .dockerignore), as Docker copies: a folder's contents into the
    destination, symlinks kept as symlinks."""
    rules = _dockerignore_rules()

    def skip(folder: str, names: list[str]) -> set[str]:
        base = Path(folder).relative_to(REPO)
        return {n for n in names if _ignored(str(base / n).removeprefix("./"), rules)}

    for keyword, args in instructions(dockerfile):
        if keyword not in ("COPY", "ADD"):
            continue
        words = [
            w
            for w in shlex.split(args)
            if not w.startswith("--chown") and not w.startswith("--chmod")
        ]
        assert not any(w.startswith("--") for w in words), f"COPY option not modelled: {args}"
        *sources, dest = words
        target = in_root(root, dest)
        for source in sources:
            src = REPO / source
            assert src.exists() and not _ignored(source.rstrip("/"), rules), source
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, target, symlinks=True, ignore=skip, dirs_exist_ok=True)
            else:
                into = target / src.name if dest.endswith("/") else target
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, into, follow_symlinks=False)


# --- resolution --------------------------------------------------------------------------------


def pins(lock: Path) -> dict[str, str]:
    """name -> pinned version of a lock file (`name==version  # via ...`)."""
    out: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{lock.name}: not a pin: {line}"
        out[canonicalize_name(name.split("[")[0])] = version.split(";")[0].strip()
    return out


def _isolated_env() -> dict[str, str]:
    """No pip or uv configuration of this machine (its local wheel folders and indexes, its torch
    cap): what resolves is what PyPI and the Dockerfile's own options give."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def resolve_with_pip(step: PipStep, root: Path, report: Path) -> dict[str, str]:
    """pip's own resolution of the step (`--dry-run --report`), for the image's platform."""
    (req,) = step.requirements
    folder, extras = local_requirement(root, req)
    constraints = [a for c in step.constraints for a in ("-c", str(in_root(root, c)))]
    cmd = [
        sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed",
        "--quiet", "--report", str(report), *PIP_PLATFORM, "--only-binary=:all:",
        *step.index_options, *constraints, f"{folder}{extras}",
    ]  # fmt: skip
    done = subprocess.run(cmd, env=_isolated_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip could not resolve {req}:\n{done.stderr[-4000:]}"
    installs = json.loads(report.read_text())["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}


def uv() -> Path:
    """uv at the version `make lock` pins: the venv's, else one installed under ~/.cache."""
    version = re.search(r"^UV_VERSION := (\S+)", (REPO / "Makefile").read_text(), re.M)
    assert version, "Makefile: UV_VERSION"
    venv_uv = Path(sys.executable).parent / "uv"
    if venv_uv.exists():
        out = subprocess.run([str(venv_uv), "--version"], capture_output=True, text=True).stdout
        if out.split()[1:2] == [version.group(1)]:
            return venv_uv
    target = CACHE / f"uv-{version.group(1)}"
    if not (target / "bin" / "uv").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "--isolated", "install", "-q", "--target", str(target),
             f"uv=={version.group(1)}"],
            env=_isolated_env(), check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    return target / "bin" / "uv"


def resolve_with_uv(step: PipStep, root: Path, out: Path) -> dict[str, str]:
    """`uv pip compile` of the step's requirement under its constraints and indexes."""
    (req,) = step.requirements
    folder, extras = local_requirement(root, req)
    requirements = out.with_suffix(".in")
    requirements.write_text(f"omni-tasks{extras} @ {folder.as_uri()}\n")
    constraints = [a for c in step.constraints for a in ("-c", str(in_root(root, c)))]
    cmd = [
        str(uv()), "pip", "compile", "--quiet", "--no-config", "--no-header", "--no-annotate",
        *UV_PLATFORM, *step.index_options, *constraints, str(requirements), "-o", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, env=_isolated_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"uv could not resolve {req}:\n{done.stderr[-4000:]}"
    resolved: dict[str, str] = {}
    for line in out.read_text().splitlines():
        if line and not line.startswith(("#", "-", " ")) and "==" in line:
            name, _, version = line.partition("==")
            resolved[canonicalize_name(name)] = version.strip()
        elif " @ " in line:
            resolved[canonicalize_name(line.split(" @ ")[0].split("[")[0])] = "local"
    return resolved


def check_gpu_image(dockerfile: str, root: Path, work: Path) -> dict[str, str]:
    """The GPU image's install resolves; its torch is a CUDA build; every nvidia-* wheel is
    pinned in the lock the image installs from, at the version that resolves."""
    step = pip_step(dockerfile)
    (lock_path,) = step.constraints
    lock = pins(in_root(root, lock_path))
    resolved = resolve_with_uv(step, root, work / "gpu-resolved.txt")
    torch = resolved.get("torch")
    assert torch, "the GPU image installs no torch"
    assert Version(torch).local is None, f"the GPU image's torch is {torch}, not PyPI's CUDA build"
    nvidia = {n: v for n, v in resolved.items() if n.startswith("nvidia-")}
    assert nvidia, "the GPU image's torch pulls in no nvidia-* wheel: not a CUDA build"
    unpinned = {n: v for n, v in nvidia.items() if lock.get(n) != v}
    assert not unpinned, f"nvidia-* wheels not pinned in {lock_path}: {unpinned}"
    return resolved


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu-image")
    build_layout(GPU.read_text(), root)
    return root


# --- the locks -----------------------------------------------------------------------------------


def test_both_locks_come_from_make_lock_and_agree_but_for_torch() -> None:
    cpu, gpu = pins(REPO / "constraints.txt"), pins(REPO / "constraints-gpu.txt")
    for name in ("constraints.txt", "constraints-gpu.txt"):
        lines = (REPO / name).read_text().splitlines()
        head = "\n".join(takewhile(lambda line: line.startswith("#"), lines))
        assert "`make lock`" in head and "uv pip compile pyproject.toml" in head, name
    assert "https://download.pytorch.org/whl/cpu" in (REPO / "constraints.txt").read_text()
    assert Version(cpu["torch"]).local == "cpu", cpu["torch"]
    cuda = Version(gpu["torch"])
    assert cuda.local is None and cuda.public == Version(cpu["torch"]).public, gpu["torch"]
    assert any(n.startswith("nvidia-") for n in gpu), "the GPU lock pins no nvidia-* wheel"
    assert not any(n.startswith("nvidia-") for n in cpu)
    shared = cpu.keys() & gpu.keys()
    differ = {n: (cpu[n], gpu[n]) for n in shared if cpu[n] != gpu[n] and not GPU_ONLY.match(n)}
    assert not differ, f"shared packages pinned differently in the two locks: {differ}"
    assert not {n for n in cpu.keys() - gpu.keys() if not GPU_ONLY.match(n)}
    assert not {n for n in gpu.keys() - cpu.keys() if not GPU_ONLY.match(n)}
    # Each lock holds every requirement of every extra of pyproject.toml, at a version it allows.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    for lock_name, lock in (("constraints.txt", cpu), ("constraints-gpu.txt", gpu)):
        for req in wanted:
            name = canonicalize_name(req.name)
            assert name in lock, f"{lock_name} lacks {req}: run `make lock`"
            allowed = req.specifier.contains(lock[name], prereleases=True)
            assert allowed, f"{lock_name}: {name}=={lock[name]} but pyproject.toml asks {req}"


def test_the_gpu_base_image_is_the_cuda_major_its_torch_wheels_carry() -> None:
    base = re.search(r"^FROM nvidia/cuda:(\d+)\.", GPU.read_text(), re.M)
    runtime = pins(REPO / "constraints-gpu.txt").get("nvidia-cuda-runtime")
    assert base and runtime, (base, runtime)
    assert base.group(1) == runtime.split(".")[0], (base.group(0), runtime)


# --- resolution of each image's install step ---------------------------------------------------


def test_the_cpu_image_install_resolves_as_written(tmp_path: Path) -> None:
    dockerfile = CPU.read_text()
    build_layout(dockerfile, tmp_path / "root")
    step = pip_step(dockerfile)
    assert step.constraints == ("/opt/omni-tasks/constraints.txt",), step
    resolved = resolve_with_pip(step, tmp_path / "root", tmp_path / "report.json")
    lock = pins(REPO / "constraints.txt")
    assert resolved["apache-airflow"] == lock["apache-airflow"]
    off_lock = {n: v for n, v in resolved.items() if n != "omni-tasks" and lock.get(n) != v}
    assert not off_lock, f"the CPU image installs packages the lock does not pin: {off_lock}"
    assert "torch" not in resolved  # the CPU image has no grader; its lock's torch is +cpu


def test_the_gpu_image_install_resolves_to_a_cuda_torch(gpu_root: Path, tmp_path: Path) -> None:
    dockerfile = GPU.read_text()
    assert pip_step(dockerfile).constraints == ("/opt/omni-tasks/constraints-gpu.txt",)
    resolved = check_gpu_image(dockerfile, gpu_root, tmp_path)
    lock = pins(REPO / "constraints-gpu.txt")
    assert resolved["torch"] == lock["torch"]
    off_lock = {n: v for n, v in resolved.items() if n != "omni-tasks" and lock.get(n) != v}
    assert not off_lock, f"the GPU image installs packages the lock does not pin: {off_lock}"
    assert {"openai-whisper", "transformers", "apache-airflow", "triton"} <= resolved.keys()


def test_a_cpu_torch_planted_in_the_gpu_lock_fails_the_check(
    gpu_root: Path, tmp_path: Path
) -> None:
    planted = tmp_path / "root"
    shutil.copytree(gpu_root, planted, symlinks=True)
    lock = planted / "opt/omni-tasks/constraints-gpu.txt"
    text, n = re.subn(r"^torch==([^\s+]+)", r"torch==\1+cpu", lock.read_text(), flags=re.M)
    assert n == 1
    lock.write_text(text)
    with pytest.raises(AssertionError, match=r"could not resolve|not PyPI's CUDA build"):
        check_gpu_image(GPU.read_text(), planted, tmp_path)


# --- the image's DAGs and plugin -------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    """A package installed from an image's layout: its venv, the ENV the image runs with, and
    where its scratch root lies."""

    python: Path
    env: dict[str, str]
    root: Path


def install_from_layout(dockerfile: str, work: Path, airflow_db: Path) -> Installed:
    """The image's file tree from its COPY lines, the package installed from it (the Dockerfile's
    pip requirement, not editable, dependencies from the project venv), and the image's
    Airflow folders."""
    root = work / "root"
    build_layout(dockerfile, root)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "project_dependencies.pth").write_text(site.getsitepackages()[0] + "\n")
    (req,) = pip_step(dockerfile).requirements
    folder, _extras = local_requirement(root, req)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", "--no-build-isolation", str(folder)],
        capture_output=True, text=True, timeout=300, env=_isolated_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OMNI_"))}
    image = image_env(dockerfile)
    for key in ("AIRFLOW__CORE__DAGS_FOLDER", "AIRFLOW__CORE__PLUGINS_FOLDER"):
        assert key in image, f"the image sets no {key}"
        env[key] = str(in_root(root, image[key]))
    (work / "airflow").mkdir()
    shutil.copy2(airflow_db, work / "airflow" / "airflow.db")  # migrated once per module
    env.update(
        AIRFLOW_HOME=str(work / "airflow"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        OMNI_HOME=str(work / "omni-home"),
    )
    return Installed(python, env, root)


def airflow(installed: Installed, *args: str) -> str:
    done = subprocess.run(
        [str(installed.python), "-m", "airflow", *args],
        env=installed.env, cwd=installed.root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"airflow {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    )
    return done.stdout


def json_output(stdout: str) -> list[dict[str, str]]:
    """The JSON document of `-o json`, after whatever Airflow logged to stdout first; none when
    it found nothing to list (`airflow plugins` then says so in words)."""
    documents = [line for line in stdout.splitlines() if line.startswith("[")]
    return list(json.loads(documents[-1])) if documents else []


def image_dags_and_plugins(installed: Installed) -> tuple[dict[str, str], set[str]]:
    """dag_id -> file name of what `airflow dags list` parses in the image's DAG folder, and the
    names of the plugins `airflow plugins` loads."""
    listed = json_output(airflow(installed, "dags", "list", "--local", "-o", "json"))
    plugins = json_output(airflow(installed, "plugins", "-o", "json"))
    return {d["dag_id"]: Path(d["fileloc"]).name for d in listed}, {p["name"] for p in plugins}


@pytest.fixture(scope="module")
def airflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Airflow's metadata database (SQLite), migrated once for the module's installs."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return home / "airflow.db"


def check_image_carries_dags_and_plugin(dockerfile: str, work: Path, airflow_db: Path) -> None:
    """Airflow, run with the image's settings, parses every DAG file and loads the plugin; the
    package installed from the image's tree is that tree's, with its SQL, DAGs and plugins."""
    installed = install_from_layout(dockerfile, work, airflow_db)
    dags, plugins = image_dags_and_plugins(installed)
    files = {p.name for p in (REPO / "dags").glob("*.py")}
    assert len(files) == 8, sorted(files)
    assert set(dags.values()) == files, f"the image's DAG folder lists {sorted(dags.items())}"
    assert "omni_links" in plugins, f"the image's plugins are {sorted(plugins)}, not omni_links"

    probe = "import omni_tasks, pathlib; print(pathlib.Path(omni_tasks.__file__).parent)"
    where = subprocess.run(
        [str(installed.python), "-c", probe], env=installed.env, cwd=work,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    package = Path(where.stdout.strip())
    assert package.is_relative_to(work / "venv"), package
    migrations = {p.name for p in (REPO / "sql" / "migrations").glob("*.sql")}
    assert {p.name for p in (package / "sql" / "migrations").glob("*.sql")} == migrations
    for folder in ("dags", "plugins"):
        shipped = package / folder
        assert shipped.is_dir() and not shipped.is_symlink(), shipped
        assert {p.name for p in shipped.glob("*.py")} == {
            p.name for p in (REPO / folder).glob("*.py")
        }


@pytest.mark.parametrize("dockerfile", [CPU, GPU], ids=["cpu", "gpu"])
def test_the_image_carries_every_dag_and_the_plugin(
    dockerfile: Path, tmp_path: Path, airflow_db: Path
) -> None:
    check_image_carries_dags_and_plugin(dockerfile.read_text(), tmp_path, airflow_db)


@pytest.mark.parametrize(
    ("dockerfile", "folder", "error"),
    [(CPU, "dags", "dags list|DAG folder"), (GPU, "plugins", "omni_links")],
    ids=["cpu-without-dags", "gpu-without-plugins"],
)
def test_an_image_without_its_copy_line_fails_the_check(
    dockerfile: Path, folder: str, error: str, tmp_path: Path, airflow_db: Path
) -> None:
    text, n = re.subn(
        rf"^COPY [^\n]*\b{folder} /opt/omni-tasks/{folder}\n",
        "",
        dockerfile.read_text(),
        flags=re.M,
    )
    assert n == 1, f"{dockerfile.name}: no COPY line for {folder}/"
    with pytest.raises(AssertionError, match=error):
        check_image_carries_dags_and_plugin(text, tmp_path, airflow_db)
