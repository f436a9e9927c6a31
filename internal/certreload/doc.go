// Package certreload holds the TLS certificate a server presents, loaded
// again while it serves: when its owner says so (a reload tick, SIGHUP),
// or, with a MaxAge, by the handshakes themselves once the certificate
// held is that old. A load runs outside the lock that guards the
// certificate held, so that no handshake waits for another's load, and a
// failed load keeps the last good certificate. The proxy and serve share it.
package certreload
