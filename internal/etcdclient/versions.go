//go:build linux

package etcdclient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/statefile"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// VersionCheck is a check of the members' server versions, started by
// CheckVersions and running alongside the caller's own requests.
type VersionCheck struct {
	done chan struct{}
	old  []string // "3.4.23 (member 8e9e05c52164694d)"
}

// member is one member's answer to a Status request.
type member struct {
	ID      uint64 `json:"id"`
	Version string `json:"version"`
}

// VersionsMaxAge is how long the versions read from every member are
// trusted (the version cache).
const VersionsMaxAge = 10 * time.Minute

// CheckVersions starts reading the server versions of the members behind
// c's endpoints, in the background (Warning waits for it):
//
//   - the member c is connected to is asked (one Status request, on the
//     client's own connection), on every call;
//   - the others' versions come from the version cache, when it holds an
//     answer of every endpoint younger than VersionsMaxAge, for the same
//     cluster and with the member just asked among them;
//   - otherwise every endpoint is asked, each on a connection of its own,
//     and the answers that came within askWait are written to the cache.
//
// So a call pays one request, and one call in ten minutes a connection
// per member. A member that does not answer within timeout (askWait for
// a full check) is not reported. The cache is a file of the user's cache dir
// ($XDG_CACHE_HOME or ~/.cache: withlock/etcd-versions.json); when it
// cannot be used every call asks every member.
func CheckVersions(c *Client, timeout time.Duration) *VersionCheck {
	v := &VersionCheck{done: make(chan struct{})}
	go func() {
		defer close(v.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var members []member
		r, err := pb.NewMaintenanceClient(c.ActiveConnection()).Status(ctx, &pb.StatusRequest{}) // any member
		if err == nil && r.Header != nil {
			live := member{r.Header.MemberId, r.Version}
			members = cachedVersions(c.eps, r.Header.ClusterId, live, time.Now())
		}
		if members == nil {
			members = askAll(ctx, c)
		}
		for _, m := range members {
			if safe, _ := SafeVersion(m.Version); !safe {
				// A version is the server's word, or the cache file's:
				// escaped, as any text from outside.
				shown := safetext.Cut(m.Version, 40)
				if shown == "" {
					shown = "(no version)"
				}
				v.old = append(v.old, fmt.Sprintf("%s (member %x)", shown, m.ID))
			}
		}
	}()
	return v
}

// askAll asks every endpoint for its member's version, each on a
// connection of its own, and waits at most askWait for the answers, or
// until ctx ends. It caches the answers that came, when they came from
// one cluster: a member that does not answer (down, or its host) is left
// out, and asked again at the next full check. It returns the answers.
func askAll(ctx context.Context, c *Client) []member {
	type answer struct {
		cluster uint64
		m       member
	}
	ctx, cancel := context.WithTimeout(ctx, askWait)
	defer cancel()
	answers := make(chan answer, len(c.eps))
	for _, ep := range c.eps {
		go func() {
			r, err := c.Status(ctx, ep)
			if err != nil || r == nil || r.Header == nil {
				answers <- answer{}
				return
			}
			answers <- answer{r.Header.ClusterId, member{r.Header.MemberId, r.Version}}
		}()
	}
	var members []member
	seen := map[uint64]bool{}
	clusters := map[uint64]bool{}
	var cluster uint64
	for range c.eps {
		a := <-answers
		if a.m.ID == 0 || seen[a.m.ID] {
			continue
		}
		seen[a.m.ID] = true
		clusters[a.cluster] = true
		cluster = a.cluster
		members = append(members, a.m)
	}
	slices.SortFunc(members, func(a, b member) int { return cmp.Compare(a.ID, b.ID) })
	if len(clusters) == 1 {
		storeVersions(c.eps, cluster, members, time.Now())
	}
	return members
}

// askWait bounds a full check: shorter than the second a call waits for
// the check before it exits (withlock-etcd's Close), so that the answers
// that came are cached even when a member never answers.
const askWait = 800 * time.Millisecond

// The version cache: one JSON object, each entry the answers of one list
// of endpoints.
type versionCache map[string]versionEntry

type versionEntry struct {
	At      int64    `json:"at"` // Unix seconds
	Cluster uint64   `json:"cluster"`
	Members []member `json:"members"`
}

const (
	cacheName    = "etcd-versions.json"
	maxCacheSize = 64 << 10
	maxEntries   = 32
)

// cacheKey names a list of endpoints, in any order.
func cacheKey(eps []string) string {
	s := slices.Clone(eps)
	slices.Sort(s)
	return strings.Join(s, ",")
}

// cachedVersions returns the versions of the members behind eps from the
// cache, with live's for the member asked just now, or nil when the cache
// does not cover them: no entry, one older than VersionsMaxAge (or from
// the future), of another cluster, or without live's member.
func cachedVersions(eps []string, cluster uint64, live member, now time.Time) []member {
	d, err := cacheDir(false)
	if err != nil {
		return nil
	}
	defer d.Close()
	data, err := d.ReadFile(cacheName, maxCacheSize)
	if err != nil {
		return nil
	}
	return lookupVersions(data, eps, cluster, live, now)
}

// lookupVersions is cachedVersions on the cache file's content.
func lookupVersions(data []byte, eps []string, cluster uint64, live member, now time.Time) []member {
	var vc versionCache
	if json.Unmarshal(data, &vc) != nil {
		return nil
	}
	e, ok := vc[cacheKey(eps)]
	age := now.Sub(time.Unix(e.At, 0))
	if !ok || age < 0 || age > VersionsMaxAge || e.Cluster != cluster || len(e.Members) == 0 {
		return nil
	}
	out := slices.Clone(e.Members)
	found := false
	for i := range out {
		if out[i].ID == live.ID {
			out[i].Version, found = live.Version, true
		}
	}
	if !found {
		return nil
	}
	return out
}

// storeVersions writes the answers of every endpoint of eps to the cache,
// keeping the other lists' entries but the oldest past maxEntries. Two
// calls that write at once may lose one's entry: the next call asks every
// member again. Failures are ignored: without a cache every call asks
// every member.
func storeVersions(eps []string, cluster uint64, members []member, now time.Time) {
	d, err := cacheDir(true)
	if err != nil {
		return
	}
	defer d.Close()
	vc := versionCache{}
	if data, err := d.ReadFile(cacheName, maxCacheSize); err == nil {
		json.Unmarshal(data, &vc)
	}
	data, err := addVersions(vc, eps, cluster, members, now)
	if err == nil {
		statefile.Write(d, cacheName, data, statefile.Options{Perm: 0o600, NoSync: true})
	}
}

// addVersions adds an entry to vc and encodes it, within the cache's
// bounds.
func addVersions(vc versionCache, eps []string, cluster uint64, members []member, now time.Time) ([]byte, error) {
	if vc == nil {
		vc = versionCache{}
	}
	vc[cacheKey(eps)] = versionEntry{At: now.Unix(), Cluster: cluster, Members: members}
	for len(vc) > maxEntries {
		oldest := ""
		for k, e := range vc {
			if oldest == "" || e.At < vc[oldest].At {
				oldest = k
			}
		}
		delete(vc, oldest)
	}
	data, err := json.Marshal(vc)
	if err == nil && len(data) > maxCacheSize {
		return nil, fmt.Errorf("version cache too large")
	}
	return data, err
}

// cacheDir opens the cache dir, the user's own (safeopen: every
// component reached from its parent's descriptor, none another user's;
// the dir itself private: the caller's, no group or other bits):
// $XDG_CACHE_HOME/withlock or ~/.cache/withlock, created 0700 when create
// is set.
func cacheDir(create bool) (*safeopen.Dir, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	return safeopen.OpenDir(filepath.Join(base, "withlock"), safeopen.DirOptions{What: "cache dir", Create: create, Mode: 0o700, Private: true})
}
