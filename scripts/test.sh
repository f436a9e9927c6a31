#!/usr/bin/env bash
# The full test suite, as the README gives it: installs the Debian packages
# the tests need (when run as root and they are missing), checks gofmt, go
# vet, a build and vet for every release target, and staticcheck (pinned in
# go.mod), then runs every test with the race detector, including the
# interop checks against real peers, and the tests of each fast twin a
# second time on its standard path.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package that provides it
declare -A packages=(
	[openssl]=openssl
	[curl]=curl
	[pk12util]=libnss3-tools
	[certtool]=gnutls-bin
	[java]=default-jdk-headless
	[nginx]=nginx
	[apache2]=apache2
	[haproxy]=haproxy
	[systemd-analyze]=systemd
	[chromium]=chromium
	[softhsm2-util]=softhsm2
	[initdb]=postgresql
	[catalina.sh]=tomcat10
	[strace]=strace
	[certbot]=certbot
	[lego]=lego
	[dnsmasq]=dnsmasq
	[caddy]=caddy
)

# Debian keeps initdb and pg_ctl out of PATH, in /usr/lib/postgresql/N/bin;
# internal/pgtest looks there too.
for bin in /usr/lib/postgresql/*/bin; do
	[[ -x $bin/initdb ]] && PATH=$PATH:$bin
done
# Debian keeps Tomcat's catalina.sh in /usr/share/tomcat10/bin;
# internal/servertest looks there too.
[[ -x /usr/share/tomcat10/bin/catalina.sh ]] && PATH=$PATH:/usr/share/tomcat10/bin

missing=()
for cmd in "${!packages[@]}"; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("${packages[$cmd]}")
done
if ((${#missing[@]})); then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "test.sh: installing ${missing[*]}"
		# Keep apt from starting the servers it installs: the tests run
		# their own on 127.0.0.1.
		policy=/usr/sbin/policy-rc.d
		[[ -e $policy ]] || { printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && trap 'rm -f "$policy"' EXIT; }
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "test.sh: missing ${missing[*]}: install them (Debian packages) or run as root" >&2
		exit 1
	fi
fi

echo "test.sh: gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "test.sh: go vet"
go vet ./...
go vet -tags interop ./...

# Every release target builds, and every operating system vets (test
# files included), so that no platform breaks silently. No file of the
# module depends on the architecture, so one architecture per system is
# vetted: a second finds nothing the first did not, and costs a minute on
# a cold cache. The interop tests run real servers on this (Linux) machine
# only, so the loop vets without their tag.
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64 windows/amd64 windows/arm64)
for target in "${targets[@]}"; do
	echo "test.sh: go build for $target"
	GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build ./...
	if [[ ${target#*/} == amd64 ]]; then
		echo "test.sh: go vet for $target"
		GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet ./...
	fi
done
if git ls-files '*.go' | grep -qE '_(amd64|arm64|386|arm|riscv64)(_test)?\.go$'; then
	echo "test.sh: a file depends on the architecture: vet every target again" >&2
	exit 1
fi

# staticcheck, pinned by go.mod's tool directive (go tool staticcheck).
echo "test.sh: staticcheck"
go tool staticcheck ./...
go tool staticcheck -tags interop ./...

# One pass: unit, CLI and loopback tests, plus (tag interop) the checks
# against real peers that the packages above provide.
echo "test.sh: go test -race -tags interop"
go test -race -count=1 -timeout 30m -tags interop ./...

# The standard path of serve's dedicated OCSP listener (net/http instead of
# fasthttp, the build tag stdocsp): its tests again on that path.
echo "test.sh: go test -race -tags interop,stdocsp (serve's OCSP listener on net/http)"
go vet -tags interop,stdocsp ./serve/...
go tool staticcheck -tags interop,stdocsp ./serve/...
go test -race -count=1 -timeout 30m -tags interop,stdocsp ./serve/...
go test -race -count=1 -timeout 30m -tags interop,stdocsp -run 'ListenOCSP|ServeProcessOCSP|TestScripts/serve_listen_ocsp' ./cmd/minica

# The standard path of the record decoder (encoding/json for every record
# line, the build tag stdrecordjson): the tests of the CA and its storage
# engines, which read records, again on that path. The decoder shares no
# state, so the race detector and the peers of the interop tests (which
# check certificates, not records) add only time here.
echo "test.sh: go test -tags stdrecordjson (records through encoding/json)"
go vet -tags interop,stdrecordjson ./ca/...
go tool staticcheck -tags interop,stdrecordjson ./ca/...
go test -count=1 -timeout 30m -tags stdrecordjson ./ca/...

# The proxy's tests again with the standard forwarding alone: the direct
# way (proxy/internal/h1direct) is a twin of httputil.ReverseProxy, and
# every behaviour they check holds without it too. MINICA_PROXY_STANDARD
# is read by the proxy's tests and by minica proxy (--standard-forwarding),
# so the commands' proxy tests run that way too.
echo "test.sh: go test -race -tags interop, the proxy with MINICA_PROXY_STANDARD=1"
MINICA_PROXY_STANDARD=1 go test -race -count=1 -timeout 30m -tags interop ./proxy/...
MINICA_PROXY_STANDARD=1 go test -race -count=1 -timeout 30m -tags interop -run Proxy ./cmd/minica
