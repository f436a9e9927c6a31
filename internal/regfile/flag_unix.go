//go:build unix

package regfile

import "syscall"

// oNonBlock makes opening a FIFO return at once instead of waiting for a
// writer; on a regular file it changes nothing.
const oNonBlock = syscall.O_NONBLOCK
