package cadir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadsLeaveAccessTimes checks that the CA directory's reads (ReadFile
// and Scanner) leave a file's access time as it was,
// where a plain read on the same filesystem updates it: under relatime an
// updated access time is an inode that the next syncfs writes back.
func TestReadsLeaveAccessTimes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rec")
	if err := os.WriteFile(file, []byte("record line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	setOld := func() {
		t.Helper()
		if err := os.Chtimes(file, old, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	atime := func() time.Time {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(file, &st); err != nil {
			t.Fatal(err)
		}
		return time.Unix(st.Atim.Unix())
	}

	setOld()
	if _, err := os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if atime().Equal(old) {
		t.Skipf("skipped: the filesystem of %s does not update access times on read (mounted noatime)", dir)
	}

	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	setOld()
	data, err := d.ReadFile("rec")
	if err != nil || string(data) != "record line\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if got := atime(); !got.Equal(old) {
		t.Errorf("after Dir.ReadFile the access time is %v, want %v unchanged", got, old)
	}

	s, err := OpenScanner(d.root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	setOld()
	data, err = s.Read("rec", nil)
	if err != nil || string(data) != "record line\n" {
		t.Fatalf("Scanner.Read = %q, %v", data, err)
	}
	if got := atime(); !got.Equal(old) {
		t.Errorf("after Scanner.Read the access time is %v, want %v unchanged", got, old)
	}
}

// TestOpenNoAtimeFallsBack checks that a file the kernel will not open with
// O_NOATIME (another user's: EPERM) is opened without it, and that any
// other error is returned as it is.
func TestOpenNoAtimeFallsBack(t *testing.T) {
	var flags []int
	open := func(flag int) (int, error) {
		flags = append(flags, flag)
		if flag&syscall.O_NOATIME != 0 {
			return -1, syscall.EPERM
		}
		return 7, nil
	}
	fd, err := openNoAtime(open)
	if fd != 7 || err != nil {
		t.Fatalf("openNoAtime = %d, %v; want 7, nil", fd, err)
	}
	if len(flags) != 2 || flags[0] != os.O_RDONLY|syscall.O_NOATIME || flags[1] != os.O_RDONLY {
		t.Errorf("flags tried = %#o, want O_RDONLY|O_NOATIME then O_RDONLY", flags)
	}

	flags = nil
	_, err = openNoAtime(func(flag int) (int, error) { flags = append(flags, flag); return -1, syscall.ENOENT })
	if !errors.Is(err, syscall.ENOENT) || len(flags) != 1 {
		t.Errorf("openNoAtime on a missing file = %v after %d opens; want ENOENT after one", err, len(flags))
	}
}
