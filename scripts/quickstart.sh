#!/usr/bin/env bash
# minica's main job, end to end, in a fresh demo CA directory (never
# ~/.minica): create a CA, issue a server and a client certificate, run
# `minica proxy` in front of `minica echo` on 127.0.0.1, send a request with
# the client certificate and show the identity headers the app got, revoke
# the client and show the next request refused, then stop both. Needs only
# Go; scripts/quickstart/main.go drives the freshly built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# A first build fetches and compiles every dependency (about 2 minutes) and
# prints nothing: say so, so that the wait does not look like a hang.
echo "quickstart: building minica (the first build takes about 2 minutes; later ones seconds)..." >&2
bash scripts/build.sh "$bin/minica"
go run ./scripts/quickstart "$bin/minica"
