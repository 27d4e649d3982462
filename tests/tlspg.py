"""A private PostgreSQL with TLS: a CA and a server certificate made with `openssl`, a cluster
initdb'd and started with ssl=on on a loopback TCP port, and a pg_hba.conf that accepts TCP
connections over TLS only. The embedded package's server is built without SSL ("SSL is not
supported by this build"), so this uses Debian's PostgreSQL binaries (package postgresql)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HBA = """\
local   all all                trust
hostssl all all 127.0.0.1/32   trust
host    all all 127.0.0.1/32   reject
"""


@dataclass(frozen=True)
class TlsServer:
    port: int
    ca: Path  # the CA that signed the server's certificate
    other_ca: Path  # a CA that did not
    base: Path

    @property
    def socket_dir(self) -> Path:
        return self.base / "data"

    def url(self, *, host: str = "localhost", sslmode: str = "verify-full",
            ca: Path | None = None, dbname: str = "postgres") -> str:
        return (f"postgresql://postgres@{host}:{self.port}/{dbname}?sslmode={sslmode}"
                f"&sslrootcert={ca or self.ca}")


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder: Path) -> None:
    """ca.crt signs server.crt (for DNS localhost only); other-ca.crt signs nothing."""
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-subj", f"/CN=BF4PS test {ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                cwd=folder)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "server.key", "-out", "server.csr", cwd=folder)
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.crt",
            cwd=folder)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(command: list[str]) -> None:
    user = "embedded_postgres" if os.geteuid() == 0 else None  # initdb refuses root
    subprocess.run(command, check=True, user=user, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=120)


def server_binaries() -> Path | None:
    """The newest Debian PostgreSQL's bin folder, if installed."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                   else 0)
    return found[-1].parent if found else None


@contextmanager
def tls_server(hba: str = HBA) -> Iterator[TlsServer]:
    """`hba`: the pg_hba.conf (trust over TLS by default)."""
    bin_path = server_binaries()
    assert bin_path is not None, "no PostgreSQL server binaries with SSL"
    base = Path(tempfile.mkdtemp(prefix="bf4ps-tls-"))
    base.chmod(0o755)
    pgdata, certs = base / "data", base / "certs"
    certs.mkdir()
    make_certificates(certs)
    if os.geteuid() == 0:
        shutil.chown(base, "embedded_postgres", "embedded_postgres")
    _as_server_user([str(bin_path / "initdb"), "-D", str(pgdata), "-U", "postgres",
                     "--auth=trust", "--no-sync", "--locale=C", "--encoding=UTF8"])
    (pgdata / "pg_hba.conf").write_text(hba)
    for name in ("server.crt", "server.key"):
        shutil.copy(certs / name, pgdata / name)
        (pgdata / name).chmod(0o600)
        if os.geteuid() == 0:
            shutil.chown(pgdata / name, "embedded_postgres", "embedded_postgres")
    port = _free_port()
    options = (f"-c ssl=on -c listen_addresses=127.0.0.1 -c port={port} "
               f"-c unix_socket_directories={pgdata}")
    pg_ctl = str(bin_path / "pg_ctl")
    _as_server_user([pg_ctl, "-D", str(pgdata), "-w", "-o", options, "-l",
                     str(base / "server.log"), "start"])
    try:
        yield TlsServer(port, certs / "ca.crt", certs / "other-ca.crt", base)
    finally:
        _as_server_user([pg_ctl, "-D", str(pgdata), "-w", "-m", "immediate", "stop"])
        shutil.rmtree(base, ignore_errors=True)
