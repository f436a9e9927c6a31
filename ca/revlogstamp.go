package ca

// RevocationLogStamp returns the stamp of the revocation log (db/revoked.log)
// without reading it, so that a long-running reader notices a revocation
// made by another process at the cost of one lstat. A CA that never revoked
// anything has no log: the zero stamp and no error.
func (c *CA) RevocationLogStamp() (FileStamp, error) { return c.db.RevocationStamp() }
