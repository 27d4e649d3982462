#!/bin/sh
# The postgres image's first start (docker-entrypoint-initdb.d), as its superuser: the BF4PS
# schema owner and its database (docs/operations.md, "First install", step 1). The owner has
# CREATEROLE (the migrations make the group roles) and nothing more: never a superuser.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v owner_password="$BF4PS_OWNER_PASSWORD" <<'SQL'
CREATE ROLE bf4ps LOGIN CREATEROLE NOSUPERUSER NOCREATEDB PASSWORD :'owner_password';
CREATE DATABASE bf4ps OWNER bf4ps;
SQL
