#!/usr/bin/env bash
# Writes to stdout the benchmark's policy of 1,000 routes, each with a rule
# of several clauses, all to the upstream on 127.0.0.1:UPSTREAM_PORT: exact
# hosts, wildcards, other paths of the benchmark's host and paths of other
# hosts; the last one is the route the requests take (host 127.0.0.1, as
# wrk and ab send it, CN bench-client), so that no route is skipped unseen.
# Used by proxy.sh (minica-1000) and proxy-ab.sh --routes.
#
#   scripts/bench/proxy/policy-1000.sh UPSTREAM_PORT > policy.json
set -euo pipefail
(($# == 1)) || { echo "usage: policy-1000.sh UPSTREAM_PORT" >&2; exit 2; }
other='"allow": {"cn": ["bob", "carol", "dave"], "ou": ["Ops"], "email_domain": ["example.org"], "uri": ["spiffe://example.com/ns/prod/*"]}'
up="\"upstream\": \"http://127.0.0.1:$1\""
printf '{"routes": [\n'
for i in $(seq 0 998); do
	case $((i % 4)) in
	0) printf '{"host": "app%d.example.com", %s, %s},\n' "$i" "$up" "$other" ;;
	1) printf '{"host": "*.team%d.example.com", %s, %s},\n' "$i" "$up" "$other" ;;
	2) printf '{"host": "127.0.0.1", "path": "/api/v%d", %s, %s},\n' "$i" "$up" "$other" ;;
	3) printf '{"host": "svc%d.internal", "path": "/admin", %s, %s},\n' "$i" "$up" "$other" ;;
	esac
done
printf '{"host": "127.0.0.1", %s, "allow": {"cn": ["bob", "bench-client"], "min_days_left": 1}}\n]}\n' "$up"
