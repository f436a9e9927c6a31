package ca

import filestore "minica/ca/store/file"

// The file store's layout, as the tests of the CA directory reach into it.
const (
	revlogFile   = filestore.RevocationLog
	nameIndexDir = filestore.NameIndexDir
	enrollDir    = filestore.EnrollDir
	lockFile     = filestore.LockFile
)

type logFile = filestore.LogFile

var (
	recordPath    = filestore.RecordPath
	nameIndexPath = filestore.NameIndexPath
)
