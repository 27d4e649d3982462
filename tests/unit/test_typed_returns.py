"""Untyped rows stay out of src/: functions whose return annotation holds a `dict[..., Any]`
(bare, optional or inside a list/tuple) are counted. At most ten, each a documented parameter
bag (PARAMETER_BAGS); the count may only fall (CEILING is lowered as bags get types)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
BAR = 10
CEILING = 6  # the count today: every one a parameter bag named below

# The dict returns that are parameters of something else, not rows: what each one feeds.
PARAMETER_BAGS = {
    "bf4ps/queue/claim.py:_lease_params": "a lease's fence: job id, collector, lease token",
    "bf4ps/queue/enqueue.py:params": "the enqueue query's named parameters",
    "bf4ps/views/soldier_page.py:_values": "a history point's fields as HistoryRow's keywords",
    "bf4ps/web/routes_public.py:_discovery": "a template's context",
    "bf4ps/web/routes_public.py:_charts": "a template's context (chart JSON)",
    "bf4ps/web/api.py:errors": "FastAPI's `responses=` of an operation",
}


def _is_dict_of_any(node: ast.AST) -> bool:
    if not isinstance(node, ast.Subscript):
        return False
    base = node.value
    name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
    if name not in ("dict", "Dict"):
        return False
    args = node.slice
    return (isinstance(args, ast.Tuple) and len(args.elts) == 2
            and ast.unparse(args.elts[1]) in ("Any", "typing.Any"))


def dict_returns(source: str) -> list[str]:
    """The functions of `source` whose return annotation holds a dict[..., Any]."""
    return [f.name for f in ast.walk(ast.parse(source))
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.returns is not None
            and any(_is_dict_of_any(n) for n in ast.walk(f.returns))]


def found() -> list[str]:
    return [f"{p.relative_to(SRC)}:{name}" for p in sorted(SRC.rglob("*.py"))
            for name in dict_returns(p.read_text(encoding="utf-8"))]


def test_the_count_finds_every_shape_and_only_those() -> None:
    source = '''
def a() -> dict[str, Any]: ...
async def b() -> dict[str, Any] | None: ...
def c() -> list[dict[str, Any]]: ...
def d() -> Dict[int, typing.Any]: ...
def e() -> tuple[str, dict[str, Any]]: ...
def f() -> dict[str, int]: ...
def g() -> Mapping[str, Any]: ...
def h(x: dict[str, Any]) -> None: ...
def i(): ...
'''
    assert dict_returns(source) == ["a", "b", "c", "d", "e"]


def test_each_parameter_bag_named_is_still_one() -> None:
    """The list names only functions that exist and still return a dict of Any."""
    assert set(PARAMETER_BAGS) <= set(found())


def test_untyped_dict_returns_do_not_grow() -> None:
    now = found()
    assert len(now) <= CEILING, "\n".join(["new dict[..., Any] returns: give them a row type",
                                            *now])


def test_at_most_ten_untyped_dict_returns_each_a_named_parameter_bag() -> None:
    now = found()
    assert len(now) <= BAR
    assert set(now) <= set(PARAMETER_BAGS), "\n".join(
        ["dict[..., Any] returns that are not a named parameter bag: give them a row type",
         *sorted(set(now) - set(PARAMETER_BAGS))])
