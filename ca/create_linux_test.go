package ca

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// TestInitOnFullFilesystem runs Init with one more free block each time,
// so that it fails at each of its writes in turn (tmpfs blocks are pages,
// and every file Init writes takes one). A failed Init must leave no
// directory behind, so that running it again once space is freed works
// rather than finding "a CA already exists".
func TestInitOnFullFilesystem(t *testing.T) {
	mnt := mountTmpfs(t, "256k")
	dir := mnt + "/ca"
	failures := 0
	for pages := 0; ; pages++ {
		if pages > 32 {
			t.Fatalf("Init still fails with %d blocks free", pages)
		}
		free := fillLeaving(t, mnt+"/filler", pages)
		c, err := Init(dir, InitOptions{CommonName: "Full Root", FirstCRL: true})
		if err == nil {
			c.Close()
			free()
			break
		}
		failures++
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Init with %d blocks free: %v; want ENOSPC", pages, err)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("Init with %d blocks free failed (%v) and left %s holding %v; want no directory", pages, err, dir, entries)
		}
		if _, err := Init(dir, InitOptions{CommonName: "Full Root", FirstCRL: true}); errors.Is(err, ErrExists) {
			t.Fatalf("Init again with %d blocks free: %v; want the disk full, not a CA", pages, err)
		}
		free()
		c, err = Init(dir, InitOptions{CommonName: "Full Root", FirstCRL: true})
		if err != nil {
			t.Fatalf("Init again after it failed with %d blocks free: %v", pages, err)
		}
		if _, err := c.LoadCRL(); err != nil {
			t.Errorf("the CA made again after a failed Init: %v", err)
		}
		c.Close()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	// ca.key, settings.json, chain.pem, crlnumber, crl.der, crl.pem, ca.crt
	if failures != 7 {
		t.Errorf("Init failed %d times before it had room; want once at each of its 7 files", failures)
	}
}
