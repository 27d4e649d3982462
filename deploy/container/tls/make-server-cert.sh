#!/bin/sh
# A self-signed CA and the compose PostgreSQL's certificate, in this folder: server.crt lists
# "postgres" (the services' host name inside compose) and the names given (the name the BF4SW
# nodes' collectors use in their URL, e.g. db.example.internal); ca.crt goes to every collector
# host as /etc/bf4ps/db-ca.crt (docs/operations.md, "TLS to PostgreSQL"). Keep ca.key off the
# server. With a CA of your own, put its server.crt/server.key here instead.
#   ./make-server-cert.sh db.example.internal [more names...]
set -eu
cd "$(dirname "$0")"
san="DNS:postgres"
for name in "$@"; do san="$san,DNS:$name"; done
[ -f ca.key ] || openssl req -x509 -newkey rsa:3072 -nodes -days 3650 \
    -subj "/CN=BF4PS database CA" -keyout ca.key -out ca.crt
openssl req -newkey rsa:3072 -nodes -subj "/CN=${1:-postgres}" -keyout server.key -out server.csr
printf 'subjectAltName=%s\n' "$san" > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile server.ext -out server.crt
rm -f server.csr server.ext
chmod 0600 server.key
# the postgres image's server runs as uid 999 and refuses a key others can read
chown 999:999 server.key server.crt 2>/dev/null || echo "as root: chown 999:999 server.key server.crt"
