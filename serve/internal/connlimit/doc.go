// Package connlimit bounds the connections of one of serve's listeners,
// whichever HTTP server reads them: at most Max are open, and when a new
// one comes and all are taken, the oldest that is not in a request (still
// sending its headers, or idle between requests) is closed to make room;
// only when every connection is in a request is the new one closed
// instead. So clients that open connections and trickle headers
// (slowloris) hold no slot against a client that sends a request.
//
// The HTTP server marks a connection in a request with [Conn.Begin] and
// [Conn.End]: for net/http, [Listener.ConnContext] and [Listener.Track]
// do it; another server calls them from its handler.
package connlimit
