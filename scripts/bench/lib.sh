# shellcheck shell=bash
# Shared helpers for the scripts in scripts/bench. Source it from bash:
#
#	. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Every helper is prefixed bench_. Measurements go to $BENCH_TMP/results.tsv,
# one line per measurement: key, label, count, wall seconds, CPU seconds
# (user+sys of every process involved), peak RSS in KiB (the largest single
# process), all tab-separated.

# bench_log prints a progress message on stderr.
bench_log() { printf 'bench: %s\n' "$*" >&2; }

# bench_die prints an error on stderr and exits 1.
bench_die() {
	printf 'bench: error: %s\n' "$*" >&2
	exit 1
}

# bench_require CMD:PACKAGE... makes sure each command exists. Missing ones
# are installed with apt-get when running as root on a Debian-like system;
# otherwise the script stops naming the packages to install.
bench_require() {
	local spec cmd pkg missing=()
	for spec in "$@"; do
		cmd=${spec%%:*}
		pkg=${spec#*:}
		if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "$cmd" ]; then
			missing+=("$pkg")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		bench_die "missing packages: ${missing[*]} (install them, or run as root on Debian)"
	fi
	bench_log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# bench_tmpdir creates the work directory BENCH_TMP and removes it on exit.
bench_tmpdir() {
	BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/minica-bench.XXXXXX")
	trap 'rm -rf "$BENCH_TMP"' EXIT
	trap 'exit 130' INT TERM
	: >"$BENCH_TMP/results.tsv"
}

# bench_workdir makes the work directory $work and the list pids of the
# processes a script starts (append with pids+=($!)): on exit every one is
# stopped and waited for, and $work removed.
bench_workdir() {
	work=$(mktemp -d)
	pids=()
	trap _bench_stop_all EXIT
	trap 'exit 130' INT TERM
}
_bench_stop_all() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}

# bench_now_ns prints the wall clock in nanoseconds.
bench_now_ns() { date +%s%N; }

# bench_measure KEY LABEL COUNT FUNC ARGS... runs the exported shell function
# FUNC with ARGS in a child bash under /usr/bin/time, and appends a result
# line. Dirty data is written back first, untimed. CPU time and peak RSS
# cover FUNC and every process it started (the kernel carries the largest
# child's maxrss up to its parent). FUNC must return non-zero on failure; the
# script then stops.
bench_measure() {
	local key=$1 label=$2 count=$3 start end rc=0
	shift 3
	sync # start each loop with no dirty data left by the set-up or an earlier loop
	start=$(bench_now_ns)
	/usr/bin/time -f '%U %S %M' -o "$BENCH_TMP/time.out" bash -c '"$@"' _ "$@" || rc=$?
	end=$(bench_now_ns)
	[ "$rc" -eq 0 ] || bench_die "$label failed (exit $rc)"
	local user sys rss
	read -r user sys rss <"$BENCH_TMP/time.out"
	awk -v k="$key" -v l="$label" -v n="$count" -v s="$start" -v e="$end" \
		-v u="$user" -v y="$sys" -v r="$rss" \
		'BEGIN { printf "%s\t%s\t%d\t%.4f\t%.2f\t%d\n", k, l, n, (e - s) / 1e9, u + y, r }' \
		>>"$BENCH_TMP/results.tsv"
}

# bench_get KEY FIELD prints a field of a measurement: label, count, wall,
# cpu or rss.
bench_get() {
	awk -F '\t' -v k="$1" -v f="$2" '
		$1 == k {
			i = (f == "label") ? 2 : (f == "count") ? 3 : (f == "wall") ? 4 : (f == "cpu") ? 5 : 6
			print $i; found = 1; exit
		}
		END { if (!found) exit 1 }' "$BENCH_TMP/results.tsv"
}

# bench_table prints every measurement whose key matches the awk regular
# expression PATTERN: per-certificate wall time, certificates per second,
# CPU per certificate and peak RSS.
bench_table() {
	awk -F '\t' -v p="$1" '
		BEGIN { printf "%-28s %6s %10s %9s %12s %10s\n", "tool", "N", "ms/cert", "certs/s", "CPU ms/cert", "peak RSS" }
		$1 ~ p {
			printf "%-28s %6d %10.2f %9.1f %12.2f %6.1f MiB\n", $2, $3, 1000 * $4 / $3, $3 / $4, 1000 * $5 / $3, $6 / 1024
		}' "$BENCH_TMP/results.tsv"
}

# bench_verdict VALUE OP LIMIT prints "met" or "MISSED" for VALUE OP LIMIT,
# where OP is ">=" or "<=".
bench_verdict() {
	awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
		ok = (op == ">=") ? (v >= l) : (v <= l)
		print ok ? "met" : "MISSED"
	}'
}

# bench_machine prints the machine the benchmark ran on.
bench_machine() {
	local model
	model=$(awk -F ': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
	printf 'date:    %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
	printf 'cpu:     %s x %s\n' "$(nproc)" "${model:-unknown}"
	printf 'kernel:  %s\n' "$(uname -sr)"
	printf 'fs:      %s\n' "$(df -PT "$BENCH_TMP" | awk 'NR == 2 { print $2 }') (the disk holding ${TMPDIR:-/tmp})"
	printf 'tools:   %s; %s; %s\n' "$(go version | cut -d' ' -f3)" "$(openssl version | cut -d' ' -f1-2)" \
		"easy-rsa $(dpkg-query -W -f '${Version}' easy-rsa 2>/dev/null || echo unknown)"
}

# bench_ports_free FIRST COUNT stops the script when one of the COUNT
# loopback ports from FIRST is taken.
bench_ports_free() {
	local p
	for ((p = $1; p < $1 + $2; p++)); do
		if (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then bench_die "port $p is in use (set BENCH_PORT)"; fi
	done
}

# bench_wait_port PORT [SECONDS] waits until something listens on the
# loopback PORT (default 10 s), and stops the script otherwise.
bench_wait_port() {
	local i
	for ((i = 0; i < ${2:-10} * 10; i++)); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	bench_die "nothing listens on port $1"
}
