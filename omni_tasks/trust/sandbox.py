"""Code under test runs in a sandbox: no secret, no writable code or config, nothing left alive.

Every launch of code we test (a checkout's or a pull request's build, pip installs, `pip freeze`
and the version probe in an environment's own interpreter, a launched server) goes through
`run` or `popen` here. On Linux that is bubblewrap (`bwrap`):

- a new PID namespace with its own /proc: the code sees no ancestor (the Celery main, the
  supervisor, the task runner) and no other process of the worker's uid, so no /proc/PID/environ
  or /proc/PID/mem of ours is there to read; when the launched command ends (or the task dies:
  `--die-with-parent`), the namespace dies with every daemon started in it;
- new IPC and UTS namespaces and a new session (no terminal to inject into);
- an allow-listed filesystem: the system directories, the interpreters it runs and the paths
  the trusted config names, all read-only; writable only its own scratch directories and a
  private /tmp. The worker's home, its secret files, the worker venv and /srv/omni are either
  absent or read-only;
- `--clearenv` plus the allow-listed environment (`child_env`);
- GPUs by `--dev-bind` of the configured device nodes;
- where the worker runs as root and `OMNI_SANDBOX_UID` is set, the code runs as that uid
  (`setpriv --reuid --regid --clear-groups`), so an escape still meets uid separation.

No sandbox means refusal (`SandboxUnavailable`, naming the missing piece). `OMNI_SANDBOX=none`
runs code under test directly, for a developer laptop only: it is logged as a warning at every
launch and `omni-tasks doctor sandbox` says so.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

log = logging.getLogger(__name__)

Mode = Literal["bwrap", "none"]
# Read-only in every sandbox: where programs, libraries and system configuration live.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Device nodes of the accelerators we run on, passed when present (OMNI_SANDBOX_DEVICES
# overrides): NVIDIA, AMD (ROCm), Ascend.
GPU_DEVICES = (
    "/dev/nvidia[0-9]*",
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/kfd",
    "/dev/dri/*",
    "/dev/davinci[0-9]*",
    "/dev/davinci_manager",
    "/dev/devmm_svm",
    "/dev/hisi_hdc",
)
HOME = "/tmp/home"  # inside the sandbox: a private, writable home on its tmpfs


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made on this host; the message names the missing piece and the fix."""


@dataclass(frozen=True)
class Policy:
    mode: Mode = "bwrap"
    uid: int | None = None  # run as this uid (and its gid) when the worker is root
    devices: tuple[str, ...] | None = None  # None: the GPU nodes present (GPU_DEVICES)
    readable: tuple[str, ...] = ()  # more read-only paths (a model cache, a dataset root)
    writable: tuple[str, ...] = ()  # more writable paths (a shared compile cache)


@dataclass(frozen=True)
class Paths:
    """What one launch may see: read-only paths besides the system's, and writable ones."""

    readable: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    cwd: Path | None = None


@dataclass(frozen=True)
class Report:
    """What `omni-tasks doctor sandbox` prints."""

    mode: Mode
    tool: str | None
    version: str | None
    namespaces: tuple[str, ...]
    uid: int
    runs_as: int
    readable: tuple[str, ...]
    writable: tuple[str, ...]
    devices: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


def policy() -> Policy:
    """The host's sandbox policy, from the settings (OMNI_SANDBOX, OMNI_SANDBOX_*)."""
    from omni_tasks.config import get_settings

    s = get_settings()
    return Policy(
        mode=s.sandbox,
        uid=s.sandbox_uid,
        devices=None if s.sandbox_devices is None else tuple(s.sandbox_devices),
        readable=tuple(s.sandbox_readable),
        writable=tuple(s.sandbox_writable),
    )


@functools.lru_cache(maxsize=4)
def _probe(tool: str) -> str:
    """bwrap's version, after proving it can make the namespaces we use (user namespaces may be
    off in a container); raises SandboxUnavailable naming what failed."""
    try:
        version = subprocess.run(
            [tool, "--version"], capture_output=True, text=True, timeout=10, check=True, env={}
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"sandbox: `{tool} --version` failed ({exc})") from None
    args = [tool, *_mounts(Paths(), Policy(devices=())), *_NAMESPACES, "--", "/bin/true"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False, env={})
    if out.returncode != 0:
        raise SandboxUnavailable(
            f"sandbox: bubblewrap cannot create its namespaces here ({out.stderr.strip()[:300]}). "
            "Enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "user.max_user_namespaces > 0), or in a container run it with a seccomp and "
            "AppArmor profile that allows unshare/mount (docs/operators/security.md)"
        )
    return version


_NAMESPACES = (
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


def tool() -> str:
    """The bwrap executable, or SandboxUnavailable naming how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            "sandbox: bubblewrap (`bwrap`) is not on PATH; install it (Debian/Ubuntu: "
            "apt-get install bubblewrap) or, on a developer laptop only, set OMNI_SANDBOX=none"
        )
    return found


def interpreter_roots(python: str | os.PathLike[str]) -> tuple[Path, ...]:
    """What running `python` needs to read: its environment (a venv's root) and the
    installation its symlinks lead to."""
    exe = Path(python)
    return tuple(sorted({exe.absolute().parent.parent, exe.resolve().parent.parent}))


def named_paths(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The absolute paths a trusted environment names (PATH, PYTHONPATH, HF_HOME, …): the
    config chose them, so the sandbox may read them."""
    found = {
        Path(part)
        for value in env.values()
        for part in value.split(os.pathsep)
        if part.startswith("/") and "\n" not in part
    }
    return tuple(sorted(found))


def _own_code() -> tuple[Path, ...]:
    """The worker's interpreter and this package, read-only: the product's code is public, and
    a fake or the simulator run as a server imports it."""
    package = Path(__file__).resolve().parent.parent
    return (*interpreter_roots(sys.executable), Path(sys.prefix), package)


def _existing(paths: Iterable[str | Path]) -> list[str]:
    """The paths that exist, absolute, symlinks followed (bwrap binds onto a real file or
    directory), without those that an earlier path already holds."""
    out: list[str] = []
    for p in paths:
        text = os.path.realpath(os.path.abspath(p))
        if os.path.exists(text) and not any(_within(text, o) for o in out):
            out = [o for o in out if not _within(o, text)] + [text]
    return out


def _parents(paths: list[str]) -> list[str]:
    """Directories on the private /tmp leading to a bound path, made traversable (bwrap would
    make them 0700, root's: a sandbox running as another uid could not reach its scratch)."""
    made: list[str] = []
    for p in paths:
        parts = p.split("/")
        for i in range(3, len(parts)):
            parent = "/".join(parts[:i])
            if _within(parent, "/tmp") and parent != "/tmp" and parent not in made:
                made.append(parent)
    return [arg for d in made for arg in ("--perms", "0755", "--dir", d)]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _links(paths: Iterable[str | Path], bound: list[str]) -> list[str]:
    """Symlinks among `paths` that no bound directory shows: made again inside, pointing where
    they point outside (a venv's python → the interpreter it was made from)."""
    args: list[str] = []
    for p in paths:
        text = os.path.abspath(p)
        if os.path.islink(text) and not any(_within(os.path.dirname(text), b) for b in bound):
            args += ["--symlink", os.readlink(text), text]
    return args


def devices(pol: Policy) -> list[str]:
    patterns = GPU_DEVICES if pol.devices is None else pol.devices
    return sorted({d for pattern in patterns for d in glob.glob(pattern)})


def _mounts(paths: Paths, pol: Policy) -> list[str]:
    """bwrap's mount arguments, in order: system dirs, /dev and /proc, a private /tmp, then
    what this launch reads and writes (after /tmp, so a path under /tmp is bound back in)."""
    args: list[str] = []
    for d in _existing(SYSTEM_DIRS):
        args += ["--ro-bind", d, d]
    args += _links(SYSTEM_DIRS, [])  # merged /usr: /bin → usr/bin
    args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "0777", "--dir", HOME]
    readable: list[str | Path] = [*_own_code(), *paths.readable, *pol.readable]
    writable = _existing([*paths.writable, *pol.writable])
    bound = [*_existing(SYSTEM_DIRS), *writable]
    ro = [p for p in _existing(readable) if not any(_within(p, w) for w in bound)]
    args += _parents([*ro, *writable])
    for p in ro:
        args += ["--ro-bind", p, p]
        bound.append(p)
    args += _links(readable, bound)
    for p in writable:
        args += ["--bind", p, p]
    for d in devices(pol):
        args += ["--dev-bind", d, d]
    return args


def command(
    argv: Sequence[str], env: Mapping[str, str], paths: Paths, pol: Policy | None = None
) -> list[str]:
    """The argument list that runs `argv` sandboxed, with exactly `env` (raises
    SandboxUnavailable when no sandbox can be made; `none` returns `argv` as given)."""
    from omni_tasks.trust.child_env import seal

    pol = policy() if pol is None else pol
    if pol.mode == "none":
        seal()
        log.warning("sandbox: none (OMNI_SANDBOX=none): %s runs unsandboxed", argv[0])
        return list(argv)
    bwrap = tool()
    _probe(bwrap)
    seal()  # defence in depth: our own block holds no secret either
    inner = list(argv)
    if pol.uid is not None and os.geteuid() == 0:
        inner = [_setpriv(), f"--reuid={pol.uid}", f"--regid={pol.uid}", "--clear-groups", *inner]
    args = [bwrap, *_mounts(paths, pol), *_NAMESPACES, "--clearenv"]
    for k, v in {**env, "HOME": HOME, "TMPDIR": "/tmp"}.items():
        args += ["--setenv", k, v]
    if paths.cwd is not None:
        args += ["--chdir", str(paths.cwd)]
    return [*args, "--", *inner]


def _setpriv() -> str:
    found = shutil.which("setpriv")
    if found is None:
        raise SandboxUnavailable("sandbox: OMNI_SANDBOX_UID is set but `setpriv` is not on PATH")
    return found


def _own(paths: Paths, pol: Policy) -> None:
    """The sandbox's uid owns what it must write (only when we switch to it)."""
    if pol.mode == "none" or pol.uid is None or os.geteuid() != 0:
        return
    for top in paths.writable:
        for root, dirs, files in os.walk(top):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(root, name), pol.uid, pol.uid)
        os.chown(top, pol.uid, pol.uid)


def run(
    argv: Sequence[str],
    env: Mapping[str, str],
    paths: Paths,
    *,
    timeout: float,
    pol: Policy | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` to completion in the sandbox, capturing its output as text; past `timeout`,
    the sandbox is ended (everything in it) and subprocess.TimeoutExpired raised."""
    pol = policy() if pol is None else pol
    with _start(
        argv, env, paths, pol, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc, grace_s=0)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def popen(
    argv: Sequence[str],
    env: Mapping[str, str],
    paths: Paths,
    *,
    stdout: IO[Any],
) -> subprocess.Popen[bytes]:
    """Start `argv` in the sandbox in its own session; end it with `stop`."""
    return _start(argv, env, paths, policy(), stdout=stdout, stderr=subprocess.STDOUT)


def _start(
    argv: Sequence[str], env: Mapping[str, str], paths: Paths, pol: Policy, **popen_args: Any
) -> subprocess.Popen[Any]:
    """`argv` started in the sandbox in its own session, its scratch the sandbox uid's; with
    OMNI_SANDBOX=none, directly with exactly `env` in `paths.cwd`."""
    _own(paths, pol)
    return subprocess.Popen(
        command(argv, env, paths, pol),
        env=dict(env) if pol.mode == "none" else {},
        cwd=paths.cwd if pol.mode == "none" else None,
        start_new_session=True,
        **popen_args,
    )


def stop(proc: subprocess.Popen[Any], grace_s: float = 30.0) -> None:
    """End a sandbox and everything in it. The command gets SIGTERM and `grace_s` to exit
    (a server shuts down cleanly); then the namespace's init (bwrap's own, the outer bwrap's
    child) is killed, which kills every process left in the namespace, setsid daemons
    included; then the outer bwrap. Killing only the outer one leaves it to bwrap's
    parent-death signal, which a kill racing its start-up can miss."""
    if proc.poll() is not None:
        return
    sandboxed = (
        os.path.basename(str(proc.args[0] if isinstance(proc.args, list) else "")) == "bwrap"
    )
    inits = _children(proc.pid) if sandboxed else []
    commands = [c for init in inits for c in _children(init)]
    for pid in commands or [-proc.pid]:  # unsandboxed: its process group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    for pid in inits:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _children(pid: int) -> list[int]:
    """A process's children (the kernel's list, per thread)."""
    out: list[int] = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in Path(task).read_text().split()]
    return out


def report(pol: Policy | None = None) -> Report:
    """The sandbox in effect (raises SandboxUnavailable naming the missing piece)."""
    pol = policy() if pol is None else pol
    runs_as = pol.uid if pol.uid is not None and os.geteuid() == 0 else os.geteuid()
    readable = (*_existing(SYSTEM_DIRS), *_existing([*_own_code(), *pol.readable]))
    if pol.mode == "none":
        return Report(
            "none",
            None,
            None,
            (),
            os.geteuid(),
            os.geteuid(),
            ("/ (everything the worker can read)",),
            ("everything the worker can write",),
            (),
            ("OMNI_SANDBOX=none: code under test runs beside the worker; developer laptops only",),
        )
    bwrap = tool()
    version = _probe(bwrap)
    command(["/bin/true"], {}, Paths(), pol)
    return Report(
        "bwrap",
        bwrap,
        version,
        ("pid", "ipc", "uts", "mount", "cgroup (when available)"),
        os.geteuid(),
        runs_as,
        tuple(readable),
        ("its own scratch directories", "/tmp (private tmpfs)", *_existing(pol.writable)),
        tuple(devices(pol)),
    )
