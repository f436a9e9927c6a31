// Package httptoken tells an RFC 9110 token (section 5.6.2) from other
// text: the grammar of a header field's name and of a request method.
//
// The proxy asks it of every header name it sends upstream, on every
// request, and package identity of every custom header name it is given;
// one table answers both, so that a name the configuration accepts is one
// the proxy sends.
package httptoken
