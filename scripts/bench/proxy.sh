#!/usr/bin/env bash
# Side-by-side benchmark of `minica proxy`, nginx and HAProxy as mTLS reverse
# proxies on loopback, in one run, with the same ECDSA P-256 certificates and
# the same CRL and the same two identity headers (CN and email), plus minica
# with a 100,000-entry CRL, minica with a policy of 1,000 routes and rules,
# minica with its default header profile, and as a reference a stock Go
# reverse proxy (proxy/plaingo: crypto/tls and httputil, no CRL).
# See docs/performance.md ("## Proxy") for what it measures and the last
# results.
#
#   scripts/bench/proxy.sh            full run (about 11 minutes)
#   BENCH_QUICK=1 scripts/bench/proxy.sh   smoke run (short durations)
#
# To compare two minica binaries with each other (paired, alternated), see
# scripts/bench/proxy-ab.sh.
#
# Needs: go, nginx, haproxy, wrk, ab (apache2-utils), gnuplot, cc with the
# OpenSSL headers (libssl-dev), curl, openssl, taskset.
#
# Settings (environment): BENCH_QUICK=1; BENCH_ROUNDS (5; the report
# takes the median of the rounds); BENCH_DURATION (wrk and ab seconds, 6);
# BENCH_CONNS (wrk connections, 64); BENCH_AB_N (handshakes per ab run,
# 5000); BENCH_AB_C (ab concurrency, 16); BENCH_PORT (first of 8 ports,
# 18400); BENCH_PROXY_CPU (0) and BENCH_LOAD_CPU (1): the proxy under test
# runs on the first core, wrk/ab and the upstream on the second;
# BENCH_MINICA (a minica binary to use instead of building ./cmd/minica);
# BENCH_OUT (results directory, default a temporary one); BENCH_CHART (the
# chart, default docs/perf-proxy.svg; in quick mode BENCH_OUT/perf-proxy.svg).
#
# Keep-alive: wrk, one thread, BENCH_CONNS connections, GET / (a 3-byte
# body), after a warm-up run. wrk has no client-certificate option: the
# preload shim proxy/wrkshim.c makes its SSL_CTX present one. Handshakes:
# ab without -k, so every request is a new TLS connection and a full mTLS
# handshake (ab does not resume sessions); ab's -E gives the client
# certificate. Each proxy logs every request to a file (nginx's default
# access_log, HAProxy's httplog to stderr, minica's --access-log): the same
# work for all three. CPU: utime+stime of the proxy's processes from /proc before
# and after each measured run, divided by the completed requests.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
here=$root/scripts/bench/proxy

quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
	dur=${BENCH_DURATION:-2} warm=1 ab_n=${BENCH_AB_N:-500} ab_t=$dur rounds=${BENCH_ROUNDS:-1}
else
	dur=${BENCH_DURATION:-6} warm=3 ab_n=${BENCH_AB_N:-5000} ab_t=$dur rounds=${BENCH_ROUNDS:-5}
fi
conns=${BENCH_CONNS:-64}
ab_c=${BENCH_AB_C:-16}
port0=${BENCH_PORT:-18400}
proxy_cpu=${BENCH_PROXY_CPU:-0}
load_cpu=${BENCH_LOAD_CPU:-1}

for tool in go nginx haproxy wrk ab gnuplot cc curl openssl taskset; do
	command -v "$tool" >/dev/null || { echo "proxy.sh: $tool not found" >&2; exit 1; }
done
if (($(nproc) < 2)); then
	echo "proxy.sh: needs 2 cores (proxy on one, load on the other); have $(nproc)" >&2
	exit 1
fi

work=$(mktemp -d)
out=${BENCH_OUT:-$work/out}
mkdir -p "$out"
if [[ $quick == 1 ]]; then
	chart=${BENCH_CHART:-$out/perf-proxy.svg}
else
	chart=${BENCH_CHART:-$root/docs/perf-proxy.svg}
fi
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work/ca" "$work/ca-big" # keys
	[[ -n ${BENCH_OUT:-} ]] && rm -rf "$work"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'proxy.sh: %s\n' "$*" >&2; exit 1; }

up_port=$port0
minica_port=$((port0 + 1))
nginx_port=$((port0 + 2))
haproxy_port=$((port0 + 3))
big_port=$((port0 + 4))
plain_port=$((port0 + 5))
default_port=$((port0 + 6))
routes_port=$((port0 + 7))
for p in $up_port $minica_port $nginx_port $haproxy_port $big_port $plain_port $default_port $routes_port; do
	if (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		die "port $p is in use (set BENCH_PORT)"
	fi
done

# --- build -----------------------------------------------------------------
log "building into $work/bin"
mkdir -p "$work/bin"
if [[ -n ${BENCH_MINICA:-} ]]; then
	cp "$BENCH_MINICA" "$work/bin/minica"
else
	go build -o "$work/bin/minica" ./cmd/minica
fi
go build -o "$work/bin/upstream" ./scripts/bench/proxy/upstream
go build -o "$work/bin/fill" ./scripts/bench/fill
go build -o "$work/bin/plaingo" ./scripts/bench/proxy/plaingo
cc -shared -fPIC -O2 -o "$work/bin/wrkshim.so" "$here/wrkshim.c" -ldl
minica() { "$work/bin/minica" "$@"; }

# --- CA, certificates, CRLs ------------------------------------------------
log "CA and certificates (ECDSA P-256)"
export MINICA_DIR=$work/ca
minica init --cn "Bench CA" --no-password --key-type ecdsa-p256 >/dev/null
minica issue server bench-server --dns localhost --ip 127.0.0.1 --key-type ecdsa-p256 >/dev/null
minica issue client bench-client --email bench@example.com --key-type ecdsa-p256 >/dev/null
minica issue client bench-revoked --email revoked@example.com --key-type ecdsa-p256 >/dev/null
minica revoke bench-revoked >/dev/null
minica crl >/dev/null
cert_of() { ls "$MINICA_DIR"/certs/"$1"/*.crt | head -1; }
ca=$MINICA_DIR/ca.crt
crl=$MINICA_DIR/crl.pem
srv_crt=$(cert_of bench-server)
srv_key=${srv_crt%.crt}.key
cli_crt=$(cert_of bench-client)
cli_key=${cli_crt%.crt}.key
rev_crt=$(cert_of bench-revoked)
rev_key=${rev_crt%.crt}.key
cat "$srv_crt" "$srv_key" >"$work/haproxy.pem"
cat "$cli_crt" "$cli_key" >"$work/client.pem" # ab -E: chain and key in one file

log "100,000-entry CRL (a copy of the CA directory)"
cp -a "$MINICA_DIR" "$work/ca-big"
"$work/bin/fill" -dir "$work/ca-big" -n 100000 -revoked 100000
MINICA_DIR=$work/ca-big minica crl >/dev/null
big_entries=$(openssl crl -in "$work/ca-big/crl.pem" -noout -text | grep -c 'Serial Number:')
((big_entries > 100000)) || die "big CRL has $big_entries entries"
log "big CRL: $big_entries entries, $(stat -c %s "$work/ca-big/crl.pem") bytes PEM"

# A policy of 1,000 routes and rules; the requests take the last one.
log "policy of 1,000 routes"
"$here/policy-1000.sh" "$up_port" >"$work/policy-1000.json"
MINICA_DIR=$work/ca minica proxy policy check "$work/policy-1000.json" >/dev/null

# --- servers ---------------------------------------------------------------
fill() { # TEMPLATE PORT > config
	sed -e "s|@WORK@|$work|g" -e "s|@PORT@|$2|g" -e "s|@UPSTREAM_PORT@|$up_port|g" \
		-e "s|@SERVER_CERT@|$srv_crt|g" -e "s|@SERVER_KEY@|$srv_key|g" \
		-e "s|@SERVER_PEM@|$work/haproxy.pem|g" -e "s|@CA@|$ca|g" -e "s|@CRL@|$crl|g" "$1"
}
mkdir -p "$work/nginx-tmp"
fill "$here/nginx.conf" "$nginx_port" >"$work/nginx.conf"
fill "$here/haproxy.cfg" "$haproxy_port" >"$work/haproxy.cfg"

wait_port() { # PORT
	local i
	for i in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	die "nothing listens on port $1"
}

# minica, minica-100k and minica-1000 forward the two identity headers
# nginx.conf sets (the same work); minica-default its default profile (CN,
# email, DN, serial, fingerprint, notBefore, notAfter, verify and the
# escaped certificate: about 1.3 KB).
nginx_headers=(--headers none --header X-SSL-Client-CN=cn --header X-SSL-Client-Email=email)

server_pid=
start_server() { # NAME: starts it on the proxy core, sets server_pid and server_port
	case $1 in
	minica)
		server_port=$minica_port
		taskset -c "$proxy_cpu" "$work/bin/minica" proxy --listen "127.0.0.1:$server_port" \
			--upstream "http://127.0.0.1:$up_port" --server-cert bench-server "${nginx_headers[@]}" \
			--access-log "$work/minica-access.log" 2>"$out/minica.log" &
		;;
	minica-100k)
		server_port=$big_port
		MINICA_DIR=$work/ca-big taskset -c "$proxy_cpu" "$work/bin/minica" proxy \
			--listen "127.0.0.1:$server_port" --upstream "http://127.0.0.1:$up_port" \
			--server-cert bench-server "${nginx_headers[@]}" --access-log "$work/minica-100k-access.log" \
			2>"$out/minica-100k.log" &
		;;
	minica-1000)
		server_port=$routes_port
		taskset -c "$proxy_cpu" "$work/bin/minica" proxy --listen "127.0.0.1:$server_port" \
			--policy "$work/policy-1000.json" --server-cert bench-server "${nginx_headers[@]}" \
			--access-log "$work/minica-1000-access.log" 2>"$out/minica-1000.log" &
		;;
	minica-default)
		server_port=$default_port
		taskset -c "$proxy_cpu" "$work/bin/minica" proxy --listen "127.0.0.1:$server_port" \
			--upstream "http://127.0.0.1:$up_port" --server-cert bench-server \
			--access-log "$work/minica-default-access.log" 2>"$out/minica-default.log" &
		;;
	nginx)
		server_port=$nginx_port
		taskset -c "$proxy_cpu" nginx -c "$work/nginx.conf" -p "$work" -e "$work/nginx-error.log" \
			-g 'daemon off;' 2>"$out/nginx.log" &
		;;
	haproxy)
		server_port=$haproxy_port
		taskset -c "$proxy_cpu" haproxy -db -f "$work/haproxy.cfg" 2>"$work/haproxy-access.log" &
		;;
	plain-go)
		server_port=$plain_port
		taskset -c "$proxy_cpu" "$work/bin/plaingo" -listen "127.0.0.1:$server_port" \
			-upstream "http://127.0.0.1:$up_port" -cert "$srv_crt" -key "$srv_key" -ca "$ca" \
			2>"$out/plain-go.log" &
		;;
	esac
	server_pid=$!
	pids+=("$server_pid")
	wait_port "$server_port"
}

stop_server() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
}

clk_tck=$(getconf CLK_TCK)
cpu_ticks() { # utime+stime of server_pid and its children
	local total=0 pid fields
	for pid in "$server_pid" $(pgrep -P "$server_pid" || true); do
		[[ -r /proc/$pid/stat ]] || continue
		fields=$(sed 's/.*) //' "/proc/$pid/stat")
		set -- $fields
		# after "pid (comm) ": state is $1, utime $12, stime $13
		total=$((total + ${12} + ${13}))
	done
	echo "$total"
}

url() { echo "https://127.0.0.1:$server_port$1"; }

# check NAME: the server refuses a client without a certificate and (but
# plain-go) a revoked one, and passes the identity headers of a valid one to
# the upstream.
check_server() {
	local body code
	if body=$(curl -sS --max-time 5 --cacert "$ca" "$(url /)" 2>/dev/null) && [[ $body == ok ]]; then
		die "$1 answered a client without a certificate"
	fi
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$ca" "$(url /)" || true)
	[[ $code == 200 ]] && die "$1 gave 200 to a client without a certificate"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$ca" \
		--cert "$rev_crt" --key "$rev_key" "$(url /)" || true)
	# plain-go, the stock Go reference, has no CRL check.
	[[ $code == 200 && $1 != plain-go ]] && die "$1 gave 200 to a revoked client"
	body=$(curl -sS --max-time 5 --cacert "$ca" --cert "$cli_crt" --key "$cli_key" "$(url /headers)") ||
		die "$1 refused a valid client"
	grep -qx 'X-Ssl-Client-Cn: bench-client' <<<"$body" || die "$1: no CN header upstream: $body"
	grep -qx 'X-Ssl-Client-Email: bench@example.com' <<<"$body" || die "$1: no email header upstream: $body"
	echo "$body" >"$out/$1.headers"
}

to_ms() { # wrk latency such as 812.00us, 3.41ms, 1.02s
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000
		printf "%.3f", n }'
}

# run_wrk NAME: sets rps, p99 (ms), cpu_req (us per request)
run_wrk() {
	local shim=(env LD_PRELOAD="$work/bin/wrkshim.so" BENCH_CLIENT_CERT="$cli_crt" BENCH_CLIENT_KEY="$cli_key")
	"${shim[@]}" taskset -c "$load_cpu" wrk -t1 -c"$conns" -d"${warm}s" "$(url /)" >/dev/null
	local t0 t1 f=$out/$1.wrk.txt reqs
	t0=$(cpu_ticks)
	"${shim[@]}" taskset -c "$load_cpu" wrk -t1 -c"$conns" -d"${dur}s" --latency "$(url /)" >"$f"
	t1=$(cpu_ticks)
	grep -q 'Non-2xx' "$f" && die "$1: wrk saw non-2xx responses: $(cat "$f")"
	reqs=$(awk '/requests in/ {print $1}' "$f")
	((reqs > 0)) || die "$1: wrk completed no request: $(cat "$f")"
	rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$f")
	p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$f")")
	cpu_req=$(awk -v d=$((t1 - t0)) -v n="$reqs" -v hz="$clk_tck" 'BEGIN {printf "%.1f", d / hz * 1e6 / n}')
}

# run_ab NAME: sets hps (handshakes/s), hs_p99 (ms), cpu_hs (us per handshake)
run_ab() {
	local t0 t1 f=$out/$1.ab.txt done
	t0=$(cpu_ticks)
	taskset -c "$load_cpu" ab -q -t "$ab_t" -n "$ab_n" -c "$ab_c" -E "$work/client.pem" "$(url /)" >"$f" 2>&1 ||
		die "$1: ab failed: $(cat "$f")"
	t1=$(cpu_ticks)
	grep -q 'Non-2xx' "$f" && die "$1: ab saw non-2xx responses: $(cat "$f")"
	[[ $(awk '/^Failed requests/ {print $3}' "$f") == 0 ]] || die "$1: ab saw failures: $(cat "$f")"
	done=$(awk '/^Complete requests/ {print $3}' "$f")
	hps=$(awk '/^Requests per second/ {printf "%.0f", $4}' "$f")
	hs_p99=$(awk '$1 == "99%" {print $2}' "$f")
	cpu_hs=$(awk -v d=$((t1 - t0)) -v n="$done" -v hz="$clk_tck" 'BEGIN {printf "%.0f", d / hz * 1e6 / n}')
}

# --- run -------------------------------------------------------------------
log "upstream on core $load_cpu, port $up_port"
taskset -c "$load_cpu" "$work/bin/upstream" -listen "127.0.0.1:$up_port" &
pids+=($!)
wait_port "$up_port"

# Each round runs every server once, in turn, so that a slow spell of the
# machine hits all of them; the report takes the median of the rounds, and
# its target checks compare servers that ran one after the other: minica
# runs between minica-1000 and nginx, and minica-default right after nginx.
servers="minica nginx haproxy plain-go minica-100k minica-1000 minica-default" # report order
run_order="minica-100k minica-1000 minica nginx minica-default haproxy plain-go"
raw=$out/rounds.tsv
printf 'server\tround\trps\tp99_ms\tcpu_us_req\thps\ths_p99_ms\tcpu_us_hs\n' >"$raw"
for round in $(seq "$rounds"); do
	for name in $run_order; do
		log "round $round/$rounds, $name: start on core $proxy_cpu, check, wrk ${dur}s x $conns conns, ab -n $ab_n -c $ab_c"
		start_server "$name"
		check_server "$name"
		run_wrk "$name"
		run_ab "$name"
		stop_server
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$rps" "$p99" "$cpu_req" "$hps" "$hs_p99" "$cpu_hs" >>"$raw"
		printf '   %-12s %7s req/s  p99 %7s ms  %6s us/req | %5s hs/s  p99 %4s ms  %5s us/hs\n' \
			"$name" "$rps" "$p99" "$cpu_req" "$hps" "$hs_p99" "$cpu_hs" >&2
	done
done
median() { # SERVER COLUMN
	awk -F'\t' -v s="$1" -v c="$2" '$1 == s {print $c}' "$raw" | sort -g |
		awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
results=$out/results.tsv
printf 'server\trps\tp99_ms\tcpu_us_req\thps\ths_p99_ms\tcpu_us_hs\n' >"$results"
for name in $servers; do
	row=$name
	for col in 3 4 5 6 7 8; do
		row+=$'\t'$(median "$name" "$col")
	done
	echo "$row" >>"$results"
done
tls=$(awk -F': *' '/^SSL\/TLS Protocol/ {print $2}' "$out/minica.ab.txt")
kex=$(awk -F': *' '/^Server Temp Key/ {print $2}' "$out/minica.ab.txt")

# --- report ----------------------------------------------------------------
"$here/report.sh" "$results" "$raw" "$tls" "$kex" "$big_entries" | tee "$out/report.md"
gnuplot -e "results='$results'; out='$chart'" "$here/chart.gp"
log "chart: $chart; raw output: $out"
