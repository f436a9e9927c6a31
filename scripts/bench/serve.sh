#!/usr/bin/env bash
# `minica serve` under load, in one run, against the usual peers: its CRL
# endpoint with a BENCH_ENTRIES-entry CRL (default 100,000) against nginx
# serving the same file statically (304 and 200 responses a second, wrk,
# keep-alive), its OCSP responder (on the main listener and on the
# dedicated --listen-ocsp listener) against `openssl ocsp -index index.txt
# -port` on the same certificates, one process and -multi (responses a
# second, server and client CPU per response for a good and a revoked
# serial, then the latency at a fixed 200 requests a second, each
# BENCH_RUNS times), and serve's peak RSS with a
# BENCH_BIG-entry CRL (default 1,000,000), serving it as DER and PEM, across
# a revocation that makes it load a new one. See docs/performance.md
# ("## serve: CRL endpoint and OCSP") for the method and the last results.
#
#   scripts/bench/serve.sh                  full run (about 12 minutes, a third of it the 10^6-entry set-up)
#   BENCH_PARTS=ocsp scripts/bench/serve.sh the OCSP part only (about 6 minutes)
#   BENCH_QUICK=1 scripts/bench/serve.sh    smoke run: small CRLs, 2 s runs
#
# Settings (environment): BENCH_PARTS (any of crl, ocsp and rss; all by
# default), BENCH_ENTRIES, BENCH_BIG (0 skips the RSS part), BENCH_DURATION
# (seconds of each load, 10), BENCH_RUNS (rounds of the OCSP loads, 3),
# BENCH_CONNS (clients, 16), BENCH_PORT (first of 5 ports, 18700),
# BENCH_SERVER_CPU (0) and BENCH_LOAD_CPU (1): the server under test runs on
# the first core, wrk and the OCSP client on the second; BENCH_OSSL_MULTI
# (4: the -multi of the second openssl ocsp run, its processes on the same
# core); BENCH_MINICA (a minica binary to use instead of building
# ./cmd/minica).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD/scripts/bench/serve

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
# A command that fails stops the script (set -e): say which, in functions too.
set -E
trap 'bench_log "error: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

if [ -n "${BENCH_QUICK:-}" ]; then
	entries=${BENCH_ENTRIES:-2000} big=${BENCH_BIG:-20000} dur=${BENCH_DURATION:-2} runs=${BENCH_RUNS:-1}
else
	entries=${BENCH_ENTRIES:-100000} big=${BENCH_BIG:-1000000} dur=${BENCH_DURATION:-10} runs=${BENCH_RUNS:-3}
fi
parts=" ${BENCH_PARTS:-crl ocsp rss} "
part() { [[ $parts == *" $1 "* ]]; }
part rss || big=0
conns=${BENCH_CONNS:-16}
port0=${BENCH_PORT:-18700}
server_cpu=${BENCH_SERVER_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
multi=${BENCH_OSSL_MULTI:-4}
[[ $multi =~ ^([2-9]|1[0-6])$ ]] || bench_die "BENCH_OSSL_MULTI must be between 2 and 16, not \"$multi\""
[[ $entries =~ ^[1-9][0-9]{0,7}$ ]] || bench_die "BENCH_ENTRIES must be between 1 and 99999999, not \"$entries\""
[[ $big =~ ^(0|[1-9][0-9]{0,7})$ ]] || bench_die "BENCH_BIG must be between 0 and 99999999, not \"$big\""
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_DURATION must be between 1 and 999, not \"$dur\""
[[ $runs =~ ^[1-9]$ ]] || bench_die "BENCH_RUNS must be between 1 and 9, not \"$runs\""
for p in $parts; do [[ $p =~ ^(crl|ocsp|rss)$ ]] || bench_die "BENCH_PARTS takes crl, ocsp and rss, not \"$p\""; done

bench_require nginx:nginx wrk:wrk curl:curl openssl:openssl taskset:util-linux ss:iproute2
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

serve_port=$port0 nginx_port=$((port0 + 1)) ocsp_port=$((port0 + 2)) big_port=$((port0 + 3)) fast_port=$((port0 + 4))
bench_ports_free "$port0" $((5))
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
taskset -c "$server_cpu" "$work/minica" serve --listen "127.0.0.1:$serve_port" --listen-ocsp "127.0.0.1:$fast_port" >/dev/null 2>"$work/serve.log" &
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
# request it cannot read (a port probe, a connection a client dropped) and
# may spin on one, so it is started afresh before each use and never probed:
# ss shows when it listens. start_ocsp [ARGS]: ARGS go to openssl ocsp
# (-multi N).
ocsp_pid=
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }
stop_ocsp() {
	[ -n "$ocsp_pid" ] || return 0
	# With -multi the parent, told to stop, waits for a child to exit.
	local kids
	kids=$(pgrep -P "$ocsp_pid" | tr '\n' ' ' || true)
	kill "$ocsp_pid" 2>/dev/null || true
	# shellcheck disable=SC2086 # a list of pids
	[ -z "$kids" ] || kill $kids 2>/dev/null || true
	wait "$ocsp_pid" 2>/dev/null || true
	local i
	for i in $(seq 50); do listening "$ocsp_port" || break; sleep 0.1; done
	ocsp_pid=
}
start_ocsp() {
	stop_ocsp
	: >"$work/openssl-ocsp.log"
	local rt=()
	[ -n "${OCSP_RT:-}" ] && rt=(chrt -f 10)
	"${rt[@]}" taskset -c "$server_cpu" openssl ocsp -index "$work/index.txt" -port "$ocsp_port" -CA "$ca" \
		-rsigner "$ca" -rkey "$MINICA_DIR/ca.key" -ndays 1 "$@" 2>"$work/openssl-ocsp.log" >/dev/null &
	ocsp_pid=$!
	pids+=("$ocsp_pid")
	local i
	for i in $(seq 100); do
		listening "$ocsp_port" && { [ $# -eq 0 ] || sleep 0.5; return 0; }
		sleep 0.1
	done
	bench_die "openssl ocsp did not start: $(cat "$work/openssl-ocsp.log")"
}
start_ocsp

# --- checks -----------------------------------------------------------------
serve_url=http://127.0.0.1:$serve_port nginx_url=http://127.0.0.1:$nginx_port fast_url=http://127.0.0.1:$fast_port
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
for url in "$serve_url/ocsp" "$fast_url/" "http://127.0.0.1:$ocsp_port"; do
	ocsp_check "$url" "$alice" good
	ocsp_check "$url" "$bob" revoked
done

# --- load -------------------------------------------------------------------
to_ms() { # wrk latency such as 812.00us, 3.41ms, 1.02s
	awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'
}
# load KEY URL [wrk args]: wrk on the load core; appends KEY, requests/s,
# p99 ms and errors to load.tsv.
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
if part crl; then
	bench_log "wrk, ${dur}s x $conns connections each"
	load crl304-serve "$serve_url/crl.der" -H "If-None-Match: $serve_etag"
	load crl304-nginx "$nginx_url/crl.der" -H "If-None-Match: $nginx_etag"
	load crl200-serve "$serve_url/crl.der"
	load crl200-nginx "$nginx_url/crl.der"
fi

# OCSP: one client for both responders (scripts/bench/serve/rate: raw
# HTTP/1.1, every answer checked to be a successful OCSP response). It keeps
# a connection when the server allows (serve does; openssl ocsp answers
# HTTP/1.0 and closes every one) and, with -close, opens one per request
# for both. Beside the rate, the server's CPU time (utime + stime from
# /proc, of every process of it) per answer: what the rate would be with a
# core to itself, whatever the machine's other jobs take; the client's own
# CPU time per answer (from rate), so that the share of its core the load
# generator used shows whether it set the rate; and the time the server's
# threads spent runnable but waiting for their core (schedstat), which is
# what the machine's other jobs took from it.
cpu_ticks() { # PID...: the first with the children it has waited for (openssl -multi replaces a child that exits), then the others
	local p t f=1
	t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo 0)
	for p in "$@"; do
		[ -n "$f" ] && { f=; continue; }
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
run_wait_ns() { # PID...: nanoseconds their threads waited on a run queue
	local p t w=0
	for p in "$@"; do
		for t in /proc/"$p"/task/*/schedstat; do w=$((w + $(awk '{ print $2 }' "$t" 2>/dev/null || echo 0))); done
	done
	echo "$w"
}
server_pids() { # serve or openssl: the process and its children (-multi)
	if [ "$1" = serve ]; then echo "${pids[0]}"; else echo "$ocsp_pid $(pgrep -P "$ocsp_pid" | tr '\n' ' ' || true)"; fi
}
tck=$(getconf CLK_TCK)
# ocsp_load RUN KEY WHO URL REQ [rate args]: appends RUN, KEY, requests,
# failures, requests/s, p50, p99, max ms, the server's CPU µs per answer,
# the client's CPU µs per answer and the per cent of the wall time the
# server's threads waited for their core to ocsp.tsv.
ocsp_load() {
	local run=$1 key=$2 who=$3 url=$4 req=$5 out before after us wait0 wait1 waited
	shift 5
	local procs procs0
	procs=$(server_pids "$who") procs0=$procs
	# shellcheck disable=SC2086 # a list of pids
	before=$(cpu_ticks $procs) wait0=$(run_wait_ns $procs)
	local rt=()
	[ -n "${RT:-}" ] && rt=(chrt -f 10)
	out=$("${rt[@]}" taskset -c "$load_cpu" "$work/rate" -body "$req" -d "${dur}s" "$@" "$url") || bench_die "$key: the OCSP client failed"
	# Children of openssl -multi that exited meanwhile are in the parent's
	# counts; their replacements are new processes.
	procs=$(server_pids "$who")
	# shellcheck disable=SC2086
	after=$(cpu_ticks $procs) wait1=$(run_wait_ns $procs)
	# The warm-up second is inside the CPU time: charged to the measured answers, against each server alike.
	us=$(awk -v n="$(cut -f1 <<<"$out")" -v t=$((after - before)) -v k="$tck" -v d="$dur" 'BEGIN { printf "%.1f", t / k * 1e6 / (n * (d + 1) / d) }')
	waited=$(awk -v w=$((wait1 - wait0)) -v d="$dur" 'BEGIN { printf "%.0f", w / 1e9 / (d + 1) * 100 }')
	[ "$procs" = "$procs0" ] || waited=- # a process left: its wait is lost
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$key" "$(cut -f1-6 <<<"$out")" "$us" "$(cut -f7 <<<"$out")" "$waited" >>"$work/ocsp.tsv"
	bench_log "run $run, $key: $(cut -f3 <<<"$out") answers/s, p99 $(cut -f5 <<<"$out") ms, $(cut -f2 <<<"$out") failed, $us µs CPU an answer (client $(cut -f7 <<<"$out") µs), waited for the core ${waited}%"
}
# The fixed-rate runs measure the responder's latency, not the time the
# machine's other jobs keep the CPU from it: with BENCH_RT=1 (the default
# when chrt is there and we are root) both responders and the client run
# them under SCHED_FIFO (chrt -f 10), a few per cent of a core for ${dur}s
# each; one run of serve at the default priority ("other") shows the
# difference. BENCH_RT=0 runs them all at the default priority.
rt=${BENCH_RT:-}
if [ -z "$rt" ]; then rt=0; [ "$(id -u)" -eq 0 ] && command -v chrt >/dev/null 2>&1 && rt=1; fi
[[ $rt =~ ^[01]$ ]] || bench_die "BENCH_RT must be 0 or 1, not \"$rt\""
[ "$rt" = 1 ] || rt=
sched_serve() { # chrt POLICY ARGS for every thread of serve
	local t
	for t in /proc/"${pids[0]}"/task/*; do chrt "$1" -p "$2" "${t##*/}" >/dev/null; done
}
: >"$work/ocsp.tsv"
if part ocsp; then
	for run in $(seq "$runs"); do
		bench_log "OCSP round $run of $runs: $conns clients, ${dur}s each, then 200 requests a second for ${dur}s"
		ocsp_load "$run" good-serve serve "$serve_url/ocsp" "$work/alice.req" -c "$conns"
		ocsp_load "$run" revoked-serve serve "$serve_url/ocsp" "$work/bob.req" -c "$conns"
		ocsp_load "$run" good-serve-close serve "$serve_url/ocsp" "$work/alice.req" -c "$conns" -close
		ocsp_load "$run" good-serve-ocsp serve "$fast_url/" "$work/alice.req" -c "$conns"
		ocsp_load "$run" revoked-serve-ocsp serve "$fast_url/" "$work/bob.req" -c "$conns"
		start_ocsp
		ocsp_load "$run" good-openssl openssl "http://127.0.0.1:$ocsp_port/" "$work/alice.req" -c "$conns"
		start_ocsp
		ocsp_load "$run" revoked-openssl openssl "http://127.0.0.1:$ocsp_port/" "$work/bob.req" -c "$conns"
		start_ocsp -multi "$multi"
		ocsp_load "$run" good-openssl-multi openssl "http://127.0.0.1:$ocsp_port/" "$work/alice.req" -c "$conns"
		start_ocsp -multi "$multi"
		ocsp_load "$run" revoked-openssl-multi openssl "http://127.0.0.1:$ocsp_port/" "$work/bob.req" -c "$conns"
		ocsp_load "$run" rate-good-serve-other serve "$serve_url/ocsp" "$work/alice.req" -rate 200
		if [ -n "$rt" ]; then sched_serve -f 10; fi
		RT=$rt ocsp_load "$run" rate-good-serve serve "$serve_url/ocsp" "$work/alice.req" -rate 200
		RT=$rt ocsp_load "$run" rate-revoked-serve serve "$serve_url/ocsp" "$work/bob.req" -rate 200
		RT=$rt ocsp_load "$run" rate-good-serve-close serve "$serve_url/ocsp" "$work/alice.req" -rate 200 -close
		RT=$rt ocsp_load "$run" rate-good-serve-ocsp serve "$fast_url/" "$work/alice.req" -rate 200
		RT=$rt ocsp_load "$run" rate-revoked-serve-ocsp serve "$fast_url/" "$work/bob.req" -rate 200
		if [ -n "$rt" ]; then sched_serve -o 0; fi
		OCSP_RT=$rt start_ocsp
		RT=$rt ocsp_load "$run" rate-good-openssl openssl "http://127.0.0.1:$ocsp_port/" "$work/alice.req" -rate 200
	done
	ocsp_check "$serve_url/ocsp" "$bob" revoked
	ocsp_check "$fast_url/" "$bob" revoked
	start_ocsp
	ocsp_check "http://127.0.0.1:$ocsp_port" "$alice" good
	stop_ocsp
fi

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
	openssl ocsp -issuer "$bigdir/ca.crt" -cert "$(ls "$bigdir"/certs/carol/*.crt | head -1)" -url "$big_url/ocsp" -CAfile "$bigdir/ca.crt" >/dev/null 2>&1
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

# --- report -----------------------------------------------------------------
get() { awk -F '\t' -v k="$1" -v c="$2" '$1 == k { print $c }' "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
bench_machine | grep -v '^tools'
printf 'load:    %s (1, 5 and 15 minutes) at the end\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'setup:   CRL of %d entries (%d KiB DER); %d clients, %ds a load, keep-alive where the server allows; servers on core %s, load on core %s\n\n' \
	"$listed" "$((crl_bytes / 1024))" "$conns" "$dur" "$server_cpu" "$load_cpu"
verdicts=()
if part crl; then
	printf '%-34s %12s %10s %8s   %s\n' "wrk" "req/s" "p99 ms" "errors" "serve / nginx"
	row() { # LABEL KEY [PEERKEY]
		local r
		r=$([ -n "${3:-}" ] && ratio "$(get "$2" 2 "$work/load.tsv")" "$(get "$3" 2 "$work/load.tsv")" || true)
		printf '%-34s %12s %10s %8s   %s\n' "$1" "$(get "$2" 2 "$work/load.tsv")" "$(get "$2" 3 "$work/load.tsv")" "$(get "$2" 4 "$work/load.tsv")" "${r:+${r}x}"
	}
	row "serve /crl.der 304" crl304-serve crl304-nginx
	row "nginx static crl.der 304" crl304-nginx
	row "serve /crl.der 200" crl200-serve crl200-nginx
	row "nginx static crl.der 200" crl200-nginx
	echo
	c304=$(ratio "$(get crl304-serve 2 "$work/load.tsv")" "$(get crl304-nginx 2 "$work/load.tsv")")
	c200=$(ratio "$(get crl200-serve 2 "$work/load.tsv")" "$(get crl200-nginx 2 "$work/load.tsv")")
	verdicts+=("304 >= half of nginx: $(bench_verdict "$c304" ">=" 0.5)" "200 >= half of nginx: $(bench_verdict "$c200" ">=" 0.5)")
fi
if part ocsp; then
	# ov RUN KEY COL: a column of ocsp.tsv (3 requests, 4 failed, 5 req/s,
	# 6 p50, 7 p99, 8 max, 9 server CPU µs, 10 client CPU µs, 11 % waited)
	ov() { awk -F '\t' -v r="$1" -v k="$2" -v c="$3" '$1 == r && $2 == k { print $c }' "$work/ocsp.tsv"; }
	median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
	spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " to " hi }'; }
	busy() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", a * b / 1e4 }'; } # rate, µs: per cent of a core
	# openssl at its best, in each round and for each serial: the higher rate
	# and the lower CPU per answer of one process and of -multi.
	best() { # RUN SERIAL COL
		local a b
		a=$(ov "$1" "$2-openssl" "$3") b=$(ov "$1" "$2-openssl-multi" "$3")
		if [ "$3" = 5 ]; then awk -v a="$a" -v b="$b" 'BEGIN { print (a > b ? a : b) }'; else awk -v a="$a" -v b="$b" 'BEGIN { print (a < b ? a : b) }'; fi
	}
	printf '%-5s %-34s %10s %7s %8s %8s %6s %8s %6s %7s %10s   %s\n' run "OCSP, $conns clients, closed loop" "answers/s" failed "p99 ms" "CPU µs" busy "client µs" busy waited "vs openssl" "by CPU"
	for run in $(seq "$runs"); do
		for key in good-serve revoked-serve good-serve-close good-serve-ocsp revoked-serve-ocsp good-openssl good-openssl-multi revoked-openssl revoked-openssl-multi; do
			serial=good
			[[ $key == revoked-* ]] && serial=revoked
			r=$(ratio "$(ov "$run" "$key" 5)" "$(best "$run" "$serial" 5)")x
			c=$(ratio "$(best "$run" "$serial" 9)" "$(ov "$run" "$key" 9)")x
			[[ $key == *openssl* ]] && r= c=
			printf '%-5s %-34s %10s %7s %8s %8s %6s %8s %6s %7s %10s   %s\n' "$run" "${key/openssl-multi/openssl -multi $multi}" "$(ov "$run" "$key" 5)" "$(ov "$run" "$key" 4)" \
				"$(ov "$run" "$key" 7)" "$(ov "$run" "$key" 9)" "$(busy "$(ov "$run" "$key" 5)" "$(ov "$run" "$key" 9)")" \
				"$(ov "$run" "$key" 10)" "$(busy "$(ov "$run" "$key" 5)" "$(ov "$run" "$key" 10)")" "$(ov "$run" "$key" 11)%" "$r" "$c"
		done
	done
	echo "(busy: the share of one core the server, then the client, used; waited: the time the server's threads were runnable but another job had the core, summed over its threads, so above 100% when several wait at once; -% when a -multi child was replaced)"
	echo
	printf '%-5s %-36s %10s %8s %9s %9s %9s\n' run "200 OCSP requests/s, ${dur}s, open loop${rt:+, SCHED_FIFO except \"other\"}" requests failed "p50 ms" "p99 ms" "max ms"
	for run in $(seq "$runs"); do
		for key in rate-good-serve-other rate-good-serve rate-revoked-serve rate-good-serve-close rate-good-serve-ocsp rate-revoked-serve-ocsp rate-good-openssl; do
			printf '%-5s %-36s %10s %8s %9s %9s %9s\n' "$run" "${key#rate-}" "$(ov "$run" "$key" 3)" "$(ov "$run" "$key" 4)" \
				"$(ov "$run" "$key" 6)" "$(ov "$run" "$key" 7)" "$(ov "$run" "$key" 8)"
		done
	done
	echo
	ratios() { # KEY PEER COL: serve / openssl (COL 5) or openssl / serve (COL 9), one a run; PEER good or revoked is openssl at its best
		local run p
		for run in $(seq "$runs"); do
			if [[ $2 == good || $2 == revoked ]]; then p=$(best "$run" "$2" "$3"); else p=$(ov "$run" "$2" "$3"); fi
			if [ "$3" = 5 ]; then ratio "$(ov "$run" "$1" 5)" "$p"; else ratio "$p" "$(ov "$run" "$1" 9)"; fi
			echo
		done
	}
	for spec in "good, --listen-ocsp|good-serve-ocsp|good" "revoked, --listen-ocsp|revoked-serve-ocsp|revoked" \
		"good, --listen-ocsp, one openssl|good-serve-ocsp|good-openssl" "revoked, --listen-ocsp, one openssl|revoked-serve-ocsp|revoked-openssl" \
		"good|good-serve|good" "revoked|revoked-serve|revoked" "good, one openssl process|good-serve|good-openssl" \
		"revoked, one openssl process|revoked-serve|revoked-openssl" "good, a connection each|good-serve-close|good-openssl"; do
		IFS='|' read -r label key peer <<<"$spec"
		printf 'OCSP %-36s serve / openssl: answers/s median %sx (%s), CPU per answer median %sx (%s)\n' "$label" \
			"$(ratios "$key" "$peer" 5 | median)" "$(ratios "$key" "$peer" 5 | spread)" \
			"$(ratios "$key" "$peer" 9 | median)" "$(ratios "$key" "$peer" 9 | spread)"
	done
	echo "(good and revoked: against openssl at its best in each round, one process or -multi $multi, the higher rate and the lower CPU per answer)"
	p99s() { local run; for run in $(seq "$runs"); do ov "$run" "$1" 7; done; }
	for key in rate-good-serve-other rate-good-serve rate-revoked-serve rate-good-serve-close rate-good-serve-ocsp rate-revoked-serve-ocsp rate-good-openssl; do
		printf 'p99 at 200/s, %-24s median %s ms (%s)\n' "${key#rate-}:" "$(p99s "$key" | median)" "$(p99s "$key" | spread)"
	done
	echo
	og=$(ratios good-serve-ocsp good 5 | median) orv=$(ratios revoked-serve-ocsp revoked 5 | median)
	p99=$( (p99s rate-good-serve-ocsp | median; p99s rate-revoked-serve-ocsp | median; p99s rate-good-serve | median; p99s rate-revoked-serve | median) | sort -g | tail -1)
	verdicts+=("OCSP on --listen-ocsp >= 10x openssl at its best (median): good $(bench_verdict "$og" ">=" 10) (${og}x), revoked $(bench_verdict "$orv" ">=" 10) (${orv}x)"
		"OCSP p99 at 200/s < 5 ms (median): $(bench_verdict "$p99" "<=" 4.999)")
fi
serve_rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/${pids[0]}/status")
printf '%-52s %8.1f MiB\n' "serve peak RSS, $listed-entry CRL, after the load" "$(awk -v r="$serve_rss" 'BEGIN { print r / 1024 }')"
if [ -n "$rss_line" ]; then
	echo "$rss_line"
	verdicts+=("peak RSS < 256 MiB: $(bench_verdict "$big_rss" "<=" 262143)")
fi
echo
printf 'targets: %s\n' "$(IFS=';'; echo "${verdicts[*]}" | sed 's/;/; /g')"
