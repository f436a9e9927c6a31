// Package serverconf writes the configuration files that put a server in
// front of an app with this CA's mutual TLS: nginx, Apache and HAProxy
// front ends, and the cron or systemd jobs that republish the CRL and reload
// the server (or run `minica proxy`); the systemd unit that runs `minica
// serve` on the CA host ([SystemdServe]); the one that runs `minica agent`
// for a certificate on a service host ([SystemdAgent]); and, for a web server host with
// no CA directory, the timer that fetches the CRL from serve and reloads
// the server when it changed ([CRLFetch], with [Front.OnHost] pointing the
// server's configuration at the same files).
//
// Every function is pure: CA facts in ([Front], [Job], [Serve], [Agent], [Fetch]),
// text out. Nothing
// here reads the CA directory, the clock or the environment; the caller
// (cmd/minica) resolves the flags, opens the CA and chooses the server
// certificate with ca.CA.ServerCert.
//
// # Paths
//
// The files are read by a server or a job that runs elsewhere (nginx as its
// own user, cron from /), so every path in a Front or a Job must be absolute;
// the functions refuse a relative one.
//
// # Identity headers
//
// The front ends forward the client identity under the header names of
// `minica proxy`'s default profile ([identity.ProfileMinica]), taken from
// package identity, where the proxy takes them too: they set CN, email, DN,
// serial and verify result, and remove every name of the profile the client
// sent, in both the '-' and the '_' spelling.
package serverconf
