"""Where the real Battlelog captures are, for every test that reads them.

The captures are other people's published data, so they are never in the repository: they are
read from `../shared/battlelog-fixtures/` beside the repository's root (CI copies the folder
there), or from the folder named by `BF4PS_CAPTURES_DIR`. A test that needs them asks this module
for them and skips, naming the folder it looked in, when the folder is absent.

`shape` reduces a JSON value to its shape (key sets, JSON types, nesting) so that the simulator's
answers can be held to the captures' shapes without comparing any value.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV = "BF4PS_CAPTURES_DIR"
DEFAULT = REPO_ROOT.parent / "shared" / "battlelog-fixtures"
_GUID = re.compile(r"^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")
MAP_KEYS = frozenset({"weaponsByCategory"})  # keyed by weapon codes (wA, wSR, ...)

Shape = dict[str, Any]


def captures_dir() -> Path:
    """The captures' folder (it may not exist: see `require`)."""
    named = os.environ.get(ENV)
    return Path(named).resolve() if named else DEFAULT.resolve()


def available() -> bool:
    return captures_dir().is_dir()


def missing_reason() -> str:
    return (f"the real Battlelog captures are not in {captures_dir()} "
            f"(put ../shared/battlelog-fixtures beside the repository or set {ENV})")


def require() -> Path:
    """The captures' folder, or skip the calling test saying which folder is missing."""
    if not available():
        pytest.skip(missing_reason())
    return captures_dir()


def capture(relative: str) -> Path:
    """One capture file (`2013-bf4intel/weapon-stats.json`), or skip naming the folder."""
    path = require() / relative
    if not path.is_file():
        pytest.skip(f"{relative} is not among the captures in {captures_dir()}")
    return path


def read(relative: str) -> bytes:
    """A capture's bytes."""
    return capture(relative).read_bytes()


def skip_module_without() -> None:
    """Skip the calling test module, naming the folder, when the captures are absent (for a
    module that reads captures when it is imported)."""
    if not available():
        pytest.skip(missing_reason(), allow_module_level=True)


def load(relative: str) -> Any:
    """A capture's parsed JSON body."""
    return orjson.loads(capture(relative).read_bytes())


def files(pattern: str = "**/*") -> list[Path]:
    """Every capture file matching `pattern` under the folder, sorted; [] when it is absent
    (collection-time use: a test parametrized on an empty list is reported as skipped)."""
    if not available():
        return []
    return sorted(p for p in captures_dir().glob(pattern) if p.is_file())


def json_files(subfolder: str = "") -> list[Path]:
    """The JSON bodies (`*.json`) of one subfolder, or of all of them."""
    return files(f"{subfolder}/*.json" if subfolder else "*/*.json")


def digests() -> dict[str, Path]:
    """sha256 of every capture file's bytes -> the file."""
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in files()}


def copies(named: dict[str, bytes]) -> list[str]:
    """Which of the named files are byte for byte a capture file ("name is capture")."""
    theirs = digests()
    assert len(theirs) >= 15  # every capture file, READMEs and transcripts too
    return sorted(f"{name} is {theirs[digest].relative_to(captures_dir())}"
                  for name, body in named.items()
                  if (digest := hashlib.sha256(body).hexdigest()) in theirs)


def _is_map(value: dict[str, Any], key: str) -> bool:
    """An object keyed by data (GUIDs, numbers, category names, codes), not a fixed key set."""
    if key in MAP_KEYS:
        return True
    return bool(value) and all(_GUID.match(k) or k.isdigit() or " " in k for k in value)


def kind(value: Any, key: str = "") -> str:
    """A value's kind in a shape: obj, map, list, str, int, float, bool, null."""
    if isinstance(value, dict):
        return "map" if _is_map(value, key) else "obj"
    kinds = {bool: "bool", int: "int", float: "float", str: "str", list: "list"}
    return "null" if value is None else kinds[type(value)]


def shape(value: Any, into: Shape | None = None, key: str = "") -> Shape:
    """The shape of `value` merged into `into`: {"t": kinds seen, "k": key -> shape (objects),
    "m": an entry's shape (maps), "i": an element's shape (arrays)}."""
    node: Shape = into if into is not None else {"t": set()}
    kind_ = kind(value, key)
    node["t"].add(kind_)
    if kind_ == "obj":
        keys = node.setdefault("k", {})
        for name, item in value.items():
            keys[name] = shape(item, keys.get(name), name)
    elif kind_ == "map":
        for item in value.values():
            node["m"] = shape(item, node.get("m"))
    elif kind_ == "list":
        for item in value:
            node["i"] = shape(item, node.get("i"))
    return node


def shape_of_all(values: list[Any]) -> Shape:
    node: Shape = {"t": set()}
    for value in values:
        shape(value, node)
    return node


def differences(ours: Shape, theirs: Shape, path: str = "") -> Iterator[str]:
    """Where `ours` is not `theirs`: a kind they never have, a key set that is not theirs, a
    container of theirs that we never fill (its nesting would go unchecked)."""
    extra = ours["t"] - theirs["t"]
    if extra:
        yield f"{path or '.'}: {sorted(extra)} where the captures have {sorted(theirs['t'])}"
    for key, label in (("k", "keys"), ("m", "entries"), ("i", "elements")):
        if key in theirs and key not in ours:
            yield f"{path or '.'}: no {label} where the captures have some"
    ours_keys, their_keys = ours.get("k", {}), theirs.get("k", {})
    if "k" in ours and "k" in theirs and set(ours_keys) != set(their_keys):
        yield (f"{path or '.'}: keys missing {sorted(set(their_keys) - set(ours_keys))}, "
               f"extra {sorted(set(ours_keys) - set(their_keys))}")
    for key in sorted(set(ours_keys) & set(their_keys)):
        yield from differences(ours_keys[key], their_keys[key], f"{path}.{key}")
    for key, suffix in (("m", "{*}"), ("i", "[]")):
        if key in ours and key in theirs:
            yield from differences(ours[key], theirs[key], path + suffix)


def values_at(value: Any, path: str) -> Iterator[Any]:
    """Every value at a path of `differences` (`.a.b[]{*}.c`) in `value`."""
    steps = re.findall(r"\.([^.\[{]+)|(\[\])|(\{\*\})", path)
    found = [value]
    for key, element, entry in steps:
        if key:
            found = [v[key] for v in found if isinstance(v, dict) and key in v]
        elif element:
            found = [x for v in found if isinstance(v, list) for x in v]
        elif entry:
            found = [x for v in found if isinstance(v, dict) for x in v.values()]
    yield from found


# The captures each of the simulator's answers is held to (its `data` object's shape).
SHAPE_SOURCES = {
    "detailed": ("2020-battlelog-net/detailed-TheOnlyBond.json",
                 "2020-battlelog-net/detailed-idcsander.json"),
    "profile": ("2013-bf4intel/soldieroverview.json",),
    "weapons": ("2013-bf4intel/weapon-stats.json",),
    "vehicles": ("2013-bf4intel/vehicles-stats.json",),
    "soldiers": ("2013-bf4intel/soldier_listing.json",),
}


def capture_shape(resource: str) -> Shape:
    """The shape of `data` in the captures of one of the simulator's answers."""
    return shape_of_all([load(name)["data"] for name in SHAPE_SOURCES[resource]])


def shape_json(node: Shape) -> Any:
    """A shape as plain JSON (kinds sorted), as the simulator's shape files hold it."""
    out: dict[str, Any] = {"t": sorted(node["t"])}
    if "k" in node:
        out["k"] = {key: shape_json(child) for key, child in node["k"].items()}
    for key in ("m", "i"):
        if key in node:
            out[key] = shape_json(node[key])
    return out


def shape_from_json(raw: Any) -> Shape:
    node: Shape = {"t": set(raw["t"])}
    if "k" in raw:
        node["k"] = {key: shape_from_json(child) for key, child in raw["k"].items()}
    for key in ("m", "i"):
        if key in raw:
            node[key] = shape_from_json(raw[key])
    return node


if __name__ == "__main__":  # rewrite the simulator's shape files from the captures
    OUT = REPO_ROOT / "src/bf4ps/sim/battlelog/shapes"
    for name in SHAPE_SOURCES:
        body = orjson.dumps(shape_json(capture_shape(name)), option=orjson.OPT_INDENT_2)
        (OUT / f"{name}.json").write_bytes(body + b"\n")
        print(f"{OUT / name}.json: {len(body)} bytes")
