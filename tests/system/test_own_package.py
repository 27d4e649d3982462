"""The built package (the wheel) is only our own work: no file of it is byte for byte one of the
real Battlelog captures, the simulator builds every answer from the installed package alone, and
`bf4ps demo` runs from it alone (outside the repository, no captures beside it)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from tests import captures, load

REPO = captures.REPO_ROOT


@pytest.mark.slow
def test_no_file_of_the_built_package_is_a_capture(tmp_path: Path) -> None:
    captures.require()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                    str(REPO)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("bf4ps-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        named = {info.filename: archive.read(info) for info in archive.infolist()
                 if not info.is_dir()}
    assert any(name.endswith("sim/battlelog/shapes/weapons.json") for name in named)
    assert any(name.endswith("sim/battlelog/data/weapons.csv") for name in named)
    assert captures.copies(named) == []
    _answers_from_the_wheel(wheel, tmp_path / "installed")
    _demo_from_the_wheel(tmp_path / "installed", tmp_path / "run")


SIMULATE = """
import bf4ps, orjson
from bf4ps.sim.battlelog import detailed, items, overview, snapshot, templates
templates.warm()
snap = snapshot.take(1486274664, 1.2)
bodies = (detailed.detailed_body(snap, 1), overview.overview_body(snap, 1, 7, True),
          items.weapons_body(1486274664, 1, 1.2), items.vehicles_body(1486274664, 1, 1.2))
print(orjson.dumps({"at": bf4ps.__file__, "sizes": [len(b) for b in bodies]}).decode())
"""


def _answers_from_the_wheel(wheel: Path, target: Path) -> None:
    """The simulator builds every answer from the installed package's own files."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", SIMULATE], cwd=target, capture_output=True,
                          text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert report["at"].startswith(str(target))
    assert all(size > 4_000 for size in report["sizes"])


DEMO = "from bf4ps.cli.main import main; main()"


def _demo_from_the_wheel(target: Path, run: Path) -> None:
    """`bf4ps demo` from the installed package in an empty folder outside the repository (its
    processes inherit the path, so each imports the installed package): it collects."""
    run.mkdir()
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(run),
           "BF4PS_DATA_DIR": str(run / "data"), "BF4PS_CAPTURES_DIR": str(run / "none")}
    done = subprocess.run([sys.executable, "-c", DEMO, "demo", "--duration", "20", "--soldiers",
                           "300", "--collectors", "2", "--port", "0", "--json"], cwd=run,
                          capture_output=True, text=True, env=env, timeout=load.scaled(240))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = orjson.loads(done.stdout)
    assert sum(summary["coverage"]["collected_end"].values()) > 0, summary
    assert summary["violations"] == {"fleet": 0, "per_ip": 0}
