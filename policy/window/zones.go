package window

import (
	"sync"
	"time"
)

// maxZones bounds the time zones kept: tzdata has about 600 names, and
// the name a window gives comes from a tenant, so a name kept is one that
// loaded, and no more than this many are ever kept (past it, a zone is
// loaded again each time it is named, as it was before there was a cache).
const maxZones = 1024

// zoneCache keeps the time zones loaded, by name: time.LoadLocation reads
// and decodes a tzdata file at every call (a manager of 64 policies of 16
// windows took 20 ms to parse, each window loading its zone). A
// *time.Location is immutable once loaded, and safe to share between
// goroutines and managers.
type zoneCache struct {
	// load is time.LoadLocation; a test counts the loads through it.
	load func(name string) (*time.Location, error)
	max  int

	mu     sync.RWMutex
	byName map[string]*time.Location
}

// zones is the cache Parse uses.
var zones = newZoneCache(time.LoadLocation, maxZones)

func newZoneCache(load func(string) (*time.Location, error), max int) *zoneCache {
	return &zoneCache{load: load, max: max, byName: map[string]*time.Location{}}
}

// location is the time zone named name, loaded once while there is room;
// a name that does not load is not kept.
func (c *zoneCache) location(name string) (*time.Location, error) {
	c.mu.RLock()
	loc, ok := c.byName[name]
	c.mu.RUnlock()
	if ok {
		return loc, nil
	}
	loc, err := c.load(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.byName[name]; ok {
		return kept, nil // another parse loaded it meanwhile: one pointer per name
	}
	if len(c.byName) < c.max {
		c.byName[name] = loc
	}
	return loc, nil
}
