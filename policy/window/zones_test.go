package window

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestZoneCache: a name is loaded once however often and however
// concurrently it is asked for; a name that does not load is not kept (it
// fails each time); past its bound the cache keeps no more names, and
// still answers.
func TestZoneCache(t *testing.T) {
	var mu sync.Mutex
	loads := map[string]int{}
	load := func(name string) (*time.Location, error) {
		mu.Lock()
		loads[name]++
		mu.Unlock()
		if name == "Nowhere/Atlantis" {
			return nil, errors.New("unknown time zone")
		}
		return time.FixedZone(name, 3600), nil
	}
	c := newZoneCache(load, 3)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := c.location("Europe/Berlin"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	berlin, _ := c.location("Europe/Berlin")
	for range 3 {
		if loc, _ := c.location("Europe/Berlin"); loc != berlin {
			t.Fatalf("Europe/Berlin: %p, then %p; want one location", berlin, loc)
		}
		if _, err := c.location("Nowhere/Atlantis"); err == nil {
			t.Fatal("Nowhere/Atlantis loaded")
		}
	}
	// Concurrent first loads may each load, but keep one.
	if loads["Europe/Berlin"] > 8 || loads["Nowhere/Atlantis"] != 3 {
		t.Errorf("loads %v: want Europe/Berlin loaded at most once per first caller, Nowhere/Atlantis at each of its 3 calls", loads)
	}
	for i := range 4 {
		name := fmt.Sprintf("Etc/Zone%d", i)
		a, err := c.location(name)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := c.location(name); a.String() != name || b.String() != name {
			t.Fatalf("%s: %s then %s", name, a, b)
		}
	}
	if len(c.byName) != 3 {
		t.Errorf("kept %d zones, want the bound, 3", len(c.byName))
	}
	// Kept: Europe/Berlin, Etc/Zone0, Etc/Zone1; Etc/Zone2 and Etc/Zone3
	// are loaded again each time.
	if loads["Etc/Zone1"] != 1 || loads["Etc/Zone2"] != 2 || loads["Etc/Zone3"] != 2 {
		t.Errorf("loads %v: want the zones within the bound loaded once, those past it each time", loads)
	}
}
