#!/usr/bin/env bash
# Start-up of one minica process, against a bare Go program built in the
# same run with the same flags (scripts/build.sh: static, trimmed): the
# CPU and wall time of `minica version` and of a hello-world, run in
# turn (scripts/bench/startup), as medians of the ratios of runs that
# followed each other. Then per-process issuance, the recipe minica
# replaces (one command per certificate): `minica issue client NAME` (a
# new ECDSA P-256 key, the certificate, its record) against cfssl's
# `gencert` (the same, with no database: it prints key and certificate
# as JSON) when cfssl is on PATH or in CFSSL, else against `openssl req
# -x509 -CA` (a new key and a certificate signed by the same CA).
#
# Usage: scripts/bench/startup.sh
#
#	BENCH_RUNS     runs of each command (default 200)
#	BENCH_ISSUES   certificates each issuer makes (default 100)
#	CFSSL          the cfssl binary (default: cfssl on PATH), e.g. built
#	               with GOBIN=DIR go install github.com/cloudflare/cfssl/cmd/cfssl@v1.6.5
#
# Between the two, the floor: a hello-world that links what any program
# serving HTTPS and reading X.509 links (net/http, crypto/tls,
# crypto/x509), against the bare one, so the targets can be read against
# what the standard library alone costs at start.
#
# Targets (issue 30, point 8): `minica version` within 1.5x the bare Go
# program's start; per-process issuance at or below cfssl's.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${BENCH_RUNS:-200} issues=${BENCH_ISSUES:-100}
command -v openssl >/dev/null || { echo "startup.sh: openssl not found" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/minica-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

bash "$repo/scripts/build.sh" "$work/minica"
mkdir "$work/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' >"$work/hello/main.go"
printf 'module hello\n\ngo 1.26\n' >"$work/hello/go.mod"
(cd "$work/hello" && CGO_ENABLED=0 go build -trimpath -o "$work/hello-bin" .)
mkdir "$work/floor"
printf 'package main\n\nimport (\n\t_ "crypto/tls"\n\t_ "crypto/x509"\n\t"fmt"\n\t_ "net/http"\n)\n\nfunc main() { fmt.Println("hello") }\n' >"$work/floor/main.go"
printf 'module floor\n\ngo 1.26\n' >"$work/floor/go.mod"
(cd "$work/floor" && CGO_ENABLED=0 go build -trimpath -o "$work/floor-bin" .)
(cd "$repo" && go build -o "$work/startup" ./scripts/bench/startup)

echo "== start-up: minica version (A) against a bare Go program (B), $runs runs each"
"$work/startup" -n "$runs" -a "$work/minica version" -b "$work/hello-bin"
echo "== the floor: net/http, crypto/tls and crypto/x509 linked (A) against the bare program (B), $runs runs each"
"$work/startup" -n "$runs" -a "$work/floor-bin" -b "$work/hello-bin"

export MINICA_DIR=$work/ca
"$work/minica" init --cn "Bench CA" --no-password >/dev/null
cfssl=${CFSSL:-$(command -v cfssl || true)}
if [[ -n $cfssl ]]; then
	cat >"$work/csr.json" <<'JSON'
{"CN": "client", "key": {"algo": "ecdsa", "size": 256}}
JSON
	cat >"$work/cfssl.json" <<'JSON'
{"signing": {"default": {"expiry": "8760h", "usages": ["digital signature", "client auth"]}}}
JSON
	peer="$cfssl gencert -loglevel 5 -ca $MINICA_DIR/ca.crt -ca-key $MINICA_DIR/ca.key -config $work/cfssl.json $work/csr.json"
	name="cfssl gencert"
else
	peer="openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=c{} -CA $MINICA_DIR/ca.crt -CAkey $MINICA_DIR/ca.key -keyout $work/k{}.pem -out $work/c{}.pem -days 365"
	name="openssl req -x509 -CA (cfssl not found)"
fi
echo "== per-process issuance: minica issue client (A) against $name (B), $issues each"
"$work/startup" -n "$issues" -a "$work/minica issue client c{} --email c{}@example.com" -b "$peer"
