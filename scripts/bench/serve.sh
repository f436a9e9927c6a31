#!/usr/bin/env bash
# `minica serve` under load, in one run, against the usual peers: its CRL
# endpoint with a BENCH_ENTRIES-entry CRL (default 100,000) against nginx
# serving the same file statically (304 and 200 responses a second, wrk,
# keep-alive), its OCSP responder against `openssl ocsp -index index.txt
# -port` on the same certificates (responses a second for a good and a
# revoked serial, and the latency at a fixed 200 requests a second), and
# serve's peak RSS with a BENCH_BIG-entry CRL (default 1,000,000), serving
# it as DER and PEM, across a revocation that makes it load a new one. See docs/performance.md
# ("## serve: CRL endpoint and OCSP") for the method and the last results.
#
#   scripts/bench/serve.sh              full run (about 6 minutes, most of it the 10^6-entry set-up)
#   BENCH_QUICK=1 scripts/bench/serve.sh   smoke run: small CRLs, 2 s runs
#
# Settings (environment): BENCH_ENTRIES, BENCH_BIG (0 skips the RSS part),
# BENCH_DURATION (seconds of each wrk run, 10), BENCH_CONNS (wrk
# connections, 16), BENCH_PORT (first of 4 ports, 18700), BENCH_SERVER_CPU
# (0) and BENCH_LOAD_CPU (1): the server under test runs on the first core,
# wrk and the rate client on the second; BENCH_MINICA (a minica binary to
# use instead of building ./cmd/minica).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD/scripts/bench/serve

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh

if [ -n "${BENCH_QUICK:-}" ]; then
	entries=${BENCH_ENTRIES:-2000} big=${BENCH_BIG:-20000} dur=${BENCH_DURATION:-2} rate_dur=3 ab_n=2000
else
	entries=${BENCH_ENTRIES:-100000} big=${BENCH_BIG:-1000000} dur=${BENCH_DURATION:-10} rate_dur=10 ab_n=20000
fi
conns=${BENCH_CONNS:-16}
port0=${BENCH_PORT:-18700}
server_cpu=${BENCH_SERVER_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
[[ $entries =~ ^[1-9][0-9]{0,7}$ ]] || bench_die "BENCH_ENTRIES must be between 1 and 99999999, not \"$entries\""
[[ $big =~ ^(0|[1-9][0-9]{0,7})$ ]] || bench_die "BENCH_BIG must be between 0 and 99999999, not \"$big\""
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_DURATION must be between 1 and 999, not \"$dur\""

bench_require nginx:nginx wrk:wrk ab:apache2-utils curl:curl openssl:openssl taskset:util-linux
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica (see go.mod for the version)"
bench_tmpdir
work=$BENCH_TMP
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	[ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

serve_port=$port0 nginx_port=$((port0 + 1)) ocsp_port=$((port0 + 2)) big_port=$((port0 + 3))
bench_ports_free "$port0" $((4))
wait_port() { bench_wait_port "$1" 30; }

bench_log "building"
if [ -n "${BENCH_MINICA:-}" ]; then cp "$BENCH_MINICA" "$work/minica"; else go build -o "$work/minica" ./cmd/minica; fi
go build -o "$work/fill" ./scripts/bench/fill
go build -o "$work/rate" ./scripts/bench/serve/rate
minica() { "$work/minica" "$@"; }

# --- CA: alice valid, bob revoked, plus ENTRIES synthetic revocations -------
bench_log "CA with a $entries-entry CRL (and its openssl index.txt)"
export MINICA_DIR=$work/ca
minica init --cn "Bench CA" --no-password >/dev/null
minica issue client alice --email alice@example.com >/dev/null
minica issue client bob --email bob@example.com >/dev/null
minica revoke bob --reason keyCompromise >/dev/null
"$work/fill" -dir "$MINICA_DIR" -n "$entries" -revoked "$entries" -index "$work/index.txt" >&2
minica crl >/dev/null
cert_of() { ls "$MINICA_DIR"/certs/"$1"/*.crt | head -1; }
ca=$MINICA_DIR/ca.crt alice=$(cert_of alice) bob=$(cert_of bob)
index_line() { # STATUS CERT [REVOCATION]: the certificate's line of index.txt
	local serial exp
	serial=$(openssl x509 -in "$2" -noout -serial | cut -d= -f2)
	exp=$(date -u -d "$(openssl x509 -in "$2" -noout -enddate | cut -d= -f2)" +%y%m%d%H%M%SZ)
	printf '%s\t%s\t%s\t%s\tunknown\t/CN=%s\n' "$1" "$exp" "${3:-}" "$serial" "$(basename "$(dirname "$2")")"
}
{
	index_line V "$alice"
	index_line R "$bob" "$(date -u +%y%m%d%H%M%SZ),keyCompromise"
} >>"$work/index.txt"
crl_bytes=$(stat -c %s "$MINICA_DIR/crl.der")
listed=$(openssl crl -inform DER -in "$MINICA_DIR/crl.der" -noout -text | grep -c 'Serial Number:')
[ "$listed" -gt "$entries" ] || bench_die "the CRL lists $listed entries"
bench_log "CRL: $listed entries, $crl_bytes bytes DER"

# --- servers on the server core ---------------------------------------------
taskset -c "$server_cpu" "$work/minica" serve --listen "127.0.0.1:$serve_port" >/dev/null 2>"$work/serve.log" &
pids+=($!)
mkdir -p "$work/nginx/www" "$work/nginx/tmp"
cp "$MINICA_DIR/crl.der" "$work/nginx/www/crl.der"
cat >"$work/nginx/nginx.conf" <<-EOF
	worker_processes 1;
	pid $work/nginx/nginx.pid;
	error_log $work/nginx/error.log warn;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $work/nginx/tmp;
		keepalive_requests 1000000;
		types { application/pkix-crl der; }
		server {
			listen 127.0.0.1:$nginx_port;
			root $work/nginx/www;
		}
	}
EOF
chmod -R a+rX "$work/nginx/www"
chmod a+x "$work"
taskset -c "$server_cpu" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log"
wait_port "$serve_port"
wait_port "$nginx_port"
# openssl ocsp signs with the CA key itself, minica with its delegated
# responder: one ECDSA P-256 signature either way. openssl ocsp exits at a
# request it cannot read (a port probe, a connection a client dropped), so
# it is started afresh before each use and never probed.
ocsp_pid=
start_ocsp() {
	[ -n "$ocsp_pid" ] && { kill "$ocsp_pid" 2>/dev/null; wait "$ocsp_pid" 2>/dev/null || true; }
	: >"$work/openssl-ocsp.log"
	taskset -c "$server_cpu" openssl ocsp -index "$work/index.txt" -port "$ocsp_port" -CA "$ca" \
		-rsigner "$ca" -rkey "$MINICA_DIR/ca.key" -ndays 1 2>"$work/openssl-ocsp.log" >/dev/null &
	ocsp_pid=$!
	pids+=("$ocsp_pid")
	local i
	for i in $(seq 100); do
		grep -q 'waiting for OCSP client connections' "$work/openssl-ocsp.log" && return 0
		sleep 0.1
	done
	bench_die "openssl ocsp did not start: $(cat "$work/openssl-ocsp.log")"
}
start_ocsp

# --- checks -----------------------------------------------------------------
serve_url=http://127.0.0.1:$serve_port nginx_url=http://127.0.0.1:$nginx_port
cmp <(curl -sf "$serve_url/crl.der") "$MINICA_DIR/crl.der" || bench_die "serve's /crl.der is not the CRL"
cmp <(curl -sf "$nginx_url/crl.der") "$MINICA_DIR/crl.der" || bench_die "nginx's /crl.der is not the CRL"
etag_of() { curl -sfI "$1" | awk -F': ' 'tolower($1) == "etag" { sub(/\r$/, "", $2); print $2 }'; }
serve_etag=$(etag_of "$serve_url/crl.der") nginx_etag=$(etag_of "$nginx_url/crl.der")
for pair in "$serve_url|$serve_etag" "$nginx_url|$nginx_etag"; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: ${pair#*|}" "${pair%|*}/crl.der")
	[ "$code" = 304 ] || bench_die "${pair%|*}: If-None-Match answered $code, not 304"
done
for who in alice bob; do
	openssl ocsp -issuer "$ca" -cert "$(cert_of $who)" -no_nonce -reqout "$work/$who.req" >/dev/null 2>&1
done
ocsp_check() { # URL CERT WANT
	local out
	out=$(openssl ocsp -issuer "$ca" -cert "$2" -url "$1" -CAfile "$ca" -no_nonce 2>&1) || true
	grep -q ": $3\$" <<<"$out" || bench_die "$1 on $(basename "$2"): not $3: $out"
}
for url in "$serve_url/ocsp" "http://127.0.0.1:$ocsp_port"; do
	ocsp_check "$url" "$alice" good
	ocsp_check "$url" "$bob" revoked
done

# --- load -------------------------------------------------------------------
to_ms() { # wrk latency such as 812.00us, 3.41ms, 1.02s
	awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'
}
# load KEY URL [wrk args]: wrk on the load core; appends KEY, requests/s,
# p99 ms and errors to results.tsv.
load() {
	local key=$1 url=$2 out rps p99 errors
	shift 2
	out=$(taskset -c "$load_cpu" wrk -t1 -c"$conns" -d"${dur}s" --latency "$@" "$url") || bench_die "$key: wrk failed"
	echo "$out" >"$work/$key.wrk"
	rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")
	errors=$(awk '/Non-2xx or 3xx/ { e += $NF } /Socket errors/ { gsub(/[^0-9 ]/, " "); for (i = 1; i <= NF; i++) e += $i } END { print e + 0 }' <<<"$out")
	printf '%s\t%s\t%s\t%s\n' "$key" "$rps" "$p99" "$errors" >>"$work/load.tsv"
	bench_log "$key: $rps req/s, p99 $p99 ms, $errors errors"
}
: >"$work/load.tsv"
bench_log "wrk, ${dur}s x $conns connections each"
load crl304-serve "$serve_url/crl.der" -H "If-None-Match: $serve_etag"
load crl304-nginx "$nginx_url/crl.der" -H "If-None-Match: $nginx_etag"
load crl200-serve "$serve_url/crl.der"
load crl200-nginx "$nginx_url/crl.der"
OCSP_REQ=$work/alice.req load ocsp-good-serve "$serve_url/ocsp" -s "$here/ocsp.lua"
OCSP_REQ=$work/bob.req load ocsp-revoked-serve "$serve_url/ocsp" -s "$here/ocsp.lua"
# openssl ocsp answers one connection at a time and not over keep-alive:
# ab, a new connection for every request, on both.
# ab_load KEY URL REQ: appends KEY, requests/s, p99 ms and errors (ab's
# "Length" failures are not errors: every OCSP response differs).
ab_load() {
	local out rps p99 errors
	[[ $1 == *openssl ]] && start_ocsp
	out=$(taskset -c "$load_cpu" ab -q -n "$ab_n" -c "$conns" -p "$3" -T application/ocsp-request "$2" 2>&1) ||
		bench_die "$1: ab failed: $out"
	echo "$out" >"$work/$1.ab"
	rps=$(awk '/^Requests per second:/ { print $4 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	errors=$(awk '/^Failed requests:/ { getline; gsub(/[(),]/, " "); print $2 + $4 + $8 } /^Non-2xx/ { print $3 }' <<<"$out" | awk '{ e += $1 } END { print e + 0 }')
	printf '%s\t%s\t%s\t%s\n' "$1" "$rps" "$p99" "$errors" >>"$work/load.tsv"
	bench_log "$1: $rps req/s, p99 $p99 ms, $errors errors"
}
bench_log "ab, $ab_n OCSP requests, $conns at a time, a connection each"
ab_load ab-good-serve "$serve_url/ocsp" "$work/alice.req"
ab_load ab-revoked-serve "$serve_url/ocsp" "$work/bob.req"
ab_load ab-good-openssl "http://127.0.0.1:$ocsp_port/" "$work/alice.req"
ab_load ab-revoked-openssl "http://127.0.0.1:$ocsp_port/" "$work/bob.req"
bench_log "fixed rate: 200 OCSP requests a second for ${rate_dur}s"
: >"$work/rate.tsv"
for spec in "serve-good|$serve_url/ocsp|alice" "serve-revoked|$serve_url/ocsp|bob" "openssl-good|http://127.0.0.1:$ocsp_port/|alice"; do
	IFS='|' read -r key url who <<<"$spec"
	close=
	[[ $key == openssl-* ]] && close=-close && start_ocsp
	printf '%s\t%s\n' "$key" "$(taskset -c "$load_cpu" "$work/rate" -body "$work/$who.req" -rate 200 -d "${rate_dur}s" $close "$url")" >>"$work/rate.tsv"
done
ocsp_check "$serve_url/ocsp" "$bob" revoked
start_ocsp
ocsp_check "http://127.0.0.1:$ocsp_port" "$alice" good

# --- peak RSS with a BIG-entry CRL ------------------------------------------
rss_line=
if [ "$big" -gt 0 ]; then
	bench_log "peak RSS: a CA with a $big-entry CRL (set-up)"
	bigdir=$work/big
	minica --dir "$bigdir" init --cn "Bench Big" --no-password >/dev/null
	"$work/fill" -dir "$bigdir" -n "$big" -revoked "$big" >&2
	minica --dir "$bigdir" issue client carol >/dev/null
	minica --dir "$bigdir" crl >/dev/null
	big_bytes=$(stat -c %s "$bigdir/crl.der")
	taskset -c "$server_cpu" "$work/minica" --dir "$bigdir" serve --listen "127.0.0.1:$big_port" >/dev/null 2>"$work/serve-big.log" &
	big_pid=$!
	pids+=("$big_pid")
	wait_port "$big_port"
	big_url=http://127.0.0.1:$big_port
	cmp <(curl -sf "$big_url/crl.der") "$bigdir/crl.der" || bench_die "serve's big /crl.der is not the CRL"
	taskset -c "$load_cpu" wrk -t1 -c"$conns" -d2s "$big_url/crl.der" >/dev/null
	curl -sf -o /dev/null "$big_url/crl.pem"
	openssl ocsp -issuer "$bigdir/ca.crt" -cert "$(ls "$bigdir"/certs/carol/*.crt)" -url "$big_url/ocsp" -CAfile "$bigdir/ca.crt" >/dev/null 2>&1
	# A revocation: serve loads the new CRL while the old one is still served.
	minica --dir "$bigdir" revoke carol >/dev/null
	for i in $(seq 300); do
		grep -q 'crl-loaded' <(tail -n +2 "$work/serve-big.log") && break
		sleep 0.1
	done
	curl -s -H 'Prefer: wait=1' -H "If-None-Match: $(etag_of "$big_url/crl.der")" -o /dev/null "$big_url/crl.der"
	curl -sf -o /dev/null "$big_url/crl.pem"
	taskset -c "$load_cpu" wrk -t1 -c"$conns" -d2s "$big_url/crl.der" >/dev/null
	taskset -c "$load_cpu" wrk -t1 -c4 -d2s "$big_url/crl.pem" >/dev/null
	big_rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/$big_pid/status")
	rss_line=$(printf '%-52s %8.1f MiB   target < 256 MiB: %s' "serve peak RSS, $big-entry CRL ($((big_bytes / 1048576)) MiB DER)" \
		"$(awk -v r="$big_rss" 'BEGIN { print r / 1024 }')" "$(bench_verdict "$big_rss" "<=" 262143)")
fi
serve_rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/${pids[0]}/status")

# --- report -----------------------------------------------------------------
get() { awk -F '\t' -v k="$1" -v c="$2" '$1 == k { print $c }' "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
bench_machine | grep -v '^tools'
printf 'setup:   CRL of %d entries (%d KiB DER); wrk -t1 -c%d -d%ds, keep-alive; servers on core %s, load on core %s\n\n' \
	"$listed" "$((crl_bytes / 1024))" "$conns" "$dur" "$server_cpu" "$load_cpu"
printf '%-34s %12s %10s %8s   %s\n' "load" "req/s" "p99 ms" "errors" "serve / peer"
row() { # LABEL KEY [PEERKEY]
	local r
	r=$([ -n "${3:-}" ] && ratio "$(get "$2" 2 "$work/load.tsv")" "$(get "$3" 2 "$work/load.tsv")" || true)
	printf '%-34s %12s %10s %8s   %s\n' "$1" "$(get "$2" 2 "$work/load.tsv")" "$(get "$2" 3 "$work/load.tsv")" "$(get "$2" 4 "$work/load.tsv")" "${r:+${r}x}"
}
row "serve /crl.der 304" crl304-serve crl304-nginx
row "nginx static crl.der 304" crl304-nginx
row "serve /crl.der 200" crl200-serve crl200-nginx
row "nginx static crl.der 200" crl200-nginx
row "serve OCSP good, keep-alive" ocsp-good-serve ab-good-openssl
row "serve OCSP revoked, keep-alive" ocsp-revoked-serve ab-revoked-openssl
row "serve OCSP good, ab" ab-good-serve ab-good-openssl
row "serve OCSP revoked, ab" ab-revoked-serve ab-revoked-openssl
row "openssl ocsp good, ab" ab-good-openssl
row "openssl ocsp revoked, ab" ab-revoked-openssl
printf '\n%-34s %9s %8s %9s %9s %9s\n' "200 OCSP requests/s, ${rate_dur}s" requests failed "p50 ms" "p99 ms" "max ms"
for key in serve-good serve-revoked openssl-good; do
	printf '%-34s %9s %8s %9s %9s %9s\n' "$key" "$(get "$key" 2 "$work/rate.tsv")" "$(get "$key" 3 "$work/rate.tsv")" \
		"$(get "$key" 4 "$work/rate.tsv")" "$(get "$key" 5 "$work/rate.tsv")" "$(get "$key" 6 "$work/rate.tsv")"
done
echo
printf '%-52s %8.1f MiB\n' "serve peak RSS, $listed-entry CRL, after the load" "$(awk -v r="$serve_rss" 'BEGIN { print r / 1024 }')"
[ -n "$rss_line" ] && echo "$rss_line"
echo
c304=$(ratio "$(get crl304-serve 2 "$work/load.tsv")" "$(get crl304-nginx 2 "$work/load.tsv")")
c200=$(ratio "$(get crl200-serve 2 "$work/load.tsv")" "$(get crl200-nginx 2 "$work/load.tsv")")
og=$(ratio "$(get ocsp-good-serve 2 "$work/load.tsv")" "$(get ab-good-openssl 2 "$work/load.tsv")")
orv=$(ratio "$(get ocsp-revoked-serve 2 "$work/load.tsv")" "$(get ab-revoked-openssl 2 "$work/load.tsv")")
p99=$(awk -F '\t' '$1 ~ /^serve-/ && $5 > m { m = $5 } END { print m + 0 }' "$work/rate.tsv")
printf 'targets: 304 >= half of nginx: %s; 200 >= half of nginx: %s; OCSP >= 10x openssl: good %s, revoked %s; OCSP p99 at 200/s < 5 ms: %s\n' \
	"$(bench_verdict "$c304" ">=" 0.5)" "$(bench_verdict "$c200" ">=" 0.5)" "$(bench_verdict "$og" ">=" 10)" \
	"$(bench_verdict "$orv" ">=" 10)" "$(bench_verdict "$p99" "<=" 4.999)"
