// Package certreload holds the TLS certificate a server presents, loaded
// again while it serves: when its owner says so (a reload tick, SIGHUP),
// or, with a MaxAge, by the handshakes themselves once the certificate
// held is that old. A load runs outside the lock that guards the
// certificate held, so that no handshake waits for another's load, and a
// failed load keeps the last good certificate.
//
// It is the one reloader of a server certificate: package proxy holds its
// own in a Cert (loaded again by Proxy.Reload), and cmd/minica gives
// `minica serve` its HTTPS certificate through one with a MaxAge, so that
// a renewed certificate is served without a signal. It knows nothing of
// where the certificate comes from: the caller's load function reads it.
package certreload
