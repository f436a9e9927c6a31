// Package tutorialtest runs docs/tutorial.md: its test extracts every
// ```sh block of the tutorial, in order, and runs them as one bash script
// (set -euo pipefail) with a freshly built minica on PATH, a temporary
// HOME, and an application on 127.0.0.1 that echoes the headers it gets.
// The only edits to the script are the port numbers: the application's
// 8080 and the proxy's 8443 become free ports.
//
// The test is behind the interop build tag, as it needs bash, curl and the
// NSS tools (Debian packages curl and libnss3-tools):
//
//	go test -tags interop ./internal/tutorialtest/
//
// The package has no non-test code.
package tutorialtest
