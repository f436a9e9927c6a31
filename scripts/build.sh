#!/usr/bin/env bash
# Builds the release minica binary: static (no cgo, so no dynamic loader at
# start-up) and without urfave/cli's man-page generator, which minica does
# not use. A CLI run once per certificate pays its start-up every time.
#
# Usage: scripts/build.sh [OUTPUT]   this machine's binary (default ./minica)
#        scripts/build.sh --release [DIR]
#            one binary per release target (default DIR: dist), named
#            minica-GOOS-GOARCH (.exe on Windows)
set -euo pipefail
cd "$(dirname "$0")/.."
build() { CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o "$1" ./cmd/minica; }

if [[ ${1:-} != --release ]]; then
	build "${1:-minica}"
	exit
fi
dir=${2:-dist}
mkdir -p "$dir"
# The same list as scripts/test.sh's build-and-vet loop.
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64 windows/amd64 windows/arm64; do
	os=${target%/*} arch=${target#*/}
	out=$dir/minica-$os-$arch
	[[ $os == windows ]] && out+=.exe
	GOOS=$os GOARCH=$arch build "$out"
	echo "$out"
done
