// Package policy is the proxy's routing policy: it compiles a policy file
// (JSON: rules, and routes by host and path prefix, each with its upstream
// and rule) into a [Policy], and decides, for one request of a verified
// client, which route it takes and whether the route's rule lets the
// client through ([Policy.Decide]).
//
// The proxy verifies the client first (chain, validity, CRL) and hands
// the policy its [identity.Identity]; the policy judges only the request's
// host and path and the identity's fields, and knows nothing of TLS, of
// upstream connections or of reloads. [LoadFile] and [Parse] report every
// error of a file at once ([Errors], each with its line and column), so
// that `minica proxy policy check` can list them. A proxy without a policy
// file routes by [OneRoute].
//
// # Decisions
//
// The request's path is cleaned first (percent-encoding normalized, dot
// segments resolved); a path no upstream would read the same way gets
// ReasonBadPath. Then the first route in file order whose host (exact,
// "*.DOMAIN" or "*") and path prefix (on a segment boundary, path
// parameters ignored) match wins: none gives ReasonNoRoute, and a Host
// that would take another route than the connection's TLS server name
// gives ReasonMisdirected. Last, the route's rule: any one clause
// matching lets the client through, else ReasonNotAllowed (or
// ReasonDaysLeft for min_days_left). The lookup costs a few map lookups
// whatever the number of routes, and a decision on a clean path with
// lowercase names does not allocate.
//
// The file's format and the matching rules are documented in
// docs/proxy.md, "Routes and policy". A Policy is immutable and safe for
// concurrent use.
package policy
