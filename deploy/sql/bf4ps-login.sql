-- One login role for one BF4PS process kind, made (or its password changed) by the schema
-- owner: the operator step of docs/operations.md, "Database roles", and the compose file's
-- one-shot `logins` service. Idempotent: run it again to rotate the password.
--
--   BF4PS_LOGIN_PASSWORD='…' psql "$OWNER_URL" -v login=mak_collector -v role=bf4ps_collector \
--       -f /opt/bf4ps/deploy/sql/bf4ps-login.sql
--
-- The password comes from the environment (never the command line, which `ps` shows); the
-- group role is one of the four of migration 0013 (run `bf4ps db upgrade` first).
\set ON_ERROR_STOP on
\getenv password BF4PS_LOGIN_PASSWORD
\if :{?password}
\else
\echo 'set BF4PS_LOGIN_PASSWORD to the new login''s password'
\quit
\endif
SELECT :'role' IN ('bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web', 'bf4ps_operator')
    AS known_role \gset
\if :known_role
\else
\echo 'role must be one of bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator'
\quit
\endif
SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', :'login')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'login') \gexec
ALTER ROLE :"login" LOGIN PASSWORD :'password';
GRANT :"role" TO :"login";
\echo login :login in :role
