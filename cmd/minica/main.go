// Command minica is a mutual-TLS private CA toolkit: it creates a private
// certificate authority, issues server and client certificates, and keeps
// their records. See the README and docs/ for the whole tour.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, newEnv())
	stop()
	os.Exit(code)
}
