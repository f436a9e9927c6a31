package main

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"minica/ca"
	"minica/ca/store/pg"
	"minica/revoke"
)

// errorHint chooses what to tell a person about an error of the packages
// below cmd, by its kind (errors.Is and errors.As): their errors state what
// happened, and the advice, which names commands and flags, is chosen here,
// in one place. A hint added where the error is made (withHint) wins.
func errorHint(err error) string {
	var lockErr *ca.LockError
	switch {
	case errors.As(err, &lockErr):
		return fmt.Sprintf("wait for the other minica to finish, or raise --lock-timeout (now held by pid %d)", lockErr.PID)
	case errors.Is(err, ca.ErrNoPending):
		return "create one with 'minica init --intermediate --cn NAME --csr-out FILE'"
	case errors.Is(err, ca.ErrNoCA):
		return "create one with 'minica init --cn NAME', or point --dir / MINICA_DIR at an existing CA"
	case errors.Is(err, ca.ErrExists):
		return "choose another --dir; minica never overwrites a CA"
	case errors.Is(err, ca.ErrUnfinished):
		return "if no CA was ever completed there, remove the directory and run init again; minica never deletes a CA key"
	case errors.Is(err, ca.ErrNameTaken):
		return "revoke it first, pass --force to issue a second one, or choose another name"
	case errors.Is(err, ca.ErrOutlivesCA):
		return "pass a shorter --validity"
	case errors.Is(err, ca.ErrValidityTooShort):
		return "pass a --validity longer than " + ca.FormatDuration(ca.Backdate)
	case errors.Is(err, ca.ErrTypeNotPermitted):
		return "a CA created with --permit-* permits only the name types it names"
	case errors.Is(err, ca.ErrRootCA):
		return "a root signs intermediates: 'minica --dir ROOTDIR sign-intermediate CSR'; issue leaves with an intermediate's --dir (see docs/hierarchy.md)"
	case errors.Is(err, ca.ErrPending):
		return "carry its CSR (intermediate.csr) to the root for 'minica sign-intermediate', then import the certificate with 'minica init --intermediate --import CERT --root-crl FILE'"
	case errors.Is(err, ca.ErrCAPinMismatch):
		return "compare --ca-fingerprint with what 'minica inspect ca.crt' prints on the CA host; if it is right, the CA certificate was changed on its way here: copy it again over a path you trust"
	case errors.Is(err, ca.ErrCorruptRevocationLog):
		return "run 'minica check': it repairs what an interrupted revocation left"
	}
	if hint := storeHint(err); hint != "" {
		return hint
	}
	if hint := leftHint(err); hint != "" {
		return hint
	}
	return tokenHint(err)
}

// leftHint is errorHint for what a command left for check to complete or
// settle. It comes after storeHint: a lost lock's hint says more.
func leftHint(err error) string {
	switch {
	case errors.Is(err, ca.ErrIssuanceIncomplete):
		return "run 'minica check': it completes what the issuance left"
	case errors.Is(err, ca.ErrCopySourceUnreadable):
		return "run 'minica check' first: it repairs what it can and reports the rest"
	}
	return ""
}

// storeHint is errorHint for a PostgreSQL store.
func storeHint(err error) string {
	var schemaErr *pg.SchemaError
	switch {
	case errors.As(err, &schemaErr) && schemaErr.Found > pg.SchemaVersion:
		return "upgrade minica; it never writes to a newer schema"
	case errors.As(err, &schemaErr):
		return "run 'minica store migrate'"
	case errors.Is(err, pg.ErrReadOnlyStore):
		return "point --store at the primary; a server with default_transaction_read_only on takes no writes either"
	case errors.Is(err, ca.ErrStoreLockLost):
		return "run 'minica check', which repairs what the command left, then run the command again to complete it"
	}
	return ""
}

// tokenHint is errorHint for a CA key in a PKCS#11 token.
func tokenHint(err error) string {
	switch {
	case errors.Is(err, ca.ErrPINInURI):
		return "pass the PIN with --pin-file FILE or the " + pinEnv + " environment variable, or type it at the prompt"
	case errors.Is(err, ca.ErrWrongPIN):
		return "check --pin-file or " + pinEnv + "; a token locks its PIN after a few wrong ones"
	case errors.Is(err, ca.ErrPINLocked):
		return "for SoftHSM2: softhsm2-util --init-pin needs the SO PIN; other tokens have their own tool"
	case errors.Is(err, ca.ErrTokenNotFound):
		return "is the token plugged in, and is its label right? softhsm2-util --show-slots or pkcs11-tool --list-token-slots lists them"
	case errors.Is(err, ca.ErrModuleNotFound):
		return "install the token's PKCS#11 library (SoftHSM2: apt-get install softhsm2), or correct module-path in the key URI"
	case errors.Is(err, ca.ErrModuleInit):
		return "check the module's own configuration (SoftHSM2: SOFTHSM2_CONF and the tokendir it names)"
	case errors.Is(err, ca.ErrKeyNotFound):
		return "a CA certificate's key cannot be replaced; restore the token from its backup, or make a new CA"
	case errors.Is(err, ca.ErrKeyExists):
		return "to make a CA of that key pass --existing-key; else choose another object= name"
	case errors.Is(err, ca.ErrPKCS11Unsupported):
		return "build minica with cgo (CGO_ENABLED=1 go build ./cmd/minica); see 'CA keys in an HSM' in docs/hierarchy.md"
	}
	return ""
}

// listenHint adds to err, the failure to listen on addr, what to do when
// another process holds the address: flag is the command's flag that
// chooses it (--listen, --metrics, ...).
func listenHint(err error, addr, flag string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return withHint(err, "another process listens on %s: stop it, or choose another port with %s", addr, flag)
	}
	return err
}

// crlIssuerHint is the hint of a CRL refused as another CA's (a
// *revoke.IssuerError in err): where is the CRL's place ("at URL", "in
// FILE"), whose names the CA it was checked against ("this CA", "the CA of
// --ca"), and check what to look at. The mistake is the source or the CA
// given, never a CRL left unpublished. It returns "" for other errors.
func crlIssuerHint(err error, where, whose, check string) string {
	var ie *revoke.IssuerError
	switch {
	case !errors.As(err, &ie):
		return ""
	case ie.OtherKey:
		return fmt.Sprintf("the CRL %s is signed by another key named %q than %s: was the CA made again under the same name? %s", where, ie.CRLIssuer, whose, check)
	}
	return fmt.Sprintf("the CRL %s is signed by %q, not by %s (%q): %s", where, ie.CRLIssuer, whose, ie.CA, check)
}

// crlExpiredAdvice is what to do about a CRL past its nextUpdate. remote
// is set when the CRL comes from elsewhere (a --crl URL or file): the
// fresh one is made on the CA host.
func crlExpiredAdvice(remote bool) string {
	if remote {
		return "on the CA host, publish a fresh one with 'minica crl', or run 'minica serve' there, which re-signs it before it lapses"
	}
	return "publish a fresh one with 'minica crl', or run 'minica serve', which re-signs it before it lapses"
}

// crlExpiredHint is the hint of a CRL of the CA directory that expired at
// nextUpdate.
func crlExpiredHint(nextUpdate time.Time) string {
	return fmt.Sprintf("the CRL expired at %s: %s", nextUpdate.UTC().Format(time.RFC3339), crlExpiredAdvice(false))
}
