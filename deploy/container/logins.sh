#!/bin/sh
# The compose file's `logins` service: as the schema owner (PG* variables), one login per
# process kind of the central node, each with its group role (deploy/sql/bf4ps-login.sql,
# the operator step of docs/operations.md, "Database roles"). Idempotent: passwords follow .env.
set -eu
SQL="${BF4PS_LOGIN_SQL:-/opt/bf4ps/bf4ps-login.sql}"
login() {  # login role password
    BF4PS_LOGIN_PASSWORD="$3" psql -X -q -v login="$1" -v role="$2" -f "$SQL"
}
login central_scheduler bf4ps_scheduler "$BF4PS_SCHEDULER_DB_PASSWORD"
login central_web bf4ps_web "$BF4PS_WEB_DB_PASSWORD"
login web_collector bf4ps_collector "$BF4PS_COLLECTOR_DB_PASSWORD"
