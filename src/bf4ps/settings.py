"""The one settings object. Built in main() from BF4PS_* variables and an optional TOML file.

Run-time scheduling policy (weights, watermarks, freshness, backoff) is NOT here: it lives in the
database policy table so it can change without a restart (see bf4ps/policy.py).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

REAL_BATTLELOG = "https://battlelog.battlefield.com"
ENV_PREFIX = "BF4PS_"


def child_env(settings: dict[str, str]) -> dict[str, str]:
    """The environment for a child bf4ps process given exactly these settings: this process's
    environment without any BF4PS_* variable (none of the caller's leaks in), then `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update(settings)
    return env


def default_data_dir() -> Path:
    """Outside /root when root: the embedded server loosens its parents' permissions."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/bf4ps")
    return Path.home() / ".local" / "share" / "bf4ps"


class Settings(BaseSettings):
    # an empty BF4PS_X= means "not set" (the default), not an invalid value
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore",
                                      env_ignore_empty=True)

    # --- storage ---
    database_url: str | None = Field(
        None, description="PostgreSQL ≥ 15 URL. Unset: the embedded server under data_dir."
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Embedded PostgreSQL data, collector identity files.",
    )
    bf4sw_database_url: str | None = Field(
        None,
        description="BF4SW's database (read-only). Unset: database 'bf4sw' on the BF4PS server.",
    )
    read_database_url: str | None = Field(
        None, description="A streaming replica of the BF4PS database for the website's public "
        "reads and the console's charts (docs/operations.md \"Read replica\"). Requests, "
        "their status, logins, the console's figures and actions stay on the primary. Unset: "
        "every read on the primary.")
    read_max_lag_seconds: float = Field(
        10.0, gt=0, le=3600, description="Staleness bound of the replica's reads: while the "
        "replica may be further behind the primary than this (or is down), its reads go to "
        "the primary.")
    db_pool_max: int = Field(
        4, ge=1, description="Connections of the website's pool, per web process, all opened "
        "at start so no request waits for one to be made (collectors use 3 each, plus one for "
        "heartbeats).")

    # --- database session bounds (docs/architecture.md "Session bounds") ---
    db_lock_timeout_seconds: float = Field(
        2.0, ge=0, description="A statement waiting this long for a lock gives up (and is "
        "retried): no session queues behind a stalled one. 0: off. Not for migrations.")
    db_idle_in_transaction_timeout_seconds: float = Field(
        5.0, ge=0, description="The server ends a session idle this long inside a "
        "transaction, releasing its locks (a frozen or vanished client). 0: off.")
    db_statement_timeout_seconds: float = Field(
        30.0, ge=0, description="Longest statement of a collector's or the website's sessions "
        "(short statements only; the scheduler, migrations and maintenance commands have "
        "none). 0: off.")
    db_keepalives_idle_seconds: int = Field(
        5, ge=1, description="TCP keepalive probes begin after this much silence (client "
        "and server side of every session).")
    db_keepalives_interval_seconds: int = Field(
        2, ge=1, description="Seconds between TCP keepalive probes.")
    db_keepalives_count: int = Field(
        3, ge=1, description="Unanswered keepalive probes after which the peer is dead.")
    db_tcp_user_timeout_seconds: float = Field(
        10.0, ge=0, description="Data unacknowledged this long ends the connection (both "
        "sides). 0: the kernel's default (many minutes).")

    @field_validator("database_url", "bf4sw_database_url", "read_database_url")
    @classmethod
    def _connection_string(cls, value: str | None) -> str | None:
        """Parsed here, so a malformed one is a configuration error naming the setting (and
        never echoing a password), not a failure at the first connection."""
        if value is not None:
            try:
                conninfo_to_dict(value)
            except Exception:  # psycopg's message repeats the string, password included
                raise ValueError("not a PostgreSQL connection string: use postgresql://USER:"
                                 "PASSWORD@HOST:PORT/DBNAME or key=value pairs") from None
        return value

    # --- Battlelog client ---
    battlelog_base_url: str = Field(REAL_BATTLELOG, description="Battlelog base URL.")
    battlelog_user_agent: str = Field(
        "BF4PlayerStats/0.1 (+https://bf4playerstats.com)", description="User-Agent sent."
    )
    battlelog_timeout_seconds: float = Field(
        30.0, gt=0, description="Per-request timeout: each phase (connect, read, write) and "
        "the whole request, body included.")
    battlelog_answer_timeout_seconds: float = Field(
        5.0, gt=0, description="How long a sent request waits for its answer to begin (its "
        "status line and headers) before it is a timeout (at most `battlelog_timeout_seconds`)"
        ": Battlelog's slowest measured answers took 2.3 s whole (weapons, 600 KB), so one "
        "not begun after 5 s is hung, and every second waited longer idles a one-collector "
        "egress. Raise it if Battlelog's answers grow slow.")
    battlelog_connect_lead_seconds: float = Field(
        1.0, ge=0, le=10, description="A request is begun this long before its slot, so DNS, "
        "TCP and TLS are done by then; its headers wait for the slot.")
    battlelog_session_file: Path | None = Field(
        None, repr=False, description="A file holding a (logged-in) Battlelog session id "
        "(the `beaker.session.id` cookie; one account per egress) used for every Battlelog "
        "request; re-read by the collector whenever it changes, never logged. A login wall met "
        "with it means it expired: the collector sends nothing until the file is renewed. "
        "Unset: requests are anonymous, searches open anonymous sessions. Either way an empty "
        "answer is believed only when a check search for a stored soldier finds it.")

    # --- collectors and leases ---
    lease_seconds: float = Field(120.0, gt=0, description="Job lease length.")
    heartbeat_seconds: float = Field(15.0, gt=0, description="Collector heartbeat period.")
    heartbeat_lost_after_seconds: float = Field(
        45.0, gt=0, description="Silence after which a collector is marked lost."
    )
    claim_horizon_seconds: float = Field(
        1.0, ge=0, description="Claim only when the egress gate opens within this horizon."
    )
    idle_poll_seconds: float = Field(1.0, gt=0, description="Sleep when no work is claimable.")
    clock_skew_limit_seconds: float = Field(
        1.0, gt=0, description="A collector whose clock is further than this from the "
        "database's takes no send slots until it is back within (docs/operations.md, 'Time').")
    restore_receipt_file: bool = Field(
        True, description="A collector keeps its newest ledger receipt in its data directory "
        "too, so that its own restart still shows it to the restore guard: a second signal "
        "for a data-only restore under which every process restarted. The guard does not "
        "depend on it (docs/operations.md, 'Backups and restores').")
    db_start_wait_seconds: float = Field(
        300.0, ge=0, description="How long a starting collector waits out a database that "
        "refuses connections, is shutting down or starting up (retrying with a backoff of "
        "0.5 s doubling to 10 s, a log line each) before it exits 1; authentication and "
        "configuration errors exit at once.")
    clock_check_seconds: float = Field(
        10.0, gt=0, description="How often a collector measures its clock offset to the "
        "database (also at start, and at once after its clock is seen to step).")

    # --- rate gates (pacing and the fleet budget live in the database: `bf4ps gate set`,
    # `bf4ps budget set`; these only seed an egress or a budget never configured) ---
    egress_min_interval_seconds: float = Field(
        5.0, gt=0, description="Seed: minimum spacing of requests of a new egress (then "
        "`bf4ps gate set`)."
    )
    egress_safety_margin_seconds: float = Field(
        0.05, ge=0, description="Added to every spacing so network jitter cannot break a limit."
    )
    egress_window_requests: int | None = Field(
        None, ge=1, description="Seed: at most N requests per window for a new egress."
    )
    egress_window_seconds: float = Field(60.0, gt=0,
                                         description="Seed: a new egress's window length.")
    fleet_budget_requests: int | None = Field(
        None, ge=1, description="Seed: the fleet budget, N physical requests per rolling "
        "window, when none was ever configured (then `bf4ps budget set`)."
    )
    fleet_budget_window_seconds: float = Field(3600.0, gt=0,
                                               description="Seed: the fleet window length.")
    throttle_cooldown_seconds: float = Field(60.0, gt=0, description="First throttle cool-down.")
    throttle_cooldown_max_seconds: float = Field(
        1800.0, gt=0, description="Cap of the exponential throttle cool-down."
    )

    # --- scheduler ---
    scheduler_tick_seconds: float = Field(2.0, gt=0, description="Scheduler loop period.")
    bf4sw_sync_seconds: float = Field(60.0, gt=0, description="BF4SW discovery period.")
    bf4sw_statement_timeout_seconds: float = Field(
        30.0, gt=0, description="Longest one intake query may run on BF4SW's database "
        "(its statement_timeout; the intake's queries are read-only and read bounded batches).")
    sweep_seconds: float = Field(
        60.0, gt=0, description="Activity decay and due-marking period; each refresh's due "
        "time is spread over one period before it (so the sweep adds no wait on average).")
    history_record_seconds: float = Field(
        60.0, gt=0, description="Fleet-history record period (the console's charts).")
    forecast_record_seconds: float = Field(
        3600.0, gt=0, description="Forecast record period: the scheduler records the model's "
        "forecast this often and backtests the records whose horizon (this period) passed.")
    capacity_check_after_seconds: float = Field(
        600.0, gt=0, description="The scheduler's capacity check waits until background "
        "collectors have served this long (the forecast's measurement window).")

    # --- website ---
    web_host: str = Field("127.0.0.1", description="Website bind address.")
    web_port: int = Field(8080, ge=1, le=65535, description="Website port.")
    ops_username: str | None = Field(None, description="Operator console user.")
    ops_password: SecretStr | None = Field(None, description="Operator console password.")
    ops_local_demo: bool = Field(
        False, description="Serve /ops without credentials (local demo only)."
    )
    secret_key: SecretStr | None = Field(None, description="CSRF signing key (random if unset).")
    ops_login_free_failures: int = Field(
        5, ge=0, description="Failed operator logins a client network or an account may make "
        "(within BF4PS_OPS_LOGIN_FORGET_SECONDS) before each further one locks it out.")
    ops_login_delay_seconds: float = Field(
        1.0, gt=0, description="The first lock-out after the free failures; it doubles with "
        "each further failure (429 with Retry-After meanwhile).")
    ops_login_max_delay_seconds: float = Field(
        300.0, gt=0, description="The longest lock-out after failed operator logins.")
    ops_login_forget_seconds: float = Field(
        900.0, gt=0, description="Failed operator logins older than this (and no lock-out "
        "running) are forgotten.")
    metrics_token: SecretStr | None = Field(
        None, description="/metrics requires `Authorization: Bearer` with it; unset, /metrics "
        "answers only a scraper on the website's own host (bound to loopback, no proxy).")
    client_ipv6_prefix_length: int = Field(
        64, ge=1, le=128, description="IPv6 clients are counted by their network of this "
        "prefix length (a /64 is one host or one customer line) in the submission limit and "
        "the operator login limit.")
    metrics_settle_seconds: float = Field(
        10.0, ge=0, le=300,
        description="/metrics counts an event once it is this old: a transaction still open "
                    "may commit a lower event id meanwhile, which a scrape must not skip.")
    submit_limit_requests: int = Field(
        10, ge=1, description="New lookup requests one client may submit per limit window.")
    submit_limit_window_seconds: float = Field(
        60.0, gt=0, description="The submission limit's window.")

    test_pause_at: str | None = Field(
        None, description="TEST ONLY (fault tests): comma-separated points where a collector "
        "pauses once (collector/testhook.py). Never set in production.")
    test_pause_dir: Path | None = Field(
        None, description="TEST ONLY: where the pause points' ready/go files are.")

    def battlelog_session(self) -> str | None:
        """The session id in battlelog_session_file (None when unset). A missing, unreadable
        or too short file is a clear error naming the file, never its content."""
        path = self.battlelog_session_file
        return None if path is None else read_session_file(path)

    log_level: str = Field("INFO", description="Logging level.")
    log_json: bool = Field(False, description="Log one JSON object per line.")

    @model_validator(mode="after")
    def _timings_fit_together(self) -> Settings:
        """Lease, heartbeat and reaper timings checked against each other at start: a
        combination that cannot work is refused with the values named."""
        problems = [text for broken, text in timing_rules(self) if broken]
        if problems:
            raise ValueError("timings do not fit together: " + "; ".join(problems))
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("BF4PS_CONFIG_FILE")
        if config_file:
            path = Path(config_file)
            if not path.is_file():
                raise SettingsError(f"BF4PS_CONFIG_FILE {path}: no such file")
            try:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
            except tomllib.TOMLDecodeError as exc:
                raise SettingsError(f"BF4PS_CONFIG_FILE {path}: {exc}") from None
        return tuple(sources)

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"



def setting_default(name: str) -> Any:
    """A setting's default as Settings declares it: the one place it is written."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


@dataclass(frozen=True, slots=True)
class SendTimings:
    """A process's own side of a send slot, from its settings: the safety margin it asks the
    egress's pacing to add, how long before its slot it claims, its connect lead, idle poll and
    lease. Collectors and recon pass them to the admission (gates/admission.py); the interactive
    estimate passes them to the server's pacing rule (capacity/eta.py). The egress's pacing
    itself is the database's (gates/gate.py). The defaults are the settings' own."""

    margin: float = setting_default("egress_safety_margin_seconds")
    horizon: float = setting_default("claim_horizon_seconds")
    connect_lead: float = setting_default("battlelog_connect_lead_seconds")  # a request is
    # begun this long before its slot (battlelog/window.py): no slot is sooner after its claim
    idle_poll: float = setting_default("idle_poll_seconds")
    lease_seconds: float = setting_default("lease_seconds")
    seed_interval: float = setting_default("egress_min_interval_seconds")  # what its settings
    # seed a new egress with (fleet/seed.py): the estimate's stand-in while its lane has none

    @classmethod
    def from_settings(cls, s: Settings) -> SendTimings:
        return cls(s.egress_safety_margin_seconds, s.claim_horizon_seconds,
                   s.battlelog_connect_lead_seconds, s.idle_poll_seconds, s.lease_seconds,
                   s.egress_min_interval_seconds)

    @property
    def ahead(self) -> float:
        """How long before its slot a job may be claimed."""
        return max(self.horizon, self.connect_lead)


def timing_rules(s: Settings) -> list[tuple[bool, str]]:
    """(broken, explanation) for each rule the timings must keep."""
    ahead = max(s.claim_horizon_seconds, s.battlelog_connect_lead_seconds)
    return [
        (2 * s.heartbeat_seconds > s.lease_seconds,
         f"BF4PS_HEARTBEAT_SECONDS ({s.heartbeat_seconds:g}) must be at most half of "
         f"BF4PS_LEASE_SECONDS ({s.lease_seconds:g}), so a lease outlives one missed heartbeat"),
        (s.heartbeat_lost_after_seconds <= s.heartbeat_seconds,
         f"BF4PS_HEARTBEAT_LOST_AFTER_SECONDS ({s.heartbeat_lost_after_seconds:g}) must exceed "
         f"BF4PS_HEARTBEAT_SECONDS ({s.heartbeat_seconds:g}), or a collector between two "
         "heartbeats is marked lost"),
        (s.scheduler_tick_seconds >= s.lease_seconds,
         f"BF4PS_SCHEDULER_TICK_SECONDS ({s.scheduler_tick_seconds:g}, the lease reaper's "
         f"period) must be below BF4PS_LEASE_SECONDS ({s.lease_seconds:g})"),
        (ahead >= s.lease_seconds,
         f"a job is claimed up to {ahead:g} s before its slot (BF4PS_CLAIM_HORIZON_SECONDS "
         f"{s.claim_horizon_seconds:g}, BF4PS_BATTLELOG_CONNECT_LEAD_SECONDS "
         f"{s.battlelog_connect_lead_seconds:g}): that must be below BF4PS_LEASE_SECONDS "
         f"({s.lease_seconds:g})"),
    ]


def read_session_file(path: Path) -> str:
    """The Battlelog session id in a file (one line); a clear error naming the file, never its
    content, when it cannot be read or holds no session id."""
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"BF4PS_BATTLELOG_SESSION_FILE {path}: cannot be read "
                         f"({type(exc).__name__})") from None
    if len(value) < 10 or any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"BF4PS_BATTLELOG_SESSION_FILE {path}: not a Battlelog session "
                         "id (one line, at least 10 characters)")
    return value
