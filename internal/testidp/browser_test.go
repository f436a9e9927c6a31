//go:build interop

package testidp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestChromiumSignsInThroughTheForm proves the login form's element ids in
// a real browser: headless Chromium, at the application on 127.0.0.1, is
// sent to the provider on localhost, is refused a wrong password, signs in
// and comes back with a code the application redeems.
func TestChromiumSignsInThroughTheForm(t *testing.T) {
	returns := make(chan *url.URL, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		back := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		select {
		case returns <- back:
		default: // only the first request counts
		}
		fmt.Fprint(w, `<!DOCTYPE html><p id="back">back at the application</p>`)
	}))
	t.Cleanup(app.Close)
	callback := app.URL + "/signin/callback"
	p := startFor(t, callback)
	r := newRPFor(t, p, callback)
	a, authURL := r.begin()

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath("chromium"),
		chromedp.UserDataDir(t.TempDir()), chromedp.Headless, chromedp.NoSandbox, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.DisableGPU)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, time.Minute)
	defer cancel()

	fill := func(password string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.WaitVisible(chromedp.ID("username")),
			chromedp.SendKeys(chromedp.ID("username"), simon.Username),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Click(chromedp.ID("submit")),
		}
	}
	steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(authURL)}, fill("wrong")...)
	if err := chromedp.Do(ctx, append(steps, chromedp.WaitVisible(chromedp.ID("error")))...); err != nil {
		t.Fatalf("a wrong password through the form: %v", err)
	}
	reason, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("error")))
	if err != nil || !strings.Contains(reason, "username or password wrong") {
		t.Fatalf("the refusal says %q (%v); want the reason", reason, err)
	}
	if err := chromedp.Do(ctx, append(fill(simon.Password), chromedp.WaitVisible(chromedp.ID("back")))...); err != nil {
		t.Fatalf("signing in through the form: %v", err)
	}
	select {
	case back := <-returns:
		a = r.returned(t, a, back)
	case <-ctx.Done():
		t.Fatal("the application saw no return from the provider")
	}
	if _, idt := r.finish(t, a); idt.Subject != simon.Username {
		t.Errorf("sub = %q; want %q", idt.Subject, simon.Username)
	}
}
