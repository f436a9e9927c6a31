//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
)

type credential struct{ Uid, Gid uint32 }

func nobody() (*credential, error) {
	return nil, errors.New("switching users needs a Unix system")
}

func runAs(*exec.Cmd, *credential) {}
