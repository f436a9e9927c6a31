package enroll

import (
	"encoding/base64"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/formats"
)

// browserHeaders are what a browser sends with the form's POST.
var browserHeaders = []string{
	"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
	"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0",
}

// savedFile finds the page's link that saves the bundle and returns the
// file name and the bytes it saves.
func savedFile(t *testing.T, body string) (string, []byte) {
	t.Helper()
	m := regexp.MustCompile(`<a [^>]*href="data:([^;"]+);base64,([^"]+)"[^>]* download="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page has no link that saves the file:\n%s", body)
	}
	data, err := base64.StdEncoding.DecodeString(html.UnescapeString(m[2]))
	if err != nil {
		t.Fatalf("the saved file is not base64: %v", err)
	}
	return m[3], data
}

// pageText is the text of an HTML page: tags dropped, spaces folded.
func pageText(body string) string {
	return strings.Join(strings.Fields(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, " "))), " ")
}

// After Download, a browser gets a page that says the file was made, what
// it is called, how to open it here and what its password is for, and
// saves the file from the page: the bundle exists in that answer only.
func TestEnrollReadyPage(t *testing.T) {
	f := newEnrollFixture(t, nil)
	for _, tt := range []struct{ name, format, file string }{
		{"simon", "p12", "simon.p12"},
		{"sara", "p12-compat", "sara-compat.p12"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			token := f.create(t, tt.name, ca.EnrollIdentity{}, time.Hour)
			rec := f.send(t, enrollReq{token: token, form: download(f.csrf(t, token), testPassword, tt.format), header: browserHeaders})
			body := rec.Body.String()
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Fatalf("download from a browser = %d %q; want 200 and a page:\n%s", rec.Code, rec.Header().Get("Content-Type"), body)
			}
			if cd := rec.Header().Get("Content-Disposition"); cd != "" {
				t.Errorf("the page came as a download (Content-Disposition %q)", cd)
			}
			recs := f.clientRecords(t, tt.name)
			if len(recs) != 1 {
				t.Fatalf("records = %d; want the one issued", len(recs))
			}
			file, data := savedFile(t, body)
			wantFile := tt.file
			if file != wantFile {
				t.Errorf("the page saves %q; want %q", file, wantFile)
			}
			if _, leaf, _, err := formats.DecodeP12(data, testPassword); err != nil || ca.SerialHex(leaf.SerialNumber) != recs[0].Serial {
				t.Errorf("the saved file does not open with the password, or holds another certificate: %v", err)
			}
			text := pageText(body)
			until := recs[0].NotAfter.UTC().Format("2 January 2006")
			for _, want := range []string{
				"Your certificate is ready", wantFile,
				"valid until " + until,
				"not a password to sign in", "no page shows it again",
				"pk12util -i ~/Downloads/" + wantFile + " -d sql:$HOME/.pki/nssdb",
				"Installing on Linux",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("the page after Download lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(body, testPassword) {
				t.Error("the page after Download shows the password")
			}
			// The link is used: opened again, it says so.
			if again := f.send(t, enrollReq{token: token}); again.Code != http.StatusNotFound || !strings.Contains(again.Body.String(), "already used") {
				t.Errorf("the link after Download = %d:\n%s", again.Code, again.Body)
			}
		})
	}
}

// A program (no text/html in Accept) gets the file itself, and so does an
// Apple profile in a browser: Safari hands a downloaded profile to
// Settings, which says what comes next.
func TestEnrollDownloadIsTheFileOutsidePages(t *testing.T) {
	f := newEnrollFixture(t, nil)
	for _, tt := range []struct {
		name, format string
		header       []string
	}{
		{"program", "p12", []string{"Accept", "*/*"}},
		{"profile", "mobileconfig", browserHeaders},
	} {
		token := f.create(t, tt.name, ca.EnrollIdentity{}, time.Hour)
		rec := f.send(t, enrollReq{token: token, form: download(f.csrf(t, token), testPassword, tt.format), header: tt.header})
		if cd := rec.Header().Get("Content-Disposition"); rec.Code != http.StatusOK || !strings.HasPrefix(cd, "attachment;") {
			t.Errorf("%s: download = %d, Content-Disposition %q; want the file", tt.name, rec.Code, cd)
		}
	}
}

// The form says in words what the certificate and the files are: no
// "365d", no bare ".p12" or "modern/compatible".
func TestEnrollPageWords(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	rec := f.send(t, enrollReq{token: token, header: browserHeaders})
	text := pageText(rec.Body.String())
	for _, want := range []string{
		"valid for 1 year from the download",
		"Certificate file (.p12) for current systems",
		"Certificate file (.p12) for older systems",
		"Windows 8.1 and older, Windows Server 2016 and older",
		"pk12util -i ~/Downloads/simon.p12 -d sql:$HOME/.pki/nssdb",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"365d", "modern", "compatible .p12", "FILE.p12"} {
		if strings.Contains(text, bad) {
			t.Errorf("the page says %q:\n%s", bad, text)
		}
	}
}

// humanDuration says a validity as a person would.
func TestHumanDuration(t *testing.T) {
	day := 24 * time.Hour
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{365 * day, "1 year"}, {730 * day, "2 years"}, {90 * day, "90 days"}, {day, "1 day"},
		{36 * time.Hour, "36 hours"}, {time.Hour, "1 hour"}, {90 * time.Minute, "1h30m"},
	} {
		if got := humanDuration(tt.d); got != tt.want {
			t.Errorf("humanDuration(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
}
