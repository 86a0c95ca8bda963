"""vLLM-Omni's released code, run unmodified: the pinned wheels, fetched once, and a loader that
takes just the functions a check needs from their source.

Wheels come from PyPI with `pip download --no-deps --require-hashes` (so a changed artifact is
an error) into `$OMNI_CACHE_DIR/upstream/`, and are unpacked there. Modules that import vLLM
cannot be imported here (vLLM's wheel is ~300 MB and its pins clash with ours), so `load`
parses a module's source and executes only the top-level definitions the requested names
reach, transitively: their function bodies are upstream's, byte for byte. Names they import
come from, in order: the stand-ins the caller passes (vLLM types, see `vllm_facts.py`), other
vllm_omni modules of the same wheel (loaded the same way), or a real import.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import copy
import dataclasses
import fcntl
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
import tarfile
import types
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from packaging.version import Version

from omni_tasks.config import get_settings

# Released wheels and their sha256 (PyPI). Adding a version: add its line (and its row in
# `omni_tasks/harness.py`), run `make conformance`, and read what fails.
PINNED = {
    "0.28.0": "78a582b7c6140cd1796bdc8a65a0b5c2dac2dd7715a96f1d9950214a1b75b8ad",
    "0.30.0": "141cb0c7b9c07970e5c92a99aab9696e81682dbfa3d2bfcde359c3c1533385f4",
    "0.32.0rc1": "93d3990d21bbbfd6c5d23a47d965dfde7aa95c3e9ac4a34e6bca58bc80c7444b",
}
# vLLM's source release of the same number (vllm-omni releases track vLLM's; a pre-release
# uses its final's): the sdist's Python files only, for vLLM's own helpers and SamplingParams'
# defaults.
PINNED_VLLM = {
    "0.28.0": "ac96dd0ec5be9c13f2aa4bfb50498c4727110406f6e4980b58a4097e4d18634a",
    "0.30.0": "5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b",
    "0.32.0": "d2c957d5eee3d0985012151315ddc62cbe0cd368fc96a5fc3510438d9dddf2ad",
}
# `make conformance-latest` runs the suite on a release newer than the pinned ones: it names
# the versions and hashes (PyPI's digests) in this variable, and only those run.
CANDIDATE_ENV = "OMNI_UPSTREAM_CANDIDATE"


def _candidate() -> tuple[dict[str, str], dict[str, str]]:
    raw = os.environ.get(CANDIDATE_ENV)
    if not raw:
        return PINNED, PINNED_VLLM
    doc = json.loads(raw)
    return {doc["version"]: doc["sha256"]}, {vllm_release(doc["version"]): doc["vllm_sha256"]}


def vllm_release(version: str) -> str:
    """The vLLM release a vllm-omni version tracks (0.32.0rc1 → 0.32.0)."""
    return Version(version).base_version


WHEELS, VLLM_SDISTS = _candidate()
INDEX = "https://pypi.org/simple/vllm/"


def wheel_root(version: str, sha256: str | None = None) -> Path:
    """The unpacked wheel of vllm-omni `version` (downloaded and checked on first use), pinned
    by `sha256` or else by WHEELS."""
    sha256 = sha256 or WHEELS.get(version)
    if sha256 is None:
        raise ValueError(f"unknown vllm-omni version {version!r}; pinned: {sorted(WHEELS)}")
    base = get_settings().cache_dir / "upstream" / f"vllm-omni-{version}"
    root = base / "src"
    with _fetching(base):  # test workers share the cache: one fetches, the others wait
        if not (root / "vllm_omni").is_dir():
            _fetch_wheel(version, sha256, base, root)
    return root


def _fetch_wheel(version: str, sha256: str, base: Path, root: Path) -> None:
    req = base / "requirements.txt"
    req.write_text(f"vllm-omni=={version} --hash=sha256:{sha256}\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "-r",
            str(req),
            "-d",
            str(base),
        ],
        check=True,
    )
    wheel = next(base.glob(f"vllm_omni-{version}-*.whl"))
    tmp = base / "src.partial"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp)
    tmp.replace(root)


def vllm_root(version: str, sha256: str | None = None) -> Path:
    """The Python files of vLLM `version`'s sdist (found on PyPI's simple index, sha256
    checked against `sha256` or else VLLM_SDISTS, extracted once)."""
    version = vllm_release(version)
    base = get_settings().cache_dir / "upstream" / f"vllm-{version}"
    root = base / "src"
    with _fetching(base):
        if not (root / "vllm").is_dir():
            _fetch_sdist(version, sha256 or VLLM_SDISTS[version], base, root)
    return root


def _fetch_sdist(version: str, sha256: str, base: Path, root: Path) -> None:
    name = f"vllm-{version}.tar.gz"
    page = httpx.get(INDEX, timeout=60, follow_redirects=True).text
    match = re.search(rf'href="([^"#]*/{re.escape(name)})', page)
    if match is None:
        raise RuntimeError(f"{name} not on {INDEX}")
    sdist = base / name
    with httpx.stream("GET", match.group(1), timeout=300, follow_redirects=True) as r:
        r.raise_for_status()
        with sdist.open("wb") as fh:
            for block in r.iter_bytes():
                fh.write(block)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != sha256:
        sdist.unlink()
        raise RuntimeError(f"{name}: sha256 {digest} is not the pinned {sha256}")
    tmp = base / "src.partial"
    prefix = f"vllm-{version}/"
    with tarfile.open(sdist) as tf:
        for member in tf.getmembers():
            if (
                member.isfile()
                and member.name.startswith(prefix + "vllm/")
                and member.name.endswith(".py")
            ):
                member.name = member.name[len(prefix) :]
                tf.extract(member, tmp, filter="data")
    tmp.replace(root)
    sdist.unlink()


@contextmanager
def _fetching(base: Path) -> Iterator[None]:
    base.mkdir(parents=True, exist_ok=True)
    with (base / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def sampling_params_class(version: str) -> type:
    """A stand-in for vLLM's SamplingParams (a msgspec struct that needs vLLM to import) with
    the field defaults read from that release's `vllm/sampling_params.py`: every annotated
    field whose default is a literal. Like vLLM's, it refuses unknown keywords."""
    tree = ast.parse((vllm_root(version) / "vllm" / "sampling_params.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SamplingParams")
    fields: list[tuple[str, Any, Any]] = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            try:
                default = ast.literal_eval(node.value)
            except ValueError:
                continue
            if not node.target.id.startswith("_"):
                fields.append((node.target.id, Any, dataclasses.field(default=default)))

    def clone(self: Any) -> Any:
        return copy.deepcopy(self)

    return dataclasses.make_dataclass("SamplingParams", fields, namespace={"clone": clone})


class Upstream:
    """One release's source: `load(module, names)` gives upstream's own function objects."""

    def __init__(
        self,
        version: str,
        standins: dict[str, Any],
        root: Path | None = None,
        vllm: Path | None = None,
    ) -> None:
        """`root` / `vllm`: an unpacked source tree to read instead of the pinned wheel's /
        sdist's (a scratch copy with an edit planted, or a new version string)."""
        self.version = version
        self.root = root or wheel_root(version)
        self.vllm = vllm or vllm_root(version)
        self.standins = standins
        self._trees: dict[str, ast.Module] = {}
        self._spaces: dict[str, dict[str, Any]] = {}

    def source(self, module: str) -> Path:
        root = self.vllm if module.split(".")[0] == "vllm" else self.root
        return root / (module.replace(".", "/") + ".py")

    def _space(self, module: str) -> dict[str, Any]:
        """The namespace upstream's definitions of `module` run in: a registered module of its
        own (dataclasses look their module up in sys.modules)."""
        if module not in self._spaces:
            name = f"upstream_{self.version.replace('.', '_')}.{module}"
            mod = types.ModuleType(name)
            sys.modules[name] = mod
            self._spaces[module] = mod.__dict__
        return self._spaces[module]

    def load(self, module: str, names: list[str]) -> dict[str, Any]:
        space = self._space(module)
        for name in names:
            self._define(module, name, space)
        return {n: space[n] for n in names}

    def _tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            self._trees[module] = ast.parse(self.source(module).read_text(encoding="utf-8"))
        return self._trees[module]

    def _define(self, module: str, name: str, space: dict[str, Any]) -> None:
        if name in space or hasattr(builtins, name):
            return
        for node in self._tree(module).body:
            if _defines(node, name):
                break
        else:
            raise KeyError(f"{module} {self.version}: no top-level {name!r}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            space[name] = self._imported(module, node, name)
            return
        for ref in sorted(_free_names(node) - {name}):
            if any(_defines(n, ref) for n in self._tree(module).body):
                self._define(module, ref, space)
        self._exec(module, node, space)

    def method(self, module: str, cls: str, name: str) -> Any:
        """A method of a top-level class, as a plain function (call it with a stand-in
        `self`); its module-level references are loaded as for `load`."""
        space = self._space(module)
        node = self._member(module, cls, name)
        for ref in sorted(_free_names(node)):
            if any(_defines(n, ref) for n in self._tree(module).body):
                self._define(module, ref, space)
        local: dict[str, Any] = {}
        self._exec(module, node, space, local)
        return local[name]

    def class_value(self, module: str, cls: str, name: str) -> Any:
        """A class attribute's value (e.g. a constant a method reads through `self`)."""
        node = self._member(module, cls, name)
        assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
        return eval(compile(ast.Expression(node.value), str(self.source(module)), "eval"), {})

    def _member(self, module: str, cls: str, name: str) -> ast.stmt:
        for top in self._tree(module).body:
            if isinstance(top, ast.ClassDef) and top.name == cls:
                for node in top.body:
                    if _defines(node, name):
                        return node
        raise KeyError(f"{module} {self.version}: no {cls}.{name}")

    def _exec(
        self,
        module: str,
        node: ast.stmt,
        space: dict[str, Any],
        local: dict[str, Any] | None = None,
    ) -> None:
        # Annotations stay unevaluated (as under `from __future__ import annotations`): they
        # are not logic, and they name vLLM types the check does not need.
        flags = __future__.annotations.compiler_flag
        code = compile(
            ast.Module(body=[node], type_ignores=[]),
            str(self.source(module)),
            "exec",
            flags=flags,
            dont_inherit=True,
        )
        exec(code, space, space if local is None else local)

    def _imported(self, module: str, node: ast.Import | ast.ImportFrom, name: str) -> Any:
        if isinstance(node, ast.Import):
            alias = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
            if alias.name in self.standins:
                return self.standins[alias.name]
            return importlib.import_module(alias.name)
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        source = node.module or ""
        if node.level:  # relative import inside the wheel
            source = ".".join(module.split(".")[: -node.level] + ([source] if source else []))
        key = f"{source}.{alias.name}"
        if key in self.standins:
            return self.standins[key]
        if source.split(".")[0] in ("vllm", "vllm_omni"):
            if self.source(key).is_file():  # `from pkg import submodule`
                return _LazyModule(self, key)
            if self.source(source).is_file():
                return self.load(source, [alias.name])[alias.name]
            if self.source(f"{source}.__init__").is_file():
                return self.load(f"{source}.__init__", [alias.name])[alias.name]
            raise KeyError(f"{module} needs {key}: give it a stand-in (vllm_facts.py)")
        return getattr(importlib.import_module(source), alias.name)


def source_version(root: Path) -> str:
    """The version an unpacked vllm-omni tree says it is (`vllm_omni/_version.py`)."""
    text = (root / "vllm_omni" / "_version.py").read_text(encoding="utf-8")
    match = re.search(r"^__version__ = version = '([^']+)'", text, re.M)
    if match is None:
        raise ValueError(f"{root}: no __version__ in vllm_omni/_version.py")
    return match.group(1)


class _LazyModule:
    """An upstream submodule imported by name: each attribute loaded on first use."""

    def __init__(self, upstream: Upstream, module: str) -> None:
        self._upstream, self._module = upstream, module

    def __getattr__(self, name: str) -> Any:
        return self._upstream.load(self._module, [name])[name]


def _defines(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    if isinstance(node, ast.Import):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return any((a.asname or a.name) == name for a in node.names)
    return False


def _free_names(node: ast.AST) -> set[str]:
    """Names a definition reads, annotations aside (a superset of its free variables: local
    names that shadow nothing at module level cost nothing)."""
    skip: set[int] = set()
    for n in ast.walk(node):
        for ann in _annotations(n):
            skip.update(id(x) for x in ast.walk(ann))
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip
    }


def _annotations(n: ast.AST) -> list[ast.AST]:
    if isinstance(n, ast.arg) and n.annotation is not None:
        return [n.annotation]
    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.returns is not None:
        return [n.returns]
    if isinstance(n, ast.AnnAssign):
        return [n.annotation]
    return []
