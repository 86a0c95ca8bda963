"""Secrets are read from files at the point of use, never from or into `os.environ`.

The `*_FILE` convention of Docker/compose secrets and Kubernetes Secret volumes: `NAME_FILE`
names a file holding the value of `NAME`. A worker whose secrets are all files has nothing
secret in its environment block, the block every child inherits and /proc shows. `NAME` itself
still works (a laptop, a test) and is scrubbed by `seal`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


class SecretFileError(RuntimeError):
    """A `NAME_FILE` that names no readable file: a deployment error, said loudly."""


def read_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of secret `name`: the file `NAME_FILE` names (one trailing newline dropped),
    else the variable `NAME`, else None (an empty value is none)."""
    env = os.environ if environ is None else environ
    path = env.get(f"{name}_FILE")
    if path:
        try:
            value = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretFileError(f"{name}_FILE={path}: {exc.strerror or exc}") from None
        return (value[:-1] if value.endswith("\n") else value) or None
    return env.get(name) or None
