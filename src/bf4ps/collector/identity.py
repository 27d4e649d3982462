"""Durable collector identity: a uuid created once, kept in the data directory across restarts,
reboots and upgrades; a new uuid only on deliberate replacement (--replace)."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import psutil

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, one_row, q
from bf4ps.domain import Lane
from bf4ps.events import log as events
from bf4ps.events.log import EventType
from bf4ps.queue.jobs import CollectorRef

_CLOCK_SLACK = timedelta(seconds=60)  # the host's clock against the database's


class IdentityError(RuntimeError):
    """A start that contradicts the registered identity; the message says what to do."""


@dataclass(frozen=True)
class Wanted:
    name: str
    hostname: str
    lane: Lane
    egress_key: str
    source_address: str | None
    version: str


@dataclass(frozen=True, slots=True)
class Registration:
    """A collector's registry row, as far as its start needs it."""

    collector_uuid: UUID
    collector_name: str
    hostname: str
    lane: str
    egress_key: str
    enabled: bool
    started_at: datetime | None
    stopped_at: datetime | None
    pid: int | None
    retired_at: datetime | None


@dataclass(frozen=True, slots=True)
class _Started:
    previous_health: str | None


def identity_file(data_dir: Path, name: str) -> Path:
    return data_dir / "collectors" / f"{name.lower()}.json"


def read_uuid(data_dir: Path, name: str) -> UUID | None:
    path = identity_file(data_dir, name)
    if not path.exists():
        return None
    return UUID(json.loads(path.read_text())["collector_uuid"])


def write_uuid(data_dir: Path, name: str, collector_uuid: UUID) -> None:
    path = identity_file(data_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"collector_uuid": str(collector_uuid), "name": name}))
    os.replace(tmp, path)


def _ref(row: Registration) -> CollectorRef:
    return CollectorRef(row.collector_uuid, row.collector_name, row.hostname,
                        row.egress_key, Lane(row.lane))


def _check_same(row: Registration, want: Wanted) -> None:
    diffs = [f"{label} is {had!r}, not {new!r}" for label, had, new in (
        ("name", row.collector_name, want.name), ("hostname", row.hostname, want.hostname),
        ("lane", row.lane, want.lane.value), ("egress", row.egress_key, want.egress_key))
        if had.lower() != new.lower()]
    if diffs:
        raise IdentityError(
            f"collector {row.collector_uuid} is registered differently: {'; '.join(diffs)}. "
            "Start it as registered, or register a new incarnation with --replace.")


async def register(conn: Conn, data_dir: Path, want: Wanted, *, replace: bool = False,
                   given_uuid: UUID | None = None) -> CollectorRef:
    """Find or create this collector's registration and mark the process started. The
    identity file is written before the commit, under the name's lock, so a start waiting on
    that lock finds the registration it is about to contradict."""
    async with conn.transaction():
        await conn.execute(q("collector_lock_name"), {"name": want.name})
        known = given_uuid or read_uuid(data_dir, want.name)
        row = (await one(conn, Registration, "collector_by_uuid", {"collector_uuid": known})
               if known else None)
        if replace:
            row = await _replace(conn, want)
        elif row is None:
            row = await _new(conn, want, known)
        else:
            _check_usable(row, want)
        ref = _ref(row)
        started = await one(conn, _Started, "collector_started", {
            "collector_uuid": ref.collector_uuid, "version": want.version, "pid": os.getpid(),
            "source_address": want.source_address})
        if started is not None and started.previous_health == "lost":
            # back after an outage (crash, reboot): the first good heartbeat is this start
            await events.record(conn, EventType.HEARTBEAT_RESTORED, **ref.event_fields(),
                                lane=ref.lane.value, details={"by": "restart"})
        await events.record(conn, EventType.COLLECTOR_STARTED, **ref.event_fields(),
                            lane=ref.lane.value, details={"version": want.version,
                                                          "pid": os.getpid()})
        # should the commit fail, the next start registers the uuid written here
        write_uuid(data_dir, want.name, ref.collector_uuid)
    return ref


def _check_usable(row: Registration, want: Wanted) -> None:
    if row.retired_at is not None:
        raise IdentityError(
            f"collector {want.name} ({row.collector_uuid}) was retired at "
            f"{row.retired_at:%Y-%m-%d %H:%M:%S} UTC; register a new one with --replace.")
    _check_same(row, want)
    _check_not_running(row, want)
    if not row.enabled:
        raise IdentityError(
            f"collector {want.name} is disabled; `bf4ps collector resume {want.name}` enables it.")


def _check_not_running(row: Registration, want: Wanted) -> None:
    """A second process under the same identity would share its registry row (its stop would
    mark the working one stopped): refused while the registered process is alive on this
    host. Alive means: its pid runs a collector of this name, not a zombie, and was started
    before the registration's start (a pid reused after a reboot was started later)."""
    pid, started = row.pid, row.started_at
    if pid is None or started is None or row.stopped_at is not None or pid == os.getpid():
        return
    try:
        proc = psutil.Process(pid)
        created = datetime.fromtimestamp(proc.create_time(), UTC)
        running = proc.status() != psutil.STATUS_ZOMBIE
        command = " ".join(proc.cmdline()).lower()
    except psutil.Error:  # gone, or another user's
        return
    if running and "collector" in command and want.name.lower() in command \
            and created <= started + _CLOCK_SLACK:
        raise IdentityError(
            f"collector {want.name} is already running on this host (pid {pid}, started "
            f"{started:%Y-%m-%d %H:%M:%S} UTC); stop it first, or start this one under "
            "another name.")


async def _insert(conn: Conn, want: Wanted, collector_uuid: UUID) -> Registration:
    return await one_row(conn, Registration, "collector_insert", {
        "collector_uuid": collector_uuid, "name": want.name, "hostname": want.hostname,
        "lane": want.lane.value, "egress_key": want.egress_key,
        "source_address": want.source_address, "version": want.version})


async def _new(conn: Conn, want: Wanted, known: UUID | None) -> Registration:
    taken = await one(conn, Registration, "collector_by_name", {"name": want.name})
    if taken is not None:
        raise IdentityError(
            f"the name {want.name} belongs to collector {taken.collector_uuid} on host "
            f"{taken.hostname} (egress {taken.egress_key}). Start it with its data "
            "directory, or retire it and register a new incarnation with --replace.")
    row = await _insert(conn, want, known or uuid.uuid4())
    await events.record(conn, EventType.COLLECTOR_REGISTERED, **_ref(row).event_fields(),
                        lane=want.lane.value)
    return row


async def _replace(conn: Conn, want: Wanted) -> Registration:
    """Retire the current registration of the name (if any) and register a new uuid."""
    new_uuid = uuid.uuid4()
    old = await one(conn, Registration, "collector_by_name", {"name": want.name})
    if old is not None:  # free the name first: the unique index covers current registrations
        await conn.execute(q("collector_retire"), {"collector_uuid": old.collector_uuid,
                                                   "replaced_by": None})
    row = await _insert(conn, want, new_uuid)
    if old is not None:
        await conn.execute(q("collector_replaced_by"), {"collector_uuid": old.collector_uuid,
                                                        "replaced_by": new_uuid})
        await events.record(conn, EventType.COLLECTOR_RETIRED, **_ref(old).event_fields(),
                            details={"replaced_by": str(new_uuid)})
    await events.record(conn, EventType.COLLECTOR_REGISTERED, **_ref(row).event_fields(),
                        lane=want.lane.value,
                        details={"replaces": str(old.collector_uuid) if old else None})
    return row
