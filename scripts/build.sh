#!/usr/bin/env bash
# Builds the release minica binary: static (no cgo, so no dynamic loader at
# start-up) and without urfave/cli's man-page generator, which minica does
# not use. A CLI run once per certificate pays its start-up every time.
# Usage: scripts/build.sh [OUTPUT]   (default ./minica)
set -euo pipefail
out=${1:-minica}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o "$out" ./cmd/minica
