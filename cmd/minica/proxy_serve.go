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

	"minica/proxy"
)

// serveProxy listens, serves until SIGTERM or SIGINT (or ctx), reloads on
// SIGHUP, and drains in-flight requests for up to o.shutdown before it
// returns nil.
func serveProxy(ctx context.Context, e *env, p *proxy.Proxy, o *proxyOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return listenHint(fmt.Errorf("listening on %q: %w", o.listen, err), o.listen, "--listen")
	}
	where := fmt.Sprintf("minica proxy: listening on %s, forwarding to %s", ln.Addr(), o.cfg.Upstream)
	if o.cfg.PolicyFile != "" {
		where = fmt.Sprintf("minica proxy: listening on %s, routing by the policy %s", ln.Addr(), o.cfg.PolicyFile)
	}
	var metrics *http.Server
	if o.metrics != "" {
		mln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			ln.Close()
			return listenHint(fmt.Errorf("listening for metrics on %q: %w", o.metrics, err), o.metrics, "--metrics")
		}
		metrics = metricsServer(p)
		go metrics.Serve(mln)
		defer metrics.Close()
		where += fmt.Sprintf(", metrics on %s", mln.Addr())
	}
	fmt.Fprintln(e.stdout, where)
	go warnUpstreamsDown(ctx, e, p)

	serveCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- p.Serve(serveCtx, ln) }()
	for {
		select {
		case <-hup:
			p.Reload() // logs and counts its own failures
			if o.logFile != nil {
				if err := o.logFile.Reopen(); err != nil {
					warnf(e.stderr, "%v; still writing to the previous file", err)
				}
			}
		case err := <-served:
			if err != nil {
				return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
			}
			return nil
		case <-ctx.Done():
			return drainProxy(e, p, served, o.shutdown)
		}
	}
}

// drainProxy stops accepting and waits up to timeout for in-flight
// requests; what is left after it is closed. Either way the proxy stopped
// as asked, so it is not an error.
func drainProxy(e *env, p *proxy.Proxy, served <-chan error, timeout time.Duration) error {
	fmt.Fprintf(e.stderr, "minica proxy: stopping; draining in-flight requests for up to %s\n", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		warnf(e.stderr, "requests still running after --shutdown-timeout %s were cut off", timeout)
	} else if err != nil {
		warnf(e.stderr, "shutting down: %v", err)
	}
	if err := <-served; err != nil {
		warnf(e.stderr, "serving: %v", err)
	}
	fmt.Fprintln(e.stderr, "minica proxy: stopped")
	return nil
}

// metricsServer serves the proxy's /metrics and /healthz.
func metricsServer(p *proxy.Proxy) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", p.MetricsHandler())
	mux.Handle("GET /healthz", p.HealthHandler())
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
}

// upstreamCheckTimeout bounds the start-up check of the upstreams: long
// enough for a loaded machine, short enough that the warning comes with
// the start.
const upstreamCheckTimeout = 2 * time.Second

// warnUpstreamsDown warns on stderr of each upstream that accepts no
// connection at start, with the cause, while the proxy serves: never an
// error, since apps often start after their proxy.
func warnUpstreamsDown(ctx context.Context, e *env, p *proxy.Proxy) {
	for _, f := range p.DialUpstreams(ctx, upstreamCheckTimeout) {
		if ctx.Err() != nil {
			return // stopping: a dial cut short says nothing of the upstream
		}
		warnf(e.stderr, "upstream %s does not accept connections: %s (%v); requests get 502 until it does",
			f.Upstream, upstreamCauseWords(f.Cause), f.Err)
	}
}

// upstreamCauseWords says what an upstream failure's cause (a
// proxy.ReasonUpstream constant) means for the person who starts the proxy.
func upstreamCauseWords(cause string) string {
	switch cause {
	case proxy.ReasonUpstreamRefused:
		return "nothing listens there (is the app running, on that port?)"
	case proxy.ReasonUpstreamDNS:
		return "its host name does not resolve"
	case proxy.ReasonUpstreamTimeout:
		return fmt.Sprintf("no answer within %s", upstreamCheckTimeout)
	}
	return "connecting failed"
}
