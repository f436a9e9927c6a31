package cadir

import "syscall"

// oNoAtime is added to the flags of every read-only open of a file of the
// CA directory: reading a record or a certificate then leaves its inode
// clean. Under relatime (the default mount option) the first read of a file
// written since its last read updates its access time, so planning a
// renewal over 10^5 fresh records would dirty 10^5 inodes, and the first
// group's syncfs would write them all back before the first successor is
// reported. minica never uses access times. The kernel allows the flag
// only to the file's owner (or CAP_FOWNER): openNoAtime retries without it.
const oNoAtime = syscall.O_NOATIME
