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
