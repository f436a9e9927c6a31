// Command minica is a mutual-TLS private CA toolkit: it creates a private
// certificate authority, issues server and client certificates, and keeps
// their records. See the README and docs/ for the whole tour.
package main

import (
	"context"
	"os"
)

// main installs no signal handler: an interrupted command dies at once,
// which the CA directory is built to survive (see ca.Check), and a command
// started once per certificate does not pay for one. `minica proxy` handles
// SIGTERM, SIGINT and SIGHUP itself.
func main() {
	os.Exit(run(context.Background(), os.Args, newEnv()))
}
