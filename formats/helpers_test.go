package formats_test

import (
	"encoding/pem"
	"errors"
	"strconv"
)

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func itoa(n int) string { return strconv.Itoa(n) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
