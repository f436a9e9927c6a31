#!/usr/bin/env bash
# Paired A/B of two minica binaries serving ACME (`serve --acme`): the
# server's CPU per certificate and its certificates a second, loaded as
# scripts/bench/acme.sh loads it (scripts/bench/acmeload: N clients, each
# order validated for real over http-01 on 127.0.0.1). Each binary serves
# a CA directory of its own, both on the same disk, and keeps running
# across the rounds; A and B alternate in each round (A B, then B A). On
# a shared machine one binary's figures move by tens of percent between
# loads; the ratio B/A of loads that followed each other, then its median
# over the rounds, is the figure to read.
#
#   scripts/bench/acme-ab.sh OLD_MINICA NEW_MINICA
#
# Settings (environment): BENCH_ROUNDS (6), BENCH_DURATION (seconds of a
# load, 8), BENCH_CLIENTS (10), BENCH_PORT (first of 4 ports, 18760),
# BENCH_SERVER_CPU (0), BENCH_LOAD_CPU (1). Needs: go, taskset. CPU:
# utime+stime of serve from /proc over a load.
set -euo pipefail
(($# == 2)) || { echo "usage: acme-ab.sh OLD_MINICA NEW_MINICA" >&2; exit 2; }
for bin in "$1" "$2"; do
	if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then
		echo "acme-ab.sh: $bin is not an executable file (a minica binary)" >&2
		exit 2
	fi
done
A=$(realpath "$1") B=$(realpath "$2")
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
rounds=${BENCH_ROUNDS:-6} dur=${BENCH_DURATION:-8} clients=${BENCH_CLIENTS:-10}
port0=${BENCH_PORT:-18760}
server_cpu=${BENCH_SERVER_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "acme-ab.sh: BENCH_ROUNDS must be 1 to 99, not \"$rounds\"" >&2; exit 2; }
[[ $dur =~ ^[1-9][0-9]{0,2}$ ]] || { echo "acme-ab.sh: BENCH_DURATION must be 1 to 999 seconds, not \"$dur\"" >&2; exit 2; }
[[ $clients =~ ^[1-9][0-9]{0,2}$ ]] || { echo "acme-ab.sh: BENCH_CLIENTS must be 1 to 999, not \"$clients\"" >&2; exit 2; }
for tool in go taskset; do
	command -v "$tool" >/dev/null || { echo "acme-ab.sh: $tool not found" >&2; exit 1; }
done

bench_workdir

go build -o "$work/acmeload" ./scripts/bench/acmeload


# start W BINARY: a CA of W's own, an EAB binding for 127.0.0.1, and its
# serve on ports port0+2i (HTTPS) and port0+2i+1 (http-01).
declare -A pid_of port_of kid_of hmac_of
start() {
	local w=$1 bin=$2 i port
	i=$([[ $1 == A ]] && echo 0 || echo 1)
	port=$((port0 + 2 * i))
	export MINICA_DIR=$work/$w
	"$bin" init --cn "Bench CA $w" --no-password >/dev/null
	"$bin" issue server bench-server --dns localhost --ip 127.0.0.1 >/dev/null
	"$bin" acme account add bench --ip 127.0.0.1/32 --orders-per-hour 1000000 --accounts 10000000 --json >"$work/eab-$w.json"
	kid_of[$w]=$(sed -n 's/.*"key_id":"\([^"]*\)".*/\1/p' "$work/eab-$w.json")
	hmac_of[$w]=$(sed -n 's/.*"hmac_key":"\([^"]*\)".*/\1/p' "$work/eab-$w.json")
	taskset -c "$server_cpu" "$bin" serve --listen '' --listen-tls "127.0.0.1:$port" --server-cert bench-server \
		--acme --acme-validate-allow 127.0.0.1/32 --acme-http-port $((port + 1)) >/dev/null 2>"$work/serve-$w.log" &
	pids+=($!)
	pid_of[$w]=$!
	port_of[$w]=$port
	bench_wait_port "$port"
}
start A "$A"
start B "$B"

clk=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
run() { # W: prints CPU ms a certificate and certificates a second
	local w=$1 t0 t1 out
	t0=$(ticks "${pid_of[$w]}")
	out=$(taskset -c "$load_cpu" "$work/acmeload" -dir "https://127.0.0.1:${port_of[$w]}/acme/directory" \
		-ca "$work/$w/ca.crt" -http-port $((${port_of[$w]} + 1)) -n "$clients" -orders 10000000 \
		-duration "${dur}s" -timeout 60s -eab-kid "${kid_of[$w]}" -eab-hmac "${hmac_of[$w]}" 2>"$work/load.err") ||
		{ echo "acme-ab.sh: $w: orders failed: $out $(head -3 "$work/load.err")" >&2; exit 1; }
	t1=$(ticks "${pid_of[$w]}")
	awk -v line="$out" -v d=$((t1 - t0)) -v hz="$clk" 'BEGIN {
		k = split(line, f, " ")
		for (i = 1; i <= k; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
		if (v["certs"] == 0 || v["errors"] > 0) { print "acme-ab.sh: " line > "/dev/stderr"; exit 1 }
		printf "%.2f\t%.1f\n", 1000 * d / hz / v["certs"], v["rate"] }'
}

res=$work/res.tsv
for r in $(seq "$rounds"); do
	order="A B"
	((r % 2)) || order="B A"
	for w in $order; do
		printf '%s\t%s\t%s\n' "$r" "$w" "$(run "$w")" | tee -a "$res" >&2
	done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { # FIELD: B/A per round
	awk -F'\t' -v f="$1" '{ v[$1 " " $2] = $f; r[$1] = 1 } END { for (k in r) printf "%.3f\n", v[k " B"] / v[k " A"] }' "$res" | sort -g
}
cpu=$(ratio 3) rate=$(ratio 4)
printf '%d clients, %d rounds of %d s\n' "$clients" "$rounds" "$dur"
echo "| rounds, CPU B/A | median CPU B/A | median rate B/A | median A ms/cert | median B ms/cert |"
echo "|---|---:|---:|---:|---:|"
printf '| %s | %s | %s | %s | %s |\n' "$(tr '\n' ' ' <<<"$cpu")" "$(median <<<"$cpu")" "$(median <<<"$rate")" \
	"$(awk -F'\t' '$2 == "A" { print $3 }' "$res" | median)" "$(awk -F'\t' '$2 == "B" { print $3 }' "$res" | median)"
