#!/usr/bin/env bash
# Revocation latency: the time from `minica revoke` returning to the revoked
# client being refused by every one of N replicas, for N `minica proxy`
# processes following `minica serve` (--crl URL, long poll) and, in the same
# run, for N nginx processes whose CRL a loop per replica re-fetches with
# curl (a conditional GET every BENCH_PERIOD seconds, the same polling
# period as the proxies' --crl-refresh) and installs with `nginx -s reload`,
# the way it is done today. See docs/performance.md ("## Revocation
# latency") for what it measures and the last results.
#
#   scripts/bench/revocation.sh             N = 10, 20 revocations each, about 3 minutes
#   BENCH_QUICK=1 scripts/bench/revocation.sh   smoke run: N = 3, 3 revocations, period 2 s
#
# Settings (environment): BENCH_N (replicas, 10), BENCH_REVOCATIONS (20),
# BENCH_PERIOD (seconds between two polls of a fetch loop, and the proxies'
# --crl-refresh; 5), BENCH_PORT (first port of a range of 2 + 2N, 18600),
# BENCH_MINICA (a minica binary instead of building ./cmd/minica).
#
# Each revocation revokes a client of its own; scripts/bench/revocation/watch
# runs `minica revoke` and then requests every replica on new connections
# (a full mTLS handshake each) every 10 ms until it refuses that client. The
# revocations alternate between the two sides, so both see the same machine.
# Every fetch loop starts at a random phase, as independent replicas do.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh

if [ -n "${BENCH_QUICK:-}" ]; then
	n=${BENCH_N:-3} revocations=${BENCH_REVOCATIONS:-3} period=${BENCH_PERIOD:-2}
else
	n=${BENCH_N:-10} revocations=${BENCH_REVOCATIONS:-20} period=${BENCH_PERIOD:-5}
fi
port0=${BENCH_PORT:-18600}
[[ $n =~ ^[1-9][0-9]?$ ]] || bench_die "BENCH_N must be between 1 and 99, not \"$n\""
[[ $revocations =~ ^[1-9][0-9]{0,2}$ ]] || bench_die "BENCH_REVOCATIONS must be between 1 and 999, not \"$revocations\""
[[ $period =~ ^[1-9][0-9]?$ ]] || bench_die "BENCH_PERIOD must be whole seconds between 1 and 99, not \"$period\""

bench_require nginx:nginx curl:curl
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica (see go.mod for the version)"
bench_tmpdir
work=$BENCH_TMP
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	for ((i = 0; i < n; i++)); do
		[ -f "$work/nginx-$i/nginx.pid" ] && kill "$(cat "$work/nginx-$i/nginx.pid")" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

serve_port=$port0 up_port=$((port0 + 1))
minica_port() { echo $((port0 + 2 + $1)); }
nginx_port() { echo $((port0 + 2 + n + $1)); }
bench_ports_free "$port0" $((2 + 2 * n))
wait_port() { bench_wait_port "$1" 10; }

bench_log "building"
if [ -n "${BENCH_MINICA:-}" ]; then cp "$BENCH_MINICA" "$work/minica"; else go build -o "$work/minica" ./cmd/minica; fi
go build -o "$work/upstream" ./scripts/bench/proxy/upstream
go build -o "$work/watch" ./scripts/bench/revocation/watch
minica() { "$work/minica" "$@"; }

bench_log "CA, a server certificate, a client and $((2 * revocations)) clients to revoke"
export MINICA_DIR=$work/ca
minica init --cn "Bench CA" --no-password >/dev/null
minica issue server bench-server --dns localhost --ip 127.0.0.1 >/dev/null
for ((k = 1; k <= revocations; k++)); do
	minica issue client "m$k" --email "m$k@example.com" >/dev/null
	minica issue client "x$k" --email "x$k@example.com" >/dev/null
done
cert_of() { ls "$MINICA_DIR"/certs/"$1"/*.crt | head -1; }
ca=$MINICA_DIR/ca.crt
srv_crt=$(cert_of bench-server)
srv_key=${srv_crt%.crt}.key

bench_log "minica serve, $n minica proxy, $n nginx with a curl fetch loop each (every ${period}s)"
"$work/upstream" -listen "127.0.0.1:$up_port" 2>"$work/upstream.log" &
pids+=($!)
"$work/minica" serve --listen "127.0.0.1:$serve_port" >/dev/null 2>"$work/serve.log" &
pids+=($!)
wait_port "$up_port"
wait_port "$serve_port"
minica_urls=() nginx_urls=()
for ((i = 0; i < n; i++)); do
	p=$(minica_port "$i")
	"$work/minica" proxy --listen "127.0.0.1:$p" --metrics 127.0.0.1:0 --upstream "http://127.0.0.1:$up_port" \
		--server-cert bench-server --crl "http://127.0.0.1:$serve_port/crl.der" --crl-refresh "${period}s" \
		--reload-interval 0 >/dev/null 2>"$work/proxy-$i.log" &
	pids+=($!)
	minica_urls+=("https://127.0.0.1:$p/")
done

# nginx: one master and one worker per replica, its own prefix, CRL file and
# fetch loop.
for ((i = 0; i < n; i++)); do
	d=$work/nginx-$i
	mkdir -p "$d/tmp"
	curl -sfS -o "$d/crl.pem" --etag-save "$d/etag" "http://127.0.0.1:$serve_port/crl.pem"
	cat >"$d/nginx.conf" <<-EOF
		worker_processes 1;
		pid $d/nginx.pid;
		error_log $d/error.log warn;
		events { worker_connections 1024; }
		http {
			access_log off;
			client_body_temp_path $d/tmp;
			proxy_temp_path $d/tmp;
			server {
				listen 127.0.0.1:$(nginx_port "$i") ssl;
				ssl_certificate $srv_crt;
				ssl_certificate_key $srv_key;
				ssl_client_certificate $ca;
				ssl_verify_client on;
				ssl_crl $d/crl.pem;
				location / { proxy_pass http://127.0.0.1:$up_port; }
			}
		}
	EOF
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" 2>>"$d/error.log"
	nginx_urls+=("https://127.0.0.1:$(nginx_port "$i")/")
done
# fetch_loop I: every period, a conditional GET of the CRL; a new one
# replaces the file and reloads nginx.
fetch_loop() {
	local d=$work/nginx-$1 code phase
	phase=$(awk -v r="$(od -An -N2 -tu2 /dev/urandom)" -v t="$period" 'BEGIN { printf "%.3f", r / 65536 * t }')
	echo "phase $phase" >>"$d/fetch.log"
	sleep "$phase"
	while :; do
		code=$(curl -s -o "$d/crl.new" -w '%{http_code}' --max-time 5 --etag-compare "$d/etag" \
			--etag-save "$d/etag.new" "http://127.0.0.1:$serve_port/crl.pem") || code=000
		if [ "$code" = 200 ]; then
			mv "$d/etag.new" "$d/etag"
			mv "$d/crl.new" "$d/crl.pem"
			nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" -s reload 2>>"$d/error.log"
			echo "$(date +%s%3N) reload" >>"$d/fetch.log"
		fi
		sleep "$period"
	done
}
for ((i = 0; i < n; i++)); do
	fetch_loop "$i" &
	pids+=($!)
	wait_port "$(nginx_port "$i")"
	wait_port "$(minica_port "$i")"
done

# long_polls_waiting: the number of long polls waiting at serve.
long_polls_waiting() {
	curl -s "http://127.0.0.1:$serve_port/metrics" | awk '$1 == "minica_serve_long_polls" { print $2 }'
}
wait_long_polls() {
	local i
	for i in $(seq 200); do
		[ "$(long_polls_waiting)" = "$n" ] && return 0
		sleep 0.05
	done
	bench_die "not $n long polls waiting at serve after 10s"
}

# revoke SIDE NAME URL...: one timed revocation; appends the line of watch.
revoke_one() {
	local side=$1 name=$2 crt
	shift 2
	crt=$(cert_of "$name")
	"$work/watch" -ca "$ca" -cert "$crt" -key "${crt%.crt}.key" -timeout "$((4 * period + 30))s" \
		-run "'$work/minica' revoke '$name'" "$@" | sed "s/^/$side\t/" >>"$work/latency.tsv"
}
: >"$work/latency.tsv"
for ((k = 1; k <= revocations; k++)); do
	wait_long_polls
	revoke_one minica "m$k" "${minica_urls[@]}"
	revoke_one nginx "x$k" "${nginx_urls[@]}"
	bench_log "revocation $k of $revocations: $(tail -2 "$work/latency.tsv" |
		awk -F '\t' '{ m = 0; for (i = 3; i <= NF; i++) if ($i > m) m = $i; printf "%s %.0f ms  ", $1, m }')"
done

# Where minica's time goes: serve loading the new crl.der and the last
# proxy reloading it, from their logs' millisecond timestamps: for each
# revocation, the last such event before every replica refused, in ms from
# `minica revoke` returning (negative when it came before: serve on Linux
# is notified of the new crl.der while revoke is still finishing).
ms_of() { date -d "$1" +%s%3N; }
last_before() { # FILE EVENT END: the last EVENT of FILE at or before END, in ms
	awk -v e="$2" '$2 == e { print $1 }' "$1" | while read -r ts; do
		v=$(ms_of "$ts")
		if [ "$v" -le "$3" ]; then echo "$v"; fi
	done | tail -1
}
serve_ms=() reload_ms=()
while IFS=$'\t' read -r side start rest; do
	[ "$side" = minica ] || continue
	end=$((start + $(tr '\t' '\n' <<<"$rest" | sort -g | tail -1 | awk '{ printf "%.0f", $1 }')))
	t=$(last_before "$work/serve.log" crl-loaded "$end")
	serve_ms+=($((${t:-$end} - start)))
	last=-999999
	for ((i = 0; i < n; i++)); do
		r=$(last_before "$work/proxy-$i.log" reload "$end")
		[ -n "$r" ] && [ $((r - start)) -gt "$last" ] && last=$((r - start))
	done
	reload_ms+=("$last")
done <"$work/latency.tsv"

# The report: per side, the distribution of the time until all N replicas
# refuse (the slowest replica of each revocation), and of single replicas.
stats() { # prints median p90 p99 max of the numbers on stdin (nearest rank)
	sort -g | awk '{ v[NR] = $1 } END {
		n = NR; m = v[int((n + 1) / 2)]; if (n % 2 == 0) m = (v[n / 2] + v[n / 2 + 1]) / 2
		p90 = v[int(0.9 * n + 0.999)]; p99 = v[int(0.99 * n + 0.999)]
		printf "%.0f %.0f %.0f %.0f", m, p90, p99, v[n] }'
}
all_of() { awk -F '\t' -v s="$1" '$1 == s { m = 0; for (i = 3; i <= NF; i++) if ($i > m) m = $i; print m }' "$work/latency.tsv"; }
each_of() { awk -F '\t' -v s="$1" '$1 == s { for (i = 3; i <= NF; i++) print $i }' "$work/latency.tsv"; }
if grep -q $'\t-1' "$work/latency.tsv"; then
	bench_die "a replica still let a revoked client through after the timeout: $(grep $'\t-1' "$work/latency.tsv")"
fi
read -r m_med m_p90 m_p99 m_max <<<"$(all_of minica | stats)"
read -r x_med x_p90 x_p99 x_max <<<"$(all_of nginx | stats)"
read -r me_med _ me_p99 _ <<<"$(each_of minica | stats)"
read -r xe_med _ xe_p99 _ <<<"$(each_of nginx | stats)"
read -r s_med _ s_p99 _ <<<"$(printf '%s\n' "${serve_ms[@]}" | stats)"
read -r r_med _ r_p99 _ <<<"$(printf '%s\n' "${reload_ms[@]}" | stats)"
ratio=$(awk -v a="$x_med" -v b="$m_med" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 1) }')
ratio99=$(awk -v a="$x_p99" -v b="$m_p99" 'BEGIN { printf "%.1f", a / (b > 0 ? b : 1) }')
echo
bench_machine | grep -v '^tools'
printf 'setup:   N = %d replicas each side, %d revocations each side, polling period %d s\n\n' "$n" "$revocations" "$period"
printf '%-44s %8s %8s %8s %8s\n' "ms from minica revoke returning" median p90 p99 max
printf '%-44s %8s %8s %8s %8s\n' "minica serve + proxy: all $n refuse" "$m_med" "$m_p90" "$m_p99" "$m_max"
printf '%-44s %8s %8s %8s %8s\n' "nginx + curl loop + reload: all $n refuse" "$x_med" "$x_p90" "$x_p99" "$x_max"
printf '%-44s %8s %8s %8s\n' "minica, one replica" "$me_med" "" "$me_p99"
printf '%-44s %8s %8s %8s\n' "nginx, one replica" "$xe_med" "" "$xe_p99"
printf '%-44s %8s %8s %8s\n' "minica: serve loads the new crl.der" "$s_med" "" "$s_p99"
printf '%-44s %8s %8s %8s\n' "minica: the last proxy has reloaded it" "$r_med" "" "$r_p99"
printf '\nnginx loop / minica: %sx at the median, %sx at p99\n' "$ratio" "$ratio99"
printf 'targets: minica p99 < 1000 ms: %s; median < 250 ms: %s; >= 10x faster (median): %s\n' \
	"$(bench_verdict "$m_p99" "<=" 999)" "$(bench_verdict "$m_med" "<=" 249)" "$(bench_verdict "$ratio" ">=" 10)"
