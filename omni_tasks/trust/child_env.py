"""Untrusted code never holds a secret.

A commit under test, a pull request's head, a vLLM build and the server they launch run with an
environment built from an allow-list (the system's basics plus the deployment config's
`server.env`), never the worker's. And because such a child runs as the worker's user, it could
read its parent's environment through `/proc/$PPID/environ`: before the first child starts, the
worker process is sealed (`seal`): it becomes non-dumpable (its /proc files belong to root, so
a child of another uid cannot open them) and the secret values in its original environment
block, which is what /proc shows, are overwritten in place. The secrets stay readable to this
process through `os.environ` (Python's own copy), where the hooks read them, and are set again
in fresh memory, so the worker's own trusted children still inherit them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from collections.abc import Mapping

from omni_tasks.trust.redact import MIN_SECRET, SECRET_NAME, register, url_passwords

# What a child may inherit from the worker: where programs are, whose home, the locale, the
# temp dir, and the accelerator runtime's library paths. Anything else comes from the config.
ALLOWED = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "USER",
    "LOGNAME",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "ROCM_PATH",
    "ASCEND_HOME_PATH",
    "HF_HOME",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    # TLS trust and proxies, so a build reaches the indexes the config and pip.conf name.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
PR_SET_DUMPABLE = 4


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for untrusted code: the allow-listed names the worker has, then `extra`
    (the deployment config's env, trusted). A secret-named variable never passes, even when
    the config lists it, nor a value holding a URL's password (a proxy's)."""
    env = {k: os.environ[k] for k in ALLOWED if k in os.environ}
    env.update(extra or {})
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k) and not url_passwords(v)}


def seal() -> None:
    """Make this process's secrets unreadable to its children (see the module docstring).
    Idempotent; a no-op where the platform offers neither step (not Linux).

    Defence in depth: code under test runs in the sandbox (trust/sandbox.py), whose own PID
    namespace shows it no process of ours. Called by the task runner, and in the Celery main
    and pool processes (dag_support/celery_config.py), which hold the same environment."""
    if ctypes.util.find_library("c") is None:
        return
    # The executable's own symbols: where a distribution's python defines `environ` by copy
    # relocation, libc's copy is not the one in use (CDLL("libc.so.6") would read NULL).
    libc = ctypes.CDLL(None, use_errno=True)
    with contextlib.suppress(AttributeError):
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    held = {v for k, v in os.environ.items() if v and SECRET_NAME.search(k)}
    held |= {p for v in os.environ.values() for p in url_passwords(v)}
    register(*held)
    _scrub_environ_block(libc, {s.encode() for s in held if len(s) >= MIN_SECRET})


def _scrub_environ_block(libc: ctypes.CDLL, secrets: set[bytes]) -> None:
    """Overwrite, in place, each C `environ` string whose name is secret-like or whose value
    holds a secret: what /proc/PID/environ reads is that memory (Python's os.environ is a
    separate copy and keeps working)."""
    try:
        environ = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    except ValueError:
        return
    scrubbed = []
    i = 0
    while True:
        addr = ctypes.cast(environ, ctypes.POINTER(ctypes.c_void_p))[i]
        if not addr:
            break
        raw_name, _, value = ctypes.string_at(addr).partition(b"=")
        name = raw_name.decode(errors="replace")
        # By name, and by value: a broker URL's password is in no secret-named variable.
        if value and (SECRET_NAME.search(name) or any(s in value for s in secrets)):
            ctypes.memset(addr + len(raw_name) + 1, 0, len(value))
            scrubbed.append(name)
        i += 1
    for name in scrubbed:  # set again in fresh memory (not the block /proc reads)
        if name in os.environ:
            os.environ[name] = os.environ[name]
