//go:build interop

package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// browserSession is a headless Chromium driven through the DevTools
// protocol, with a fresh profile and the NSS database of home.
type browserSession struct {
	ctx       context.Context
	downloads string
	// docs, when set, is a directory that gets a recompressed copy of
	// each screenshot (see shot).
	docs string
}

func newBrowser(t *testing.T, home string) *browserSession {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath("chromium"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("HOME=" + home),
		chromedp.WindowSize(820, 1100),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox,
	}
	for _, f := range chromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browserSession{ctx: ctx, downloads: t.TempDir()}
	// The first Run starts the browser: no timeout on it (see chromedp.Run).
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: b.downloads,
		})
		return err
	})); err != nil {
		t.Fatalf("starting headless Chromium: %v", err)
	}
	return b
}

// do runs steps within 30 seconds; a failure names the page the browser
// is at.
func (b *browserSession) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b.where())
	}
}

// where describes the page the browser is at, read within 5 seconds, for
// a failure message.
func (b *browserSession) where() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	return fmt.Sprintf("the browser is at %s, which says:\n%s", loc, text)
}

// text returns the text of the page's body.
func (b *browserSession) text(t *testing.T) string {
	t.Helper()
	return run1(t, b, "reading the page", chromedp.Text(chromedp.CSS("body")))
}

// run1 runs the action a, within a minute.
func run1[T any](t *testing.T, b *browserSession, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// textOf returns the text of the element with id.
func (b *browserSession) textOf(t *testing.T, id string) string {
	t.Helper()
	return run1(t, b, "reading #"+id, chromedp.Text(chromedp.ID(id)))
}

// attr returns the attribute name of the element with id ("" if absent).
func (b *browserSession) attr(t *testing.T, id, name string) string {
	t.Helper()
	return run1(t, b, "reading #"+id+" "+name, chromedp.AttributeValue(chromedp.ID(id), name)).Value
}

// location returns the URL of the page.
func (b *browserSession) location(t *testing.T) string {
	t.Helper()
	return run1(t, b, "reading the location", chromedp.Location())
}

// present reports whether the page has an element with id, without
// waiting for one.
func (b *browserSession) present(t *testing.T, id string) bool {
	t.Helper()
	return run1(t, b, "looking for #"+id, chromedp.Evaluate[bool](fmt.Sprintf("document.getElementById(%q) !== null", id)))
}

// shotWidth is the width of every page screenshot: the window's.
const shotWidth = 820

// shot saves a PNG of the whole page as dir/name.png, after checking that
// it is one, as wide as the window and at least a screen high; and a copy,
// recompressed, in b.docs when it is set (see toDocs). Only the DOM text is compared with what the page should
// say, so the test does not depend on fonts.
func (b *browserSession) shot(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	data, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if sz := img.Bounds().Size(); sz.X != shotWidth || sz.Y < 400 {
		t.Errorf("screenshot %s is %dx%d; want %d wide and at least 400 high", name, sz.X, sz.Y, shotWidth)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	toDocs(t, b.docs, name, img)
	t.Logf("screenshot: %s", filepath.Join(dir, name+".png"))
}

// toDocs writes img, recompressed with smallPNG, as docs/name.png when
// docs is set: a test sets it from its environment variable (such as
// MINICA_ENROLL_DOCS) to refresh the screenshots of the docs.
func toDocs(t *testing.T, docs, name string, img image.Image) {
	t.Helper()
	if docs == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(docs, name+".png"), smallPNG(t, img), 0o644); err != nil {
		t.Fatal(err)
	}
}

// smallPNG encodes img for the docs with a palette of its 256 most common
// colours: a page's flat colours stay exact, only a few shades of its
// anti-aliased text move to a neighbour, and the file is a third of the
// size.
func smallPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := slices.SortedFunc(maps.Keys(count), func(a, b color.RGBA) int { return count[b] - count[a] })
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(len(colors), 256)] {
		pal = append(pal, c)
	}
	small := image.NewPaletted(b, pal)
	draw.Src.Draw(small, b, img, b.Min)
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, small); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// pageSays checks that the text of the page, spaces folded, holds each of
// want.
func (b *browserSession) pageSays(t *testing.T, state string, want ...string) {
	t.Helper()
	text := strings.Join(strings.Fields(b.text(t)), " ")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the %s page lacks %q:\n%s", state, w, text)
		}
	}
}

// download waits (bounded) for the file name to finish downloading and
// returns its content.
func (b *browserSession) download(t *testing.T, name string) []byte {
	t.Helper()
	path := filepath.Join(b.downloads, name)
	var data []byte
	err := waitFor(30*time.Second, func() error {
		var err error
		if data, err = os.ReadFile(path); err != nil || len(data) == 0 {
			entries, _ := os.ReadDir(b.downloads)
			return fmt.Errorf("no %s in the downloads yet (%d entries)", name, len(entries))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}
