#!/usr/bin/env bash
# minica's main job, end to end, in a fresh demo CA directory: create a CA,
# issue a server and a client certificate, list and show them, and check the
# client certificate with openssl when it is installed. Needs only Go.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
bash scripts/build.sh "$bin/minica"
export MINICA_DIR=${MINICA_DIR:-$(mktemp -d)/demo-ca}
minica() { "$bin/minica" "$@"; }

minica init --cn "Demo Internal CA" --org Demo --no-password
minica issue server app.example.com --ip 127.0.0.1
minica issue client simon --email simon@example.com
minica list
minica show simon
if command -v openssl >/dev/null; then
	cert=$(ls "$MINICA_DIR"/certs/simon/*.crt)
	openssl verify -CAfile "$MINICA_DIR/ca.crt" -purpose sslclient "$cert"
fi
minica check
echo "demo CA in $MINICA_DIR; minica binary in $bin"
