#!/usr/bin/env bash
# Paired A/B of `minica proxy`: CPU per keep-alive request of A and of B,
# alternated in each round (A B, then B A). On a shared machine one
# proxy's figure moves by tens of percent between runs; the ratio B/A of
# runs that followed each other, then its median over the rounds, is the
# figure to read.
#
#   scripts/bench/proxy-ab.sh OLD_MINICA NEW_MINICA
#       two binaries, each with the two identity headers of
#       scripts/bench/proxy.sh ("two") and with the default header
#       profile ("default")
#   scripts/bench/proxy-ab.sh --routes MINICA
#       one binary with the two headers: A forwards to the upstream, B
#       routes by proxy.sh's policy of 1,000 routes and rules ("routes")
#
# Settings (environment): BENCH_ROUNDS (8), BENCH_DURATION (wrk seconds,
# 5), BENCH_CONNS (64), BENCH_PORT (first of 2 ports, 18500),
# BENCH_PROXY_CPU (0), BENCH_LOAD_CPU (1). Needs: go, wrk, cc with the
# OpenSSL headers, taskset. CPU: utime+stime of the proxy from /proc over
# the completed requests, as in proxy.sh.
set -euo pipefail
usage() { echo "usage: proxy-ab.sh OLD_MINICA NEW_MINICA | --routes MINICA" >&2; exit 2; }
(($# == 2)) || usage
if [[ $1 == --routes ]]; then
	A=$(realpath "$2") B=$A
	compare=("routes two routes") # name, A's setup, B's setup
else
	A=$(realpath "$1") B=$(realpath "$2")
	compare=("two two two" "default default default")
fi
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
rounds=${BENCH_ROUNDS:-8} dur=${BENCH_DURATION:-5} conns=${BENCH_CONNS:-64}
up=${BENCH_PORT:-18500} port=$((${BENCH_PORT:-18500} + 1))
proxy_cpu=${BENCH_PROXY_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
for tool in go wrk cc taskset; do
	command -v "$tool" >/dev/null || { echo "proxy-ab.sh: $tool not found" >&2; exit 1; }
done

bench_workdir

go build -o "$work/upstream" ./scripts/bench/proxy/upstream
cc -shared -fPIC -O2 -o "$work/wrkshim.so" scripts/bench/proxy/wrkshim.c -ldl
export MINICA_DIR=$work/ca
"$A" init --cn "Bench CA" --no-password --key-type ecdsa-p256 >/dev/null
"$A" issue server bench-server --dns localhost --ip 127.0.0.1 --key-type ecdsa-p256 >/dev/null
"$A" issue client bench-client --email bench@example.com --key-type ecdsa-p256 >/dev/null
"$A" crl >/dev/null
cli_crt=$(ls "$MINICA_DIR"/certs/bench-client/*.crt | head -1)
cli_key=${cli_crt%.crt}.key

wait_port() {
	local i
	for i in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "proxy-ab.sh: nothing listens on port $1" >&2
	exit 1
}
taskset -c "$load_cpu" "$work/upstream" -listen "127.0.0.1:$up" &
pids+=($!)
wait_port "$up"

clk=$(getconf CLK_TCK)
ticks() { # utime+stime of pid $1
	local f
	f=$(sed 's/.*) //' "/proc/$1/stat")
	set -- $f
	echo $((${12} + ${13}))
}
scripts/bench/proxy/policy-1000.sh "$up" >"$work/policy-1000.json"
run() { # BINARY SETUP (two, default, routes): prints CPU us per request
	local hdr=() to=(--upstream "http://127.0.0.1:$up") pid t0 t1 n
	[[ $2 != default ]] && hdr=(--headers none --header X-SSL-Client-CN=cn --header X-SSL-Client-Email=email)
	[[ $2 == routes ]] && to=(--policy "$work/policy-1000.json")
	taskset -c "$proxy_cpu" "$1" proxy --listen "127.0.0.1:$port" "${to[@]}" \
		--server-cert bench-server "${hdr[@]}" --access-log "$work/access.log" >"$work/proxy.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	wait_port "$port"
	local shim=(env LD_PRELOAD="$work/wrkshim.so" BENCH_CLIENT_CERT="$cli_crt" BENCH_CLIENT_KEY="$cli_key")
	"${shim[@]}" taskset -c "$load_cpu" wrk -t1 -c"$conns" -d1s "https://127.0.0.1:$port/" >/dev/null
	t0=$(ticks "$pid")
	"${shim[@]}" taskset -c "$load_cpu" wrk -t1 -c"$conns" -d"${dur}s" "https://127.0.0.1:$port/" >"$work/wrk.txt"
	t1=$(ticks "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	rm -f "$work/access.log"
	grep -q 'Non-2xx' "$work/wrk.txt" && { echo "proxy-ab.sh: non-2xx responses: $(cat "$work/wrk.txt")" >&2; exit 1; }
	n=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
	awk -v d=$((t1 - t0)) -v n="$n" -v hz="$clk" 'BEGIN {printf "%.1f\n", d / hz * 1e6 / n}'
}

res=$work/res.tsv
for r in $(seq "$rounds"); do
	for c in "${compare[@]}"; do
		read -r prof setup_a setup_b <<<"$c"
		order="A B"
		((r % 2)) || order="B A"
		for w in $order; do
			bin=$A setup=$setup_a
			[[ $w == B ]] && bin=$B setup=$setup_b
			printf '%s\t%s\t%s\t%s\n' "$r" "$prof" "$w" "$(run "$bin" "$setup")" | tee -a "$res" >&2
		done
	done
done
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| profile | rounds, B/A | median A us/req | median B us/req | median B/A |"
echo "|---|---|---:|---:|---:|"
for c in "${compare[@]}"; do
	read -r prof _ <<<"$c"
	ratios=$(awk -F'\t' -v p="$prof" '$2 == p {v[$1 " " $3] = $4; r[$1] = 1}
		END {for (k in r) printf "%.3f\n", v[k " B"] / v[k " A"]}' "$res" | sort -g)
	ma=$(awk -F'\t' -v p="$prof" '$2 == p && $3 == "A" {print $4}' "$res" | median)
	mb=$(awk -F'\t' -v p="$prof" '$2 == p && $3 == "B" {print $4}' "$res" | median)
	printf '| %s | %s | %s | %s | %s |\n' "$prof" "$(echo $ratios)" "$ma" "$mb" "$(median <<<"$ratios")"
done
