"""Only our own work in the repository: no file of it is byte for byte one of the real Battlelog
captures (other people's published data, read from ../shared/battlelog-fixtures by the tests and
never copied in). The built package is checked the same way in tests/system/test_own_package.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import captures

REPO = captures.REPO_ROOT


def _repository_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in listed.decode().split("\0") if name and (REPO / name).is_file()]


def test_no_repository_file_is_a_capture() -> None:
    captures.require()
    files = _repository_files()
    assert len(files) > 300
    assert captures.copies({str(p.relative_to(REPO)): p.read_bytes() for p in files}) == []


def test_a_copy_is_seen() -> None:
    """The comparison can fail: a capture's bytes under any name are found."""
    some = captures.capture("2013-bf4intel/details-stats.json")
    assert captures.copies({"copied.json": some.read_bytes()}) == [
        "copied.json is 2013-bf4intel/details-stats.json"]
