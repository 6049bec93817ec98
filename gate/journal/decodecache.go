//go:build linux

package journal

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
)

// The checkpoint decode cache. A process that reads the same gates again
// and again (cron-gate serve: every refresh of every page; the watchdog's
// metrics) finds most summary.json files unchanged: their bytes are
// compared with the last ones decoded for that gate directory, and an
// identical file is not decoded again. The decoded value is a function of
// the bytes alone, so this cannot change an answer; only the bytes are
// trusted, never a file's size or time. A one-shot command pays one map
// entry per gate.

// decodeCacheMax bounds the directories remembered; past it the cache is
// emptied (a state dir with more gates than that decodes as before).
const decodeCacheMax = 4096

var decodeCache struct {
	sync.Mutex
	m map[string]decoded
}

type decoded struct {
	data string
	s    Summary
}

// decodeSummary decodes summary.json's bytes read from dir into s, as
// json.Unmarshal would, from the cache when dir's last decoded bytes are
// the same.
func decodeSummary(dir string, data []byte, s *Summary) error {
	decodeCache.Lock()
	c, ok := decodeCache.m[dir]
	decodeCache.Unlock()
	if ok && c.data == string(data) {
		c.s.copyTo(s)
		return nil
	}
	if err := json.Unmarshal(data, s); err != nil {
		return err
	}
	var keep Summary
	s.copyTo(&keep)
	decodeCache.Lock()
	if decodeCache.m == nil || len(decodeCache.m) >= decodeCacheMax {
		decodeCache.m = map[string]decoded{}
	}
	decodeCache.m[dir] = decoded{data: string(data), s: keep}
	decodeCache.Unlock()
	return nil
}

// copyTo copies s into d, deep enough that folding records into d (apply,
// ReapVanished) never changes s: the maps and the slice are copied; the
// events are shared, as they are never changed in place.
func (s *Summary) copyTo(d *Summary) {
	*d = *s
	d.Running = maps.Clone(s.Running)
	d.Waiting = maps.Clone(s.Waiting)
	d.Skips = maps.Clone(s.Skips)
	d.Recent = slices.Clone(s.Recent)
	d.problems = nil
}
