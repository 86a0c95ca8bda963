"""A gate's threshold as upstream's test file had it at a build's commit: the night's verdict
is judged by the line that was in force when it ran, not by today's. Read from a git checkout
of vllm-omni (`git show COMMIT:FILE`, the module-level `CONSTANT = value`), so a threshold
that moved is right on every night without anyone writing its date down; where the checkout,
the commit, the file or the constant is missing, the gate table's dated history decides."""

from __future__ import annotations

import ast
import functools
import subprocess
from pathlib import Path

from omni_tasks.trust.commits import check_commit
from omni_tasks.trust.names import InvalidName

MAX_SOURCE = 2 * 1024 * 1024  # a test file; anything larger is not one


def threshold_in_source(source: str, constant: str) -> float | None:
    """The module-level literal assigned to `constant` (a number, or a numeric string: upstream
    passes some as CLI text, `_CI_MIN_DAILY_OMNI_ACCURACY = "0.685"`); None when absent."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    value = None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        if constant in names and node.value is not None:
            value = _number(node.value)  # the last assignment wins, as at import
    return value


def _number(node: ast.expr) -> float | None:
    try:
        literal = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(literal, bool):
        return None
    try:
        number = float(literal) if isinstance(literal, int | float | str) else None
    except ValueError:
        return None
    return number if number is not None and abs(number) < 1e9 else None


@functools.lru_cache(maxsize=4096)
def threshold_at_commit(checkout: Path, commit: str, test_file: str, constant: str) -> float | None:
    """`constant` in `test_file` at `commit` of the vllm-omni `checkout`; None when git
    cannot show that file at that commit (a commit the checkout lacks, a file not yet added)."""
    try:
        commit = check_commit(commit, "commit")
    except InvalidName:
        return None
    if Path(test_file).is_absolute() or ".." in Path(test_file).parts:
        raise ValueError(f"test file {test_file!r}: must be a path inside the repository")
    try:
        shown = subprocess.run(
            ["git", "-C", str(checkout), "show", "--end-of-options", f"{commit}:{test_file}"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0 or len(shown.stdout) > MAX_SOURCE:
        return None
    return threshold_in_source(shown.stdout.decode("utf-8", "replace"), constant)
