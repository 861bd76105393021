package window

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BenchmarkParseWindows parses, per op, the windows of a manager at nsman's
// CRD bounds (64 policies × 16 windows, eight time zones; 1,024 zones
// named): with the zones kept once loaded, and with every window loading
// its zone again (a cache that keeps nothing, as Parse did before zones
// were kept).
func BenchmarkParseWindows(b *testing.B) {
	names := []string{"Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "Europe/London", "America/Sao_Paulo", "Asia/Kolkata", "Africa/Johannesburg"}
	policies := make([][]any, 64)
	for i := range policies {
		for j := range MaxWindows {
			policies[i] = append(policies[i], map[string]any{"days": []any{"Mon", "Tue"}, "from": "22:00", "to": "06:00", "timeZone": names[(i+j)%len(names)]})
		}
	}
	for _, bc := range []struct {
		name  string
		cache *zoneCache
	}{
		{"kept", newZoneCache(time.LoadLocation, maxZones)},
		{"loadedEachTime", newZoneCache(time.LoadLocation, 0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(kept *zoneCache) { zones = kept }(zones)
			zones = bc.cache
			b.ReportAllocs()
			for b.Loop() {
				for i, raw := range policies {
					if _, errs := Parse(raw, field.NewPath(fmt.Sprint(i)), true); len(errs) > 0 {
						b.Fatal(errs)
					}
				}
			}
		})
	}
}

// BenchmarkDates parses, per op, a policy's windows at the CRD's bounds of
// dates (16 windows of 366 ranges each), and asks the next opening of a
// window whose dates, from now on, are 365 ranges of which none falls on
// its days before the last: the longest scan NextOpen makes.
func BenchmarkDates(b *testing.B) {
	raw := make([]any, MaxWindows)
	for i := range raw {
		dates := make([]any, MaxDates)
		for j := range dates {
			dates[j] = fmt.Sprintf("%04d-06-01..%04d-06-03", 2000+i*MaxDates/16+j, 2000+i*MaxDates/16+j)
		}
		raw[i] = map[string]any{"dates": dates, "from": "22:00", "to": "06:00", "timeZone": "Europe/Berlin"}
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := Parse(raw, field.NewPath("windows"), true); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	var dates []string
	for y := 2026; y < 2026+MaxDates-1; y++ {
		if d := dayOf(y, 6, 1); d.weekday() != time.Friday && d.weekday() != time.Saturday && d.weekday() != time.Sunday {
			dates = append(dates, fmt.Sprintf("%04d-06-01..%04d-06-03", y, y))
		}
	}
	dates = append(dates, "9999-12-26") // a Sunday
	w := dated(time.UTC, 9*60, 10*60, []time.Weekday{time.Sunday}, dates...)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Run("nextOpen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if NextOpen([]Window{w}, now).IsZero() {
				b.Fatal("never opens")
			}
		}
	})
}
