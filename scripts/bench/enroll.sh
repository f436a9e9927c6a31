#!/usr/bin/env bash
# Enrollment under load, in one bounded run: BENCH_LINKS links made with
# `minica enroll` (one process each, as a script would), against `minica
# issue client` one process per certificate in the same run; then
# BENCH_DOWNLOADS downloads through `minica serve --enroll` over HTTPS
# (ECDSA P-256 keys; .p12 modern, and the signed Apple profile), with the
# latency of each; then the Go benchmark of one download on the server
# with a CPU profile, to say where its time goes. See docs/performance.md
# ("## Enrollment links").
#
#   scripts/bench/enroll.sh               1,000 links, 100 downloads (about 2 minutes)
#   BENCH_QUICK=1 scripts/bench/enroll.sh  smoke run: 50 links, 20 downloads
#
# Settings (environment): BENCH_LINKS (1000), BENCH_ISSUES (per-process
# issuances to compare with, 200), BENCH_DOWNLOADS (100), BENCH_PORT (18760).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh

if [ -n "${BENCH_QUICK:-}" ]; then
	links=${BENCH_LINKS:-50} issues=${BENCH_ISSUES:-20} downloads=${BENCH_DOWNLOADS:-20} benchtime=20x
else
	links=${BENCH_LINKS:-1000} issues=${BENCH_ISSUES:-200} downloads=${BENCH_DOWNLOADS:-100} benchtime=100x
fi
port=${BENCH_PORT:-18760}
for v in "$links" "$issues" "$downloads"; do
	[[ $v =~ ^[1-9][0-9]{0,5}$ ]] || bench_die "counts must be between 1 and 999999, not \"$v\""
done
[ "$downloads" -le "$links" ] || bench_die "BENCH_DOWNLOADS ($downloads) must not exceed BENCH_LINKS ($links)"

bench_require /usr/bin/time:time openssl:openssl
command -v go >/dev/null 2>&1 || bench_die "go is needed to build minica (see go.mod for the version)"
bench_tmpdir
work=$BENCH_TMP
serve_pid=
cleanup() {
	if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
bench_ports_free "$port" 1

bench_log "building minica and the client in $work"
bash scripts/build.sh "$work/minica"
go build -o "$work/client" ./scripts/bench/enroll
export MINICA=$work/minica MINICA_DIR=$work/ca
"$MINICA" init --cn 'Bench Root' --no-password >/dev/null
"$MINICA" issue server localhost --dns localhost --ip 127.0.0.1 >/dev/null
export base=https://127.0.0.1:$port ERR=$work/loop.err

# loop_issue N: N client certificates, one process each.
loop_issue() {
	local i
	for ((i = 1; i <= $1; i++)); do
		"$MINICA" issue client "i$i" --email "i$i@example.com" >/dev/null 2>"$ERR" || { cat "$ERR" >&2; return 1; }
	done
}
# loop_enroll N OUT: N links, one process each; their URLs go to OUT.
loop_enroll() {
	local i
	for ((i = 1; i <= $1; i++)); do
		"$MINICA" enroll "e$i" --email "e$i@example.com" --base-url "$base" --json >>"$2" 2>"$ERR" || { cat "$ERR" >&2; return 1; }
	done
}
export -f loop_issue loop_enroll

# Interleaved halves, so that a slow spell of the shared machine lands on both.
half_i=$((issues / 2)) half_l=$((links / 2))
bench_log "$issues issuances and $links links, one process each, interleaved"
: >"$work/links.json"
bench_measure issue1 "minica issue client" "$half_i" loop_issue "$half_i"
bench_measure enroll1 "minica enroll" "$half_l" loop_enroll "$half_l" "$work/links.json"
# The second halves continue the names of the first.
loop_issue2() {
	local i
	for ((i = $1 + 1; i <= $2; i++)); do
		"$MINICA" issue client "i$i" --email "i$i@example.com" >/dev/null 2>"$ERR" || { cat "$ERR" >&2; return 1; }
	done
}
loop_enroll2() {
	local i
	for ((i = $1 + 1; i <= $2; i++)); do
		"$MINICA" enroll "e$i" --email "e$i@example.com" --base-url "$base" --json >>"$3" 2>"$ERR" || { cat "$ERR" >&2; return 1; }
	done
}
export -f loop_issue2 loop_enroll2
bench_measure issue2 "minica issue client" $((issues - half_i)) loop_issue2 "$half_i" "$issues"
bench_measure enroll2 "minica enroll" $((links - half_l)) loop_enroll2 "$half_l" "$links" "$work/links.json"
[ "$(wc -l <"$work/links.json")" -eq "$links" ] || bench_die "expected $links links"
sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$work/links.json" >"$work/links.txt"
pending=$("$MINICA" enroll --list --json | wc -l)
[ "$pending" -eq "$links" ] || bench_die "enroll --list shows $pending pending links, want $links"

per() { awk -v a="$(bench_get "$1" wall)" -v b="$(bench_get "$2" wall)" -v n="$3" 'BEGIN { printf "%.2f", 1000 * (a + b) / n }'; }
issue_ms=$(per issue1 issue2 "$issues") enroll_ms=$(per enroll1 enroll2 "$links")

bench_log "starting serve --enroll on $base"
"$MINICA" serve --listen '' --listen-tls "127.0.0.1:$port" --server-cert localhost --enroll \
	--enroll-rate 100000 --enroll-rate-total 100000 2>"$work/serve.log" >/dev/null &
serve_pid=$!
bench_wait_port "$port" 30
half_d=$((downloads / 2))
bench_log "$downloads downloads: $half_d .p12, $((downloads - half_d)) signed .mobileconfig"
head -n "$half_d" "$work/links.txt" >"$work/p12.txt"
tail -n +"$((half_d + 1))" "$work/links.txt" | head -n "$((downloads - half_d))" >"$work/mc.txt"
p12=$("$work/client" -links "$work/p12.txt" -ca "$MINICA_DIR/ca.crt" -n "$half_d" -format p12)
mc=$("$work/client" -links "$work/mc.txt" -ca "$MINICA_DIR/ca.crt" -n "$((downloads - half_d))" -format mobileconfig)
grep -q token= "$work/serve.log" && bench_die "serve's log holds a token"
issued=$("$MINICA" enroll --list --all --json | grep -c '"status":"used"')
[ "$issued" -eq "$downloads" ] || bench_die "$issued links used, want $downloads"

bench_log "profiling one download on the server (go test -bench, $benchtime)"
go test -run '^$' -bench 'BenchmarkEnrollDownload/ecdsa-p256/p12$' -benchtime "$benchtime" \
	-cpuprofile "$work/cpu.prof" -o "$work/serve.test" ./serve/enroll >"$work/bench.txt"
go tool pprof -top -cum -nodecount=400 "$work/serve.test" "$work/cpu.prof" 2>/dev/null >"$work/pprof.txt"

echo
bench_machine
echo
printf '%-34s %6s %10s\n' "per process" N ms/each
printf '%-34s %6d %10s\n' "minica issue client" "$issues" "$issue_ms"
printf '%-34s %6d %10s\n' "minica enroll (create a link)" "$links" "$enroll_ms"
ratio=$(awk -v a="$enroll_ms" -v b="$issue_ms" 'BEGIN { printf "%.2f", a / b }')
echo "link / issuance: $ratio (target <= 1.00: $(bench_verdict "$ratio" "<=" 1))"
echo
printf '%-34s %6s %8s %8s %8s %8s\n' "downloads over HTTPS (ECDSA P-256)" N p50 p90 p99 max
printf '%-34s %6s %8s %8s %8s %8s ms\n' ".p12 modern" $p12
printf '%-34s %6s %8s %8s %8s %8s ms\n' ".mobileconfig, signed" $mc
worst=$(printf '%s\n%s\n' "$p12" "$mc" | awk '{ if ($4 > m) m = $4 } END { print m }')
echo "p99: $worst ms (target < 200 ms: $(bench_verdict "$worst" "<=" 199.999))"
echo
grep Benchmark "$work/bench.txt"
echo "CPU profile of the downloads (cumulative; the rest of the wall time is waiting for fsync):"
grep -m1 'Duration:' "$work/pprof.txt"
grep -E 'flat%|serve\.\(\*Enroller\)\.(issue|bundle)$|ca\.\(\*CA\)\.(Enroll|Issue|writeEnrollment)$|ca\.KeyType\.Generate$|formats\.P12Encoder\.Encode$|x509\.CreateCertificate$|pbkdf2\.Key|syscall\.Syscall6?$|linux\.Syscall6$' "$work/pprof.txt" | head -20
