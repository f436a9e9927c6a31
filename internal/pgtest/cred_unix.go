//go:build unix

package pgtest

import (
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

type credential = syscall.Credential

// nobody returns the credential of the user nobody.
func nobody() (*credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// runAs makes cmd run as cred, when set.
func runAs(cmd *exec.Cmd, cred *credential) {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
}
