package ca

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses Go duration syntax ("36h", "90m") and, in addition,
// whole or fractional days and years with the suffixes d and y ("90d",
// "10y"). A year is 365 days. Negative and zero durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %s: want a positive number with a unit, such as 90d, 10y, 36h or 30m", printable(s))
	var d time.Duration
	if unit := strings.TrimLeft(s, "0123456789."); unit == "d" || unit == "y" {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, unit), 64)
		if err != nil {
			return 0, bad
		}
		day := 24 * float64(time.Hour)
		if unit == "y" {
			day *= 365
		}
		if n*day > float64(1<<62) {
			return 0, bad
		}
		d = time.Duration(n * day)
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad
		}
	}
	if d <= 0 {
		return 0, bad
	}
	return d, nil
}

// FormatDuration prints d in days when it is a positive whole number of
// days ("825d"), else in Go syntax without zero minutes and seconds ("6h",
// "90m", "1h30m"). ParseDuration reads every form it prints.
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
