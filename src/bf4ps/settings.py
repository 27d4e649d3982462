"""The one settings object. Built in main() from BF4PS_* variables and an optional TOML file.

Run-time scheduling policy (weights, watermarks, freshness, backoff) is NOT here: it lives in the
database policy table so it can change without a restart (see scheduler/policy.py).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, SecretStr, field_validator
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
    db_pool_max: int = Field(
        4, ge=1, description="Connections of the website's pool, per web process (collectors "
        "use 3 each, plus one for heartbeats).")

    @field_validator("database_url", "bf4sw_database_url")
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
    battlelog_timeout_seconds: float = Field(30.0, gt=0, description="Per-request timeout.")
    battlelog_connect_lead_seconds: float = Field(
        1.0, ge=0, le=10, description="A request is begun this long before its slot, so DNS, "
        "TCP and TLS are done by then; its headers wait for the slot.")

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

    # --- rate gates ---
    egress_min_interval_seconds: float = Field(
        5.0, gt=0, description="Default minimum spacing of requests per egress."
    )
    egress_safety_margin_seconds: float = Field(
        0.05, ge=0, description="Added to every spacing so network jitter cannot break a limit."
    )
    egress_window_requests: int | None = Field(
        None, ge=1, description="Optional: at most N requests per egress per window."
    )
    egress_window_seconds: float = Field(60.0, gt=0, description="Per-egress window length.")
    fleet_budget_requests: int | None = Field(
        None, ge=1, description="Fleet budget: N physical requests per rolling window (off)."
    )
    fleet_budget_window_seconds: float = Field(3600.0, gt=0, description="Fleet window length.")
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
        60.0, gt=0, description="Activity decay and due-marking period.")

    # --- website ---
    web_host: str = Field("127.0.0.1", description="Website bind address.")
    web_port: int = Field(8080, ge=1, le=65535, description="Website port.")
    ops_username: str | None = Field(None, description="Operator console user.")
    ops_password: SecretStr | None = Field(None, description="Operator console password.")
    ops_local_demo: bool = Field(
        False, description="Serve /ops without credentials (local demo only)."
    )
    secret_key: SecretStr | None = Field(None, description="CSRF signing key (random if unset).")
    metrics_token: SecretStr | None = Field(
        None, description="When set, /metrics requires `Authorization: Bearer` with it.")
    submit_limit_requests: int = Field(
        10, ge=1, description="New lookup requests one client may submit per limit window.")
    submit_limit_window_seconds: float = Field(
        60.0, gt=0, description="The submission limit's window.")

    log_level: str = Field("INFO", description="Logging level.")
    log_json: bool = Field(False, description="Log one JSON object per line.")

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
