"""Module docstrings stay short: at most 12 lines each over src/ (what a module is for and
where to read more; history and long explanations belong in docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MOST_LINES = 12


def docstring_lines(path: Path) -> int:
    """Source lines the module's docstring spans (its quotes included); 0 without one."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    first = body[0] if body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return 0
    return (first.end_lineno or first.lineno) - first.lineno + 1


def test_module_docstrings_are_at_most_twelve_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in sorted(SRC.rglob("*.py"))
            if (n := docstring_lines(p)) > MOST_LINES}
    assert long == {}, f"module docstrings over {MOST_LINES} lines (move the rest to docs/)"


def test_the_count_is_of_the_docstring_alone(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""One.\n\nTwo\nthree."""\n\nX = """not\na docstring"""\n')
    assert docstring_lines(module) == 4
    module.write_text("X = 1\n")
    assert docstring_lines(module) == 0
