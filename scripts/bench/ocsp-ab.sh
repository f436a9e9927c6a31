#!/usr/bin/env bash
# Paired A/B of two minica binaries on the dedicated OCSP listener
# (`serve --listen-ocsp`): the server's CPU per answer and its answers a
# second, for a good and a revoked serial, loaded as scripts/bench/serve.sh
# loads it (scripts/bench/serve/rate: 16 clients, keep-alive POSTs of an
# `openssl ocsp -reqout` request, every answer checked), A and B alternated
# in each round (A B, then B A). On a shared machine one binary's figures
# move by tens of percent between runs; the ratio B/A of loads that followed
# each other, then its median over the rounds, is the figure to read.
#
#   scripts/bench/ocsp-ab.sh OLD_MINICA NEW_MINICA
#
# Settings (environment): BENCH_ROUNDS (8), BENCH_DURATION (rate seconds,
# 5), BENCH_CONNS (16), BENCH_PORT (first of 2 ports, 18650),
# BENCH_SERVER_CPU (0), BENCH_LOAD_CPU (1). Needs: go, openssl, taskset.
# CPU: utime+stime of serve from /proc over the measured answers (a
# second's load before, unmeasured, opens the connections and fills the
# responder's cache).
set -euo pipefail
(($# == 2)) || { echo "usage: ocsp-ab.sh OLD_MINICA NEW_MINICA" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
rounds=${BENCH_ROUNDS:-8} dur=${BENCH_DURATION:-5} conns=${BENCH_CONNS:-16}
port=${BENCH_PORT:-18650} ocsp_port=$((${BENCH_PORT:-18650} + 1))
server_cpu=${BENCH_SERVER_CPU:-0} load_cpu=${BENCH_LOAD_CPU:-1}
for tool in go openssl taskset; do
	command -v "$tool" >/dev/null || { echo "ocsp-ab.sh: $tool not found" >&2; exit 1; }
done

bench_workdir

go build -o "$work/rate" ./scripts/bench/serve/rate
export MINICA_DIR=$work/ca
"$A" init --cn "Bench CA" --no-password >/dev/null
"$A" issue client alice --email alice@example.com >/dev/null
"$A" issue client bob --email bob@example.com >/dev/null
"$A" revoke bob --reason keyCompromise >/dev/null
for who in alice bob; do
	openssl ocsp -issuer "$MINICA_DIR/ca.crt" -cert "$(ls "$MINICA_DIR"/certs/$who/*.crt | head -1)" \
		-no_nonce -reqout "$work/$who.req" >/dev/null 2>&1
done

wait_port() {
	local i
	for i in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "ocsp-ab.sh: nothing listens on port $1" >&2
	exit 1
}
clk=$(getconf CLK_TCK)
ticks() { # utime+stime of pid $1
	local f
	f=$(sed 's/.*) //' "/proc/$1/stat")
	set -- $f
	echo $((${12} + ${13}))
}
run() { # BINARY WHO: prints CPU us per answer and answers a second
	local pid t0 t1 out n failed
	taskset -c "$server_cpu" "$1" serve --listen "127.0.0.1:$port" --listen-ocsp "127.0.0.1:$ocsp_port" >/dev/null 2>"$work/serve.log" &
	pid=$!
	pids+=("$pid")
	wait_port "$ocsp_port"
	local load=(taskset -c "$load_cpu" "$work/rate" -body "$work/$2.req" -c "$conns" -warmup 0)
	"${load[@]}" -d 1s "http://127.0.0.1:$ocsp_port/" >/dev/null
	t0=$(ticks "$pid")
	out=$("${load[@]}" -d "${dur}s" "http://127.0.0.1:$ocsp_port/")
	t1=$(ticks "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	n=$(cut -f1 <<<"$out") failed=$(cut -f2 <<<"$out")
	[ "$failed" = 0 ] || { echo "ocsp-ab.sh: $failed of $n answers failed" >&2; exit 1; }
	awk -v d=$((t1 - t0)) -v n="$n" -v hz="$clk" -v rps="$(cut -f3 <<<"$out")" 'BEGIN {printf "%.2f\t%s\n", d / hz * 1e6 / n, rps}'
}

res=$work/res.tsv
for r in $(seq "$rounds"); do
	for who in alice bob; do
		order="A B"
		((r % 2)) || order="B A"
		for w in $order; do
			bin=$A
			[[ $w == B ]] && bin=$B
			printf '%s\t%s\t%s\t%s\n' "$r" "$who" "$w" "$(run "$bin" "$who")" | tee -a "$res" >&2
		done
	done
done
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| serial | rounds, CPU B/A | median CPU B/A | median rate B/A | median A us/answer | median B us/answer |"
echo "|---|---|---:|---:|---:|---:|"
for who in alice bob; do
	ratio() { # FIELD: B/A per round
		awk -F'\t' -v p="$who" -v f="$1" '$2 == p {v[$1 " " $3] = $f; r[$1] = 1}
			END {for (k in r) printf "%.3f\n", v[k " B"] / v[k " A"]}' "$res" | sort -g
	}
	cpu=$(ratio 4) rate=$(ratio 5)
	ma=$(awk -F'\t' -v p="$who" '$2 == p && $3 == "A" {print $4}' "$res" | median)
	mb=$(awk -F'\t' -v p="$who" '$2 == p && $3 == "B" {print $4}' "$res" | median)
	name=good
	[[ $who == bob ]] && name=revoked
	printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$(echo $cpu)" "$(median <<<"$cpu")" "$(median <<<"$rate")" "$ma" "$mb"
done
