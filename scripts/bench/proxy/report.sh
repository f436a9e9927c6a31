#!/usr/bin/env bash
# report.sh RESULTS.tsv TLS KEX CRL_ENTRIES: the Markdown table, ratios to
# nginx and target checks of a proxy.sh run, on stdout.
set -euo pipefail
awk -F'\t' -v tls="$2" -v kex="$3" -v entries="$4" '
NR == 1 { next }
{ name[NR] = $1; rps[$1] = $2; p99[$1] = $3; req[$1] = $4; hps[$1] = $5; hp99[$1] = $6; hs[$1] = $7; order[++n] = $1 }
function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
function verdict(ok) { return ok ? "**met**" : "**missed**" }
END {
	printf "| proxy | keep-alive req/s | p99 ms | CPU us/req | handshakes/s | p99 ms | CPU us/handshake |\n"
	printf "|---|---:|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %d | %.2f | %.1f | %d | %d | %d |\n", s, rps[s], p99[s], req[s], hps[s], hp99[s], hs[s]
	}
	printf "\nTLS: %s, key exchange %s; 100k CRL: %d entries.\n\n", tls, kex, entries
	printf "| ratio to nginx | req/s | p99 | CPU/req | handshakes/s | CPU/handshake |\n|---|---:|---:|---:|---:|---:|\n"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %s | %s | %s | %s | %s |\n", s, r(rps[s], rps["nginx"]), r(p99[s], p99["nginx"]), r(req[s], req["nginx"]), r(hps[s], hps["nginx"]), r(hs[s], hs["nginx"])
	}
	m = "minica"; b = "minica-100k"; g = "nginx"
	printf "\nTargets:\n"
	printf "- CPU per full handshake <= 0.7x nginx: %s x, %s\n", r(hs[m], hs[g]), verdict(hs[m] <= 0.7 * hs[g])
	printf "- CPU per keep-alive request <= 2x nginx: %s x, %s\n", r(req[m], req[g]), verdict(req[m] <= 2 * req[g])
	printf "- keep-alive p99 <= 2x nginx: %s x, %s\n", r(p99[m], p99[g]), verdict(p99[m] <= 2 * p99[g])
	dr = (rps[m] - rps[b]) / rps[m] * 100; dh = (hps[m] - hps[b]) / hps[m] * 100
	cr = (req[b] - req[m]) / req[m] * 100; ch = (hs[b] - hs[m]) / hs[m] * 100
	# The rate one core sustains is 1 / CPU per operation: the verdict uses
	# the CPU figures, which the load core and the neighbours disturb less.
	printf "- 100k CRL costs < 5%% of either rate (per core, from CPU): CPU/req %+.1f%%, CPU/handshake %+.1f%% (measured req/s %+.1f%%, handshakes/s %+.1f%%), %s\n", cr, ch, -dr, -dh, verdict(cr < 5 && ch < 5)
}' "$1"
