#!/usr/bin/env bash
# `minica agent` at rest and at work: its resident memory (VmRSS and the
# peak VmHWM from /proc/PID/status) while it waits for a renewal that is not
# due, how often it runs while it waits (the context switches of all its
# threads, voluntary and not, from /proc/PID/task/*/status, and its own
# wakeups, one log line each), and the same while it renews a short-lived
# certificate every few seconds. See docs/performance.md ("## Agent: idle
# memory and wakeups") for the method and the last results.
#
#   scripts/bench/agent.sh              full run (about 2 minutes)
#   BENCH_QUICK=1 scripts/bench/agent.sh   smoke run: 10 s windows
#
# Settings (environment): BENCH_IDLE (seconds of the idle window, 60),
# BENCH_BUSY (seconds of the renewing window, 40), BENCH_PORT (18890),
# BENCH_MINICA (a minica binary to use instead of building ./cmd/minica).
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh

if [ -n "${BENCH_QUICK:-}" ]; then
	idle=${BENCH_IDLE:-10} busy=${BENCH_BUSY:-10}
else
	idle=${BENCH_IDLE:-60} busy=${BENCH_BUSY:-40}
fi
port=${BENCH_PORT:-18890}
[[ $idle =~ ^[1-9][0-9]{0,3}$ ]] || bench_die "BENCH_IDLE must be between 1 and 9999, not \"$idle\""
[[ $busy =~ ^[1-9][0-9]{0,3}$ ]] || bench_die "BENCH_BUSY must be between 1 and 9999, not \"$busy\""

bench_tmpdir
bench_ports_free "$port" 1
minica=${BENCH_MINICA:-}
if [ -z "$minica" ]; then
	bench_log "building minica"
	go build -o "$BENCH_TMP/minica" ./cmd/minica
	minica=$BENCH_TMP/minica
fi
export MINICA_DIR=$BENCH_TMP/ca
"$minica" init --cn 'Bench Root' --no-password >/dev/null
"$minica" issue server pki --dns localhost --ip 127.0.0.1 >/dev/null
"$minica" serve --listen '' --listen-tls "127.0.0.1:$port" --server-cert pki >"$BENCH_TMP/serve.out" 2>"$BENCH_TMP/serve.log" &
serve_pid=$!
trap 'kill $serve_pid $agent_pid 2>/dev/null; rm -rf "$BENCH_TMP"' EXIT
agent_pid=
bench_wait_port "$port"

# ctxsw PID: the context switches of every thread of PID, voluntary and not.
ctxsw() {
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/ { n += $2 } END { print n + 0 }'
}
# kib FIELD PID: a field of /proc/PID/status in KiB.
kib() { awk -v f="$1:" '$1 == f { print $2 }' /proc/"$2"/status; }

# window NAME CERT-VALIDITY RENEW-AT SECONDS: copies a fresh certificate,
# starts the agent, lets it settle for 2 s, then measures SECONDS.
window() {
	local name=$1 validity=$2 at=$3 secs=$4 svc=$BENCH_TMP/$1 s0 s1 w0 w1
	mkdir -p "$svc"
	"$minica" issue client "$name" --email "$name@example.com" --validity "$validity" >/dev/null
	cp "$MINICA_DIR/certs/$name/current.crt" "$svc/svc.crt"
	cp "$MINICA_DIR/certs/$name/current.key" "$svc/svc.key"
	"$minica" agent --url "https://127.0.0.1:$port" --ca "$MINICA_DIR/ca.crt" --cert "$svc/svc.crt" \
		--key "$svc/svc.key" --renew-at "$at" --exec true 2>"$svc/agent.log" &
	agent_pid=$!
	sleep 2
	s0=$(ctxsw "$agent_pid") w0=$(grep -c ' agent-waiting ' "$svc/agent.log" || true)
	sleep "$secs"
	s1=$(ctxsw "$agent_pid") w1=$(grep -c ' agent-waiting ' "$svc/agent.log" || true)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$secs" "$((s1 - s0))" "$((w1 - w0))" \
		"$(grep -c ' agent-renewed ' "$svc/agent.log" || true)" "$(kib VmRSS "$agent_pid")" "$(kib VmHWM "$agent_pid")" >>"$BENCH_TMP/results.tsv"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null || true
	agent_pid=
}

bench_log "idle: a certificate of 1 hour, not due for 35 minutes, ${idle}s"
window idle 1h 0.66 "$idle"
# 5m20s lives 20 s past its issuance (notBefore is backdated 5 minutes);
# at 0.97 it is due 10.4 s after its issuance: a renewal every ~10 s.
bench_log "busy: certificates that renew every ~10 s, ${busy}s"
window busy 5m20s 0.97 "$busy"

bench_machine
printf '\n%-6s %8s %14s %14s %9s %10s %10s\n' window seconds ctx-switches agent-wakeups renewals 'RSS KiB' 'peak KiB'
awk -F'\t' '{ printf "%-6s %8s %14s %14s %9s %10s %10s\n", $1, $2, $3, $4, $5, $6, $7 }' "$BENCH_TMP/results.tsv"
idle_rss=$(awk -F'\t' '$1 == "idle" { print $7 }' "$BENCH_TMP/results.tsv")
busy_rss=$(awk -F'\t' '$1 == "busy" { print $7 }' "$BENCH_TMP/results.tsv")
idle_wakes=$(awk -F'\t' '$1 == "idle" { print $4 }' "$BENCH_TMP/results.tsv")
printf '\ntarget: idle peak RSS under 20 MiB: %s KiB, %s\n' "$idle_rss" "$(bench_verdict "$idle_rss" '<=' 20480)"
printf 'target: renewing peak RSS under 20 MiB: %s KiB, %s\n' "$busy_rss" "$(bench_verdict "$busy_rss" '<=' 20480)"
printf 'target: no wakeup of the agent while nothing is due: %s, %s\n' "$idle_wakes" "$(bench_verdict "$idle_wakes" '<=' 0)"
