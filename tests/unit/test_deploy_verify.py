"""The deployment files checked by their own tools and against the package: the systemd units
under `systemd-analyze verify` (with the units' bf4ps path pointed at this environment's real
entry point), the Containerfile's commands, paths and user against the package and the units,
and the image build where a container runtime and its base image are at hand."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bf4ps.settings import Settings
from tests.unit.test_deploy_files import CONTAINER, ROOT, SERVICES, SYSTEMD

UNIT_BF4PS = "/opt/bf4ps/.venv/bin/bf4ps"
CONTAINERFILE = (CONTAINER / "Containerfile").read_text()


def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing")
@pytest.mark.parametrize("name", [*SERVICES, "bf4ps.target"])
def test_systemd_analyze_verify_accepts_the_unit(name: str, tmp_path: Path) -> None:
    """Works without a running systemd (it reads the files). Any remark fails the test:
    unknown keys are only warnings (exit 0) but mean a typo systemd would ignore."""
    bf4ps = Path(sys.executable).with_name("bf4ps")
    assert bf4ps.exists(), "the package's console script is not installed"
    for unit in [*SYSTEMD.glob("*.service"), *SYSTEMD.glob("*.target")]:
        (tmp_path / unit.name).write_text(unit.read_text().replace(UNIT_BF4PS, str(bf4ps)))
    if name.endswith("@.service"):  # a template is verified as one of its instances
        instance = tmp_path / name.replace("@.", "@mak-01.")
        instance.write_text((tmp_path / name).read_text())
        name = instance.name
    done = _verify(tmp_path / name)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_units_and_image_install_the_same_venv() -> None:
    for name in SERVICES:
        for path in re.findall(r"^ExecStart=(\S+)", (SYSTEMD / name).read_text(), re.M):
            assert path == UNIT_BF4PS, (name, path)
    assert "python -m venv /opt/bf4ps/.venv" in CONTAINERFILE
    assert "ENV PATH=/opt/bf4ps/.venv/bin:$PATH" in CONTAINERFILE


def test_containerfile_matches_the_package() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"bf4ps": "bf4ps.cli.main:main"}
    assert 'ENTRYPOINT ["bf4ps"]' in CONTAINERFILE  # the console script, on PATH
    assert "/opt/bf4ps/.venv/bin/bf4ps --version" in CONTAINERFILE  # the builder runs it
    # the user it creates is the user it runs as; its home is the data directory and volume
    user = re.search(r"useradd --system --uid (\d+) --gid (\w+) --home-dir (\S+)", CONTAINERFILE)
    assert user is not None
    assert re.search(rf"^USER {user[2]}:{user[2]}$", CONTAINERFILE, re.M)
    assert f"groupadd --system --gid {user[1]} {user[2]}" in CONTAINERFILE
    env = dict(re.findall(r"\b(BF4PS_[A-Z_]+)=(\S+)", CONTAINERFILE.split("AS runtime")[1]))
    fields = Settings.model_fields
    for key in env:
        assert key.removeprefix("BF4PS_").lower() in fields, f"{key} is not a setting"
    assert env["BF4PS_DATA_DIR"] == user[3]
    assert f'VOLUME ["{user[3]}"]' in CONTAINERFILE
    assert f"install -d -o {user[2]} -g {user[2]} -m 0750 {user[3]}" in CONTAINERFILE
    assert f"EXPOSE {env['BF4PS_WEB_PORT']}" in CONTAINERFILE
    routes = (ROOT / "src" / "bf4ps" / "web" / "api.py").read_text()
    assert '@router.get("/healthz"' in routes  # what the HEALTHCHECK asks
    # the CLI accepts the commands the image's docs and compose file give it
    from click.testing import CliRunner

    from bf4ps.cli.main import cli

    for args in (["--version"], ["--help"], ["collector", "run", "--help"],
                 ["web", "run", "--help"], ["scheduler", "run", "--help"],
                 ["db", "upgrade", "--help"]):
        assert CliRunner().invoke(cli, args).exit_code == 0, args


def _runtime_problem() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no container runtime (docker) installed"
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        return f"docker has no daemon here: {info.stderr.strip().splitlines()[-1:]}"
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)", CONTAINERFILE, re.M)
    assert base is not None
    found = subprocess.run([docker, "image", "inspect", base[1]], capture_output=True,
                           timeout=60)
    if found.returncode != 0:
        return f"the base image {base[1]} is not present locally (no registry access)"
    return None


@pytest.mark.slow
def test_the_image_builds_and_runs_bf4ps() -> None:
    problem = _runtime_problem()
    if problem:
        pytest.skip(problem)
    built = subprocess.run(["docker", "build", "-f", str(CONTAINER / "Containerfile"),
                            "-t", "bf4ps:test", str(ROOT)], capture_output=True, text=True,
                           timeout=1800)
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run(["docker", "run", "--rm", "bf4ps:test", "--version"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and "0.1.0" in ran.stdout, ran.stderr
