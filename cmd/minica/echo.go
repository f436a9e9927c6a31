package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"minica/internal/endpoint"
	"minica/proxy"
)

const defaultEchoListen = "127.0.0.1:8080"

func echoCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "echo",
		Usage: "a demo app for the proxy: it answers with the request line and headers it received",
		Description: "Serves plain HTTP on --listen (default " + defaultEchoListen + ") and answers every request\n" +
			"with its request line and headers, sorted, one per line: run it behind 'minica proxy'\n" +
			"(or nginx, Apache, HAProxy) to see the identity headers your app would get. It never\n" +
			"reads request bodies; bytes outside printable ASCII come back as \\xNN. It logs one\n" +
			"line per request on stderr and stops on SIGTERM or Ctrl-C.\n\n" +
			"Example:\n   minica echo &\n   minica proxy --server-cert web1 --upstream http://127.0.0.1:8080",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultEchoListen, Usage: "serve HTTP on `ADDR` (PORT for every address, or HOST:PORT; port 0 picks a free one)"},
		},
		Action: func(c *cli.Context) error { return runEcho(c, e) },
	}
}

func runEcho(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	host, port, err := endpoint.ParseListen(c.String("listen"))
	if err != nil {
		return usagef(c, "--listen %v", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	addr := net.JoinHostPort(host, port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return listenHint(fmt.Errorf("listening on %q: %w", c.String("listen"), err), addr, "--listen")
	}
	echo := proxy.EchoHandler()
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(e.stderr, "minica echo: %s %q from %s\n", r.Method, r.RequestURI, r.RemoteAddr)
			echo.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	fmt.Fprintf(e.stdout, "minica echo: listening on http://%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		warnf(e.stderr, "shutting down: %v", err)
	}
	fmt.Fprintln(e.stderr, "minica echo: stopped")
	return nil
}
