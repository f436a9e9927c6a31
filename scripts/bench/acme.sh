#!/usr/bin/env bash
# ACME issuance the whole way: certificates a second, new-order-to-
# certificate latency (p50, p99), server CPU per certificate and RSS, for
# `minica serve --acme` against step-ca v0.30.2 (its ACME provisioner) at 1,
# 10 and 50 concurrent clients, and Pebble v2.10.3 at 1 client (it is a
# test server). Every order is validated for real: http-01 on an IP
# identifier (127.0.0.1) that scripts/bench/acmeload answers on the
# loopback. See docs/performance.md ("## ACME") for the method and the
# last results.
#
#   scripts/bench/acme.sh                 3 rounds of 10 s loads, about 5 minutes (plus building the peers once)
#   BENCH_QUICK=1 scripts/bench/acme.sh   smoke run: one round of 3 s loads
#   BENCH_LONG=100000 scripts/bench/acme.sh   then 10^5 more accounts and 10^5 orders on minica at 50 clients, and its RSS
#
# Settings (environment): BENCH_DURATION (seconds of each load, 10),
# BENCH_ROUNDS (3), BENCH_CLIENTS ("1 10 50"), BENCH_LONG (orders of the
# long minica run, 0: none), BENCH_PORT (first of 7 ports, 18700),
# BENCH_SERVER_CPU (0) and BENCH_LOAD_CPU (1): the server under test runs on
# the first core, the clients (and their http-01 responder) on the second;
# BENCH_MINICA, BENCH_STEPCA, BENCH_PEBBLE (binaries to use instead of
# building them; the peers are built with `go install` outside minica's
# module, CGO_ENABLED=0, into the temporary directory).
#
# The servers keep running across rounds (as a server does), and each
# round alternates which one goes first. minica runs with an EAB binding
# (orders per hour 10^6: the open policy of --acme-no-eab counts every
# account's orders together, 300 an hour); step-ca's ACME provisioner and
# Pebble take accounts without one. Pebble runs with PEBBLE_VA_NOSLEEP=1,
# PEBBLE_AUTHZREUSE=0 (else it hands back valid authorizations without
# validating) and PEBBLE_WFE_NONCEREJECT=0 (else 5% of requests are
# refused badNonce on purpose).
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
set -E
trap 'bench_log "error: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

stepca_version=v0.30.2 pebble_version=v2.10.3
if [ -n "${BENCH_QUICK:-}" ]; then
	dur=${BENCH_DURATION:-3} rounds=${BENCH_ROUNDS:-1}
else
	dur=${BENCH_DURATION:-10} rounds=${BENCH_ROUNDS:-3}
fi
clients=${BENCH_CLIENTS:-1 10 50}
long=${BENCH_LONG:-0}
port0=${BENCH_PORT:-18700}
server_cpu=${BENCH_SERVER_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_DURATION must be between 1 and 999, not \"$dur\""
[[ $rounds =~ ^[1-9]$ ]] || bench_die "BENCH_ROUNDS must be between 1 and 9, not \"$rounds\""
[[ $long =~ ^(0|[1-9][0-9]{0,6})$ ]] || bench_die "BENCH_LONG must be between 0 and 9999999, not \"$long\""
for n in $clients; do [[ $n =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_CLIENTS takes numbers of clients from 1 to 999, not \"$n\""; done

bench_require openssl:openssl taskset:util-linux curl:curl
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica and the peers (see go.mod for the version)"
bench_tmpdir
work=$BENCH_TMP
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

minica_port=$port0 minica_http=$((port0 + 1))
step_port=$((port0 + 2)) step_http=$((port0 + 3))
pebble_port=$((port0 + 4)) pebble_mgmt=$((port0 + 5)) pebble_http=$((port0 + 6))
bench_ports_free "$port0" 7
tck=$(getconf CLK_TCK)

bench_log "building minica and acmeload"
mkdir -p "$work/bin"
if [ -n "${BENCH_MINICA:-}" ]; then cp "$BENCH_MINICA" "$work/bin/minica"; else go build -o "$work/bin/minica" ./cmd/minica; fi
go build -o "$work/bin/acmeload" ./scripts/bench/acmeload
# peer NAME MODULE@VERSION VAR: the peer's binary, from VAR or built with
# go install outside this module; empty when it does not build.
peer() {
	if [ -n "${!3:-}" ]; then
		cp "${!3}" "$work/bin/$1"
	else
		bench_log "building $2 (CGO_ENABLED=0, outside minica's module)"
		(cd "$work" && GOFLAGS=-mod=mod GOBIN="$work/bin" CGO_ENABLED=0 GOWORK=off \
			timeout 1200 go install "$2") >"$work/build-$1.log" 2>&1 ||
			bench_log "$1 did not build, measuring without it: $(tail -3 "$work/build-$1.log")"
	fi
}
peer step-ca "github.com/smallstep/certificates/cmd/step-ca@$stepca_version" BENCH_STEPCA
peer pebble "github.com/letsencrypt/pebble/v2/cmd/pebble@$pebble_version" BENCH_PEBBLE
have() { [ -x "$work/bin/$1" ]; }
servers=(minica)
have step-ca && servers+=(step-ca)

bench_log "minica: a CA, its HTTPS certificate and an EAB binding for 127.0.0.1"
export MINICA_DIR=$work/minica
minica() { "$work/bin/minica" "$@"; }
minica init --cn "Bench CA" --no-password >/dev/null
minica issue server bench-server --dns localhost --ip 127.0.0.1 >/dev/null
minica acme account add bench --ip 127.0.0.1/32 --orders-per-hour 1000000 --accounts 10000000 --json >"$work/eab.json"
eab_kid=$(sed -n 's/.*"key_id":"\([^"]*\)".*/\1/p' "$work/eab.json")
eab_hmac=$(sed -n 's/.*"hmac_key":"\([^"]*\)".*/\1/p' "$work/eab.json")
[ -n "$eab_kid" ] && [ -n "$eab_hmac" ] || bench_die "no EAB key in the output of minica acme account add"
taskset -c "$server_cpu" "$work/bin/minica" serve --listen '' --listen-tls "127.0.0.1:$minica_port" --server-cert bench-server \
	--acme --acme-validate-allow 127.0.0.1/32 --acme-http-port "$minica_http" >/dev/null 2>"$work/minica.log" &
pids+=($!)
pid_minica=$!

if have step-ca; then
	bench_log "step-ca: a root and intermediate (openssl), ca.json with an ACME provisioner"
	d=$work/step
	mkdir -p "$d"
	openssl ecparam -name prime256v1 -genkey -noout -out "$d/root.key"
	openssl req -x509 -new -key "$d/root.key" -subj /CN=Bench-step-root -days 30 -out "$d/root.crt" \
		-addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign
	openssl ecparam -name prime256v1 -genkey -noout -out "$d/int.key"
	openssl req -new -key "$d/int.key" -subj /CN=Bench-step-intermediate -out "$d/int.csr"
	printf '%s\n' basicConstraints=critical,CA:true,pathlen:0 keyUsage=critical,keyCertSign,cRLSign \
		subjectKeyIdentifier=hash authorityKeyIdentifier=keyid >"$d/int.ext"
	openssl x509 -req -in "$d/int.csr" -CA "$d/root.crt" -CAkey "$d/root.key" -CAcreateserial -days 30 \
		-extfile "$d/int.ext" -out "$d/int.crt" 2>/dev/null
	# The database step ca init configures (badgerv2); the default claims
	# (24 h certificates).
	cat >"$d/ca.json" <<-EOF
		{
		  "root": "$d/root.crt",
		  "crt": "$d/int.crt",
		  "key": "$d/int.key",
		  "address": "127.0.0.1:$step_port",
		  "dnsNames": ["127.0.0.1", "localhost"],
		  "logger": {"format": "text"},
		  "db": {"type": "badgerv2", "dataSource": "$d/db"},
		  "authority": {
		    "provisioners": [{"type": "ACME", "name": "acme", "challenges": ["http-01"]}]
		  }
		}
	EOF
	# --acme-http-port (with --insecure) is where it validates http-01.
	taskset -c "$server_cpu" "$work/bin/step-ca" --insecure --acme-http-port "$step_http" "$d/ca.json" \
		>"$work/step-ca.log" 2>&1 &
	pids+=($!)
	pid_step=$!
fi

if have pebble; then
	d=$work/pebble
	mkdir -p "$d"
	crt=$(ls "$MINICA_DIR"/certs/bench-server/*.crt | head -1)
	cat >"$d/pebble.json" <<-EOF
		{
		  "pebble": {
		    "listenAddress": "127.0.0.1:$pebble_port",
		    "managementListenAddress": "127.0.0.1:$pebble_mgmt",
		    "certificate": "$crt",
		    "privateKey": "${crt%.crt}.key",
		    "httpPort": $pebble_http,
		    "tlsPort": $((pebble_http + 1000)),
		    "ocspResponderURL": "",
		    "externalAccountBindingRequired": false,
		    "retryAfter": {"authz": 3, "order": 5},
		    "keyAlgorithm": "ecdsa",
		    "profiles": {"default": {"description": "default", "validityPeriod": 604800}}
		  }
		}
	EOF
	PEBBLE_VA_NOSLEEP=1 PEBBLE_AUTHZREUSE=0 PEBBLE_WFE_NONCEREJECT=0 \
		taskset -c "$server_cpu" "$work/bin/pebble" -config "$d/pebble.json" >"$work/pebble.log" 2>&1 &
	pids+=($!)
	pid_pebble=$!
fi

bench_wait_port "$minica_port" 10
if have step-ca; then bench_wait_port "$step_port" 20; fi
if have pebble; then bench_wait_port "$pebble_port" 20; fi

# dir_of SERVER, ca_of SERVER, http_of SERVER, pid_of SERVER, eab_of SERVER
dir_of() {
	case $1 in
	minica) echo "https://127.0.0.1:$minica_port/acme/directory" ;;
	step-ca) echo "https://127.0.0.1:$step_port/acme/acme/directory" ;;
	pebble) echo "https://127.0.0.1:$pebble_port/dir" ;;
	esac
}
ca_of() {
	case $1 in
	minica | pebble) echo "$MINICA_DIR/ca.crt" ;;
	step-ca) echo "$work/step/root.crt" ;;
	esac
}
http_of() {
	case $1 in minica) echo "$minica_http" ;; step-ca) echo "$step_http" ;; pebble) echo "$pebble_http" ;; esac
}
pid_of() {
	case $1 in minica) echo "$pid_minica" ;; step-ca) echo "$pid_step" ;; pebble) echo "$pid_pebble" ;; esac
}
eab_of() { if [ "$1" = minica ]; then echo "-eab-kid $eab_kid -eab-hmac $eab_hmac"; fi; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# load ROUND SERVER N [ORDERS DURATION]: one load; appends a line to
# acme.tsv: round, server, clients, certificates, errors, wall s, certs/s,
# p50, p99 and max ms, the server's CPU ms a certificate, orders the server
# did not validate (Pebble's reuse), requests a certificate.
: >"$work/acme.tsv"
load() {
	local round=$1 srv=$2 n=$3 orders=${4:-10000000} d=${5:-$dur} more=${6:-0} pid out c0 c1
	pid=$(pid_of "$srv")
	c0=$(cpu_ticks "$pid")
	# shellcheck disable=SC2046
	out=$(taskset -c "$load_cpu" "$work/bin/acmeload" -dir "$(dir_of "$srv")" -ca "$(ca_of "$srv")" \
		-http-port "$(http_of "$srv")" -n "$n" -orders "$orders" -duration "${d}s" -timeout 60s -accounts "$more" \
		$(eab_of "$srv") 2>"$work/acmeload.err") || {
		bench_log "$srv, $n clients: orders failed: $out $(head -5 "$work/acmeload.err")"
	}
	c1=$(cpu_ticks "$pid")
	[ -n "$out" ] || bench_die "$srv, $n clients: acmeload printed nothing: $(cat "$work/acmeload.err")"
	awk -v r="$round" -v s="$srv" -v line="$out" -v dc="$((c1 - c0))" -v tck="$tck" 'BEGIN {
		k = split(line, f, " ")
		for (i = 1; i <= k; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
		cpu = v["certs"] > 0 ? 1000 * dc / tck / v["certs"] : 0
		rq = v["certs"] > 0 ? v["requests"] / v["certs"] : 0
		printf "%s\t%s\t%d\t%d\t%d\t%.3f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%.1f\n", r, s, v["clients"], v["certs"], v["errors"],
			v["wall"], v["rate"], v["p50"], v["p99"], v["max"], cpu, v["reused"], rq }' >>"$work/acme.tsv"
	bench_log "round $round, $srv, $n clients: $(tail -1 "$work/acme.tsv" |
		awk -F '\t' '{ printf "%d certs, %d errors, %.1f/s, p50 %.0f ms, p99 %.0f ms, CPU %.2f ms/cert", $4, $5, $7, $8, $9, $11 }')"
}

for ((r = 1; r <= rounds; r++)); do
	order=("${servers[@]}")
	if ((r % 2 == 0)); then order=($(printf '%s\n' "${servers[@]}" | tac)); fi
	for n in $clients; do
		for srv in "${order[@]}"; do load "$r" "$srv" "$n"; done
		if [ "$n" = 1 ] && have pebble; then load "$r" pebble 1; fi
	done
done

if [ "$long" -gt 0 ]; then
	bench_log "the long run: $long accounts registered, then $long orders, on minica at 50 clients"
	load long minica 50 "$long" 86400 "$long"
fi
rss_minica=$(rss_kib "$pid_minica")
rss_step=$(if have step-ca; then rss_kib "$pid_step"; else echo 0; fi)
orders_minica=$(awk -F '\t' '$2 == "minica" { s += $4 + $5 } END { print s + 0 }' "$work/acme.tsv")
orders_step=$(awk -F '\t' '$2 == "step-ca" { s += $4 + $5 } END { print s + 0 }' "$work/acme.tsv")

# The report: per server and number of clients, the median over the rounds
# of each figure; ratios taken inside each round, their median.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = v[int((NR + 1) / 2)]; if (NR % 2 == 0) m = (v[NR / 2] + v[NR / 2 + 1]) / 2; print m }'; }
col() { # SERVER N COLUMN: the column's values over the rounds
	awk -F '\t' -v s="$1" -v n="$2" -v c="$3" '$1 != "long" && $2 == s && $3 == n { print $c }' "$work/acme.tsv"
}
ratio() { # N COLUMN HOW: per round, step-ca/minica (HOW=up) or minica/step-ca, their median
	awk -F '\t' -v n="$1" -v c="$2" -v how="$3" '$1 != "long" && $3 == n { v[$1, $2] = $c; r[$1] = 1 }
		END { for (k in r) if (((k, "minica") in v) && ((k, "step-ca") in v)) {
			a = v[k, "minica"]; b = v[k, "step-ca"]
			if (how == "up") print (a > 0 ? b / a : 0); else print (b > 0 ? a / b : 0) } }' "$work/acme.tsv" | median
}
echo
bench_machine | grep -v '^tools'
printf 'tools:   %s; step-ca %s; pebble %s (both built with CGO_ENABLED=0)\n' "$(go version | cut -d' ' -f3)" \
	"$(have step-ca && echo "$stepca_version" || echo "(did not build)")" "$(have pebble && echo "$pebble_version" || echo "(did not build)")"
printf 'setup:   %d rounds of %d s loads; server on CPU %s, clients on CPU %s; http-01 on 127.0.0.1, polled every 5 ms\n\n' \
	"$rounds" "$dur" "$server_cpu" "$load_cpu"
printf '%-8s %-8s %8s %8s %8s %8s %8s %12s %9s\n' clients server certs/s "p50 ms" "p99 ms" "max ms" errors "CPU ms/cert" "req/cert"
for n in $clients; do
	for srv in minica step-ca pebble; do
		[ -n "$(col "$srv" "$n" 4)" ] || continue
		printf '%-8s %-8s %8.1f %8.0f %8.0f %8.0f %8d %12s %9.1f\n' "$n" "$srv" "$(col "$srv" "$n" 7 | median)" \
			"$(col "$srv" "$n" 8 | median)" "$(col "$srv" "$n" 9 | median)" "$(col "$srv" "$n" 10 | sort -g | tail -1)" \
			"$(col "$srv" "$n" 5 | awk '{ s += $1 } END { print s + 0 }')" \
			"$(printf '%.2f' "$(col "$srv" "$n" 11 | median)")" "$(col "$srv" "$n" 13 | median)"
	done
done
if [ "$long" -gt 0 ]; then
	awk -F '\t' '$1 == "long" { printf "long     minica   %8.1f %8.0f %8.0f %8.0f %8d %12.2f %9.1f   (%d orders)\n", $7, $8, $9, $10, $5, $11, $13, $4 + $5 }' "$work/acme.tsv"
fi
reused=$(awk -F '\t' '{ s += $12 } END { print s + 0 }' "$work/acme.tsv")
[ "$reused" = 0 ] || printf '(%d Pebble orders found a valid authorization already, not validated: left out)\n' "$reused"
printf '\nRSS at the end: minica serve %.1f MiB after %d orders; step-ca %.1f MiB after %d orders\n' \
	"$(awk -v k="$rss_minica" 'BEGIN { print k / 1024 }')" "$orders_minica" "$(awk -v k="$rss_step" 'BEGIN { print k / 1024 }')" "$orders_step"
errors_max=$(awk -F '\t' '$2 == "minica" && $3 == 50 { if ($5 > e) e = $5 } END { print e + 0 }' "$work/acme.tsv")
stall=$(awk -F '\t' '$2 == "minica" && $3 == 50 { if ($10 > m) m = $10 } END { print m + 0 }' "$work/acme.tsv")
if have step-ca; then
	printf '\n%-8s %18s %18s %18s\n' clients "certs/s m/s" "CPU/cert s/m" "p99 s/m"
	for n in $clients; do
		printf '%-8s %17.2fx %17.2fx %17.2fx\n' "$n" "$(ratio "$n" 7 down)" "$(ratio "$n" 11 up)" "$(ratio "$n" 9 up)"
	done
	printf '(m: minica, s: step-ca; every ratio above 1 is minica ahead)\n'
	printf '\ntargets: no error or stall at 50 clients: %s (%d errors, slowest order %.0f ms)\n' \
		"$([ "$errors_max" = 0 ] && [ "$(bench_verdict "$stall" "<=" 10000)" = met ] && echo met || echo MISSED)" "$errors_max" "$stall"
	printf '         CPU per certificate at most 1/3 of step-ca'"'"'s (10 clients): %s\n' "$(bench_verdict "$(ratio 10 11 up)" ">=" 3)"
	printf '         certs/s at least 2x step-ca'"'"'s at 10 clients: %s\n' "$(bench_verdict "$(ratio 10 7 down)" ">=" 2)"
	printf '         p99 at or below step-ca'"'"'s (10 clients): %s\n' "$(bench_verdict "$(ratio 10 9 up)" ">=" 1)"
fi
if [ "$long" -ge 100000 ]; then
	printf '         serve RSS under 256 MiB with 10^5 accounts and 10^5 orders in the store: %s\n' "$(bench_verdict "$rss_minica" "<=" 262143)"
else
	printf '         serve RSS under 256 MiB with 10^5 accounts and 10^5 orders: not run (BENCH_LONG=100000)\n'
fi
