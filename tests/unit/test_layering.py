"""The package's layering, read from its import statements (function-level ones too): its
rooms stand on floors, each importing only the rooms below it; `analysis/` stays pure (no
store, config, audio, network or database import), no module imports another that imports it
back, no store module reaches the benchmark registry, and only `store/` holds SQL."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "omni_tasks"
IO_MODULES = (
    "omni_tasks.store",
    "omni_tasks.config",
    "omni_tasks.evidence.audio",
    "psycopg",
    "httpx",
)
SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE omni\.|DELETE FROM)\b")


@cache
def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, *, typing_too: bool = False) -> set[str]:
    """What a module imports, at its top level or inside a function (a deferred import is
    still a dependency): `from pkg import sub` names the submodule, not the package. Imports
    for type checking only (`if TYPE_CHECKING:`) never run and are left out unless
    `typing_too`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = (
        set()
        if typing_too
        else {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
    )
    modules = _modules()
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


# The rooms of the package (a top-level module or folder of omni_tasks/), lowest floor first:
# each imports only rooms before it in this list. docs/contributors/architecture.md opens with
# the same list in the same order, one line each.
FLOORS = (
    "__init__",
    "formatting",
    "progress",
    "prompts",
    "harness",
    "offline_models",
    "config",
    "trust",
    "series",
    "records",
    "contracts",
    "evidence",
    "voice",
    "dataset",
    "analysis",
    "ledger",
    "gates",
    "store",
    "grading",
    "synthesis",
    "benchmarks",
    "deployment",
    "environments",
    "alerts",
    "reports",
    "night",
    "grafana",
    "importers",
    "ab",
    "jobs",
    "dag_support",
    "cli",
    "plugins",
    "dags",
    "__main__",
)
ARCHITECTURE = PACKAGE.parent / "docs" / "contributors" / "architecture.md"


def _room(module: str) -> str:
    """The room of a module name (`omni_tasks.store.db` -> store); the package itself and
    names it defines (`__version__`) are the `__init__` room."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in _rooms():
        return parts[1]
    return "__init__"


@cache
def _rooms() -> tuple[str, ...]:
    """Every room on disk: a top-level module, or a folder holding Python modules."""
    return tuple(
        sorted(
            p.stem if p.is_file() else p.name
            for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.is_file()) or (p.is_dir() and any(p.rglob("*.py")))
        )
    )


def _upward() -> dict[tuple[str, str], list[str]]:
    """Every import of a room above the importer's floor: (room, room above) -> where."""
    floor = {room: i for i, room in enumerate(FLOORS)}
    found: dict[tuple[str, str], list[str]] = {}
    for name, path in sorted(_modules().items()):
        src = _room(name) if name != "omni_tasks" else "__init__"
        for imported in sorted(_imports(path, typing_too=True)):
            if imported == "omni_tasks" or imported.startswith("omni_tasks."):
                dst = _room(imported)
                if floor[dst] > floor[src]:
                    where = path.relative_to(PACKAGE).as_posix()
                    found.setdefault((src, dst), []).append(f"{where}: {imported}")
    return found


def test_every_room_has_a_floor() -> None:
    assert sorted(FLOORS) == sorted(_rooms())


def test_rooms_import_only_the_floors_below() -> None:
    """Each room imports only rooms on lower floors, function-level imports included, and
    type-checking-only ones too (a type a room names is a room it knows about)."""
    upward = _upward()
    said = "".join(f"\n{a} -> {b}: {', '.join(w)}" for (a, b), w in sorted(upward.items()))
    assert not upward, "imports of a higher floor:" + said


def test_the_architecture_page_lists_the_floors() -> None:
    """The page's opening tree names the same rooms in the same order."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    tree = text.split("```", 2)[1]
    listed = re.findall(r"^ +([a-z_]+)(?:\.py|/) ", tree, re.M)
    assert tuple(listed) == FLOORS


def test_analysis_imports_no_io_module() -> None:
    for name, path in _modules().items():
        if name.startswith("omni_tasks.analysis"):
            io = sorted(i for i in _imports(path) if i.startswith(IO_MODULES))
            assert io == [], f"{name} imports {io}"


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {
        name: {i for i in _imports(path) if i in modules and i != name}
        for name, path in modules.items()
    }
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in graph[name]:
            assert state.get(dep) != 1, "import cycle: " + " -> ".join([*trail, name, dep])
            if dep not in state:
                visit(dep, [*trail, name])
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, [])


def test_no_store_module_imports_the_registry_or_a_report() -> None:
    for name, path in _modules().items():
        if name.startswith("omni_tasks.store"):
            up = sorted(
                i
                for i in _imports(path)
                if i.startswith(("omni_tasks.benchmarks", "omni_tasks.reports"))
            )
            assert up == [], f"{name} imports {up}"


def test_only_the_store_holds_sql() -> None:
    allowed = ("omni_tasks/store/", "omni_tasks/grafana/dashboards.py")  # panels are SQL
    for path in _modules().values():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if not rel.startswith(allowed):
            assert not SQL.search(path.read_text(encoding="utf-8")), f"SQL in {rel}"


# Issue 44 aims below 40. A JSON document is contracts.JsonObject (a reader narrows it), a row
# or result a dataclass. An alias of dict[str, Any] (`Row = dict[str, Any]`) counts as one:
# a new name is no new type. What is left is mostly store rows read by one caller each.
LOOSE_SIGNATURES = 34
LOOSE = "dict[str, Any]"


def _loose_aliases(trees: list[ast.Module]) -> set[str]:
    """Module-level names bound to dict[str, Any] anywhere in the package."""
    return {
        t.id
        for tree in trees
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.value) == LOOSE
        for t in node.targets
        if isinstance(t, ast.Name)
    }


# Issue 44 aimed below 15 (33 before). A stored JSON column is contracts.JsonObject, or a
# TypedDict where its keys are known (records.LineageFlags, Execution): its stored spelling stays.
# What is left: an artifact's document before its parser's checks, the deployment form's
# free-form sections, and fields of modules being rewritten (seed_tts, jobs, contracts).
LOOSE_FIELDS = 12
_TYPED_BASES = ("BaseModel", "TypedDict")


def _is_typed_record(node: ast.ClassDef) -> bool:
    """A dataclass (any spelling of the decorator), a pydantic model or a TypedDict."""
    decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
    return any(ast.unparse(d).split(".")[-1] == "dataclass" for d in decorators) or any(
        ast.unparse(b).split(".")[-1] in _TYPED_BASES for b in node.bases
    )


def test_loose_dicts_in_record_fields_do_not_grow() -> None:
    """`dict[str, Any]` (or an alias of it) in a dataclass's, model's or TypedDict's fields
    (`list[dict[str, Any]]` and `dict[str, Any] | None` too): the count only goes down."""
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items()}
    alias = re.compile(r"\b(?:" + "|".join(sorted(_loose_aliases(list(trees.values())))) + r")\b")
    found: list[str] = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _is_typed_record(node):
                for field in node.body:
                    if isinstance(field, ast.AnnAssign):
                        text = ast.unparse(field.annotation)
                        n = text.count(LOOSE) + len(alias.findall(text))
                        found += [f"{name}.{node.name}.{ast.unparse(field.target)}"] * n
    assert len(found) <= LOOSE_FIELDS, "\n".join(found)


def test_loose_dicts_in_signatures_do_not_grow() -> None:
    """`dict[str, Any]` (or an alias of it) in function signatures, parameters and returns,
    lets any shape through unchecked: the count only goes down."""
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items()}
    alias = re.compile(r"\b(?:" + "|".join(sorted(_loose_aliases(list(trees.values())))) + r")\b")
    assert alias.pattern != r"\b(?:)\b"  # the package has such aliases today (store rows)
    per_module: dict[str, int] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                notes = [p.annotation for p in params if p is not None] + [node.returns]
                texts = [ast.unparse(n) for n in notes if n]
                found = sum(t.count(LOOSE) + len(alias.findall(t)) for t in texts)
                per_module[name] = per_module.get(name, 0) + found
    total = sum(per_module.values())
    worst = sorted(per_module.items(), key=lambda kv: -kv[1])[:5]
    assert total <= LOOSE_SIGNATURES, f"{total} (most in {worst})"
