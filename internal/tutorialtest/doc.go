// Package tutorialtest runs docs/tutorial.md: its test extracts every
// ```sh block of the tutorial, in order, and runs them as one bash script
// (set -euo pipefail) with a freshly built minica on PATH and a temporary
// HOME; the application is the tutorial's own `minica echo`. The only
// edits to the script are the port numbers: the application's 8080 and the
// proxy's 8443 become free ports. Its other tests run the README: the
// quick start (scripts/quickstart.sh) and the commands under "Then:".
// TestHierarchyCeremony runs the ceremony, root CRL and compromise
// commands of docs/hierarchy.md.
//
// The test is behind the interop build tag, as it needs bash, curl and the
// NSS tools (Debian packages curl and libnss3-tools):
//
//	go test -tags interop ./internal/tutorialtest/
//
// The package has no non-test code.
package tutorialtest
