package serverconf

import (
	"testing"
	"time"

	"minica/ca"
)

func TestChooseSchedule(t *testing.T) {
	tests := []struct {
		lifetime time.Duration
		want     string // the schedule's label
		wantErr  string
	}{
		{lifetime: 30 * 24 * time.Hour, want: "1d"},
		{lifetime: 7 * 24 * time.Hour, want: "1d"},
		{lifetime: 4 * 24 * time.Hour, want: "1d"},
		{lifetime: 3 * 24 * time.Hour, want: "12h"},
		{lifetime: 24 * time.Hour, want: "6h"},
		{lifetime: 23 * time.Hour, want: "4h"},
		{lifetime: 4 * time.Hour, want: "1h"},
		{lifetime: time.Hour, want: "15m"},
		{lifetime: 20 * time.Minute, want: "5m"},
		{lifetime: 19 * time.Minute, wantErr: "the CA's CRL lifetime 19m is too short for a scheduled job (at least 20m)"},
	}
	for _, tt := range tests {
		t.Run(tt.lifetime.String(), func(t *testing.T) {
			s, err := chooseSchedule(tt.lifetime)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("chooseSchedule(%s) error = %v; want %q", tt.lifetime, err, tt.wantErr)
				}
				return
			}
			if err != nil || s.label != tt.want {
				t.Fatalf("chooseSchedule(%s) = %q, %v; want %q", tt.lifetime, s.label, err, tt.want)
			}
			if s.every > tt.lifetime/4 {
				t.Errorf("chooseSchedule(%s) runs every %s: more than a quarter of the lifetime", tt.lifetime, s.every)
			}
		})
	}
}

func TestSchedulesAgree(t *testing.T) {
	for _, s := range schedules {
		if got := ca.FormatDuration(s.every); got != s.label {
			t.Errorf("schedule every %s is labelled %q; want %q", s.every, s.label, got)
		}
		if (24*time.Hour)%s.every != 0 {
			t.Errorf("schedule every %s does not divide a day", s.every)
		}
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{7 * 24 * time.Hour, "7d"},
		{24 * time.Hour, "1d"},
		{36 * time.Hour, "36h"},
		{6 * time.Hour, "6h"},
		{90 * time.Minute, "1h30m"},
		{10 * time.Minute, "10m"},
		{90 * time.Second, "1m30s"},
	}
	for _, tt := range tests {
		if got := ca.FormatDuration(tt.d); got != tt.want {
			t.Errorf("ca.FormatDuration(%s) = %q; want %q", tt.d, got, tt.want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/minica", "--dir", "/srv/ca", "crl"}, "/usr/bin/minica --dir /srv/ca crl"},
		{[]string{"minica", "--dir", "/srv/my ca"}, "minica --dir '/srv/my ca'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"echo", "$HOME;rm"}, "echo '$HOME;rm'"},
	}
	for _, tt := range tests {
		if got := shellJoin(tt.args); got != tt.want {
			t.Errorf("shellJoin(%q) = %s; want %s", tt.args, got, tt.want)
		}
	}
}
