//go:build !unix

package regfile

// oNonBlock is 0 where there is no O_NONBLOCK (Windows, whose named pipes
// live outside the file system): the check after opening remains.
const oNonBlock = 0
