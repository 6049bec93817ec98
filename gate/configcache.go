//go:build linux

package gate

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/statefile"
)

// cacheSchema (cacheschema.go, generated: go generate ./gate) is hashed
// into every entry's key, so that no binary reads entries written for
// another layout or meaning: it is the fingerprint of cacheEntry's types
// (GateConfig, EtcdConfig and what they hold) and of the source that
// decodes and validates a config into them (the config files of this
// package, internal/gateconf, internal/runner/duration.go, internal/etcdendpoint,
// internal/cronexpr). TestCacheSchema recomputes it and fails, naming the
// command, when it is stale: nothing is bumped by hand.
//
//go:generate env CACHE_SCHEMA_WRITE=1 go test -run ^TestCacheSchema$ -count=1 .

// cacheEntry is what the run path needs of a validated config: the global
// settings and one gate.
type cacheEntry struct {
	Key      string      `json:"key"`
	Path     string      `json:"path"` // the config's path, compared on read as well as hashed
	StateDir string      `json:"state_dir"`
	SkipCode int         `json:"skip_code"`
	History  int         `json:"history"`
	Report   bool        `json:"report_skips,omitempty"`
	Gate     *GateConfig `json:"gate,omitempty"` // nil: not declared
	Etcd     EtcdConfig  `json:"etcd,omitzero"`  // shared pauses: the run is cron-gate-etcd's
}

// CacheLookup is a config lookup that missed the cache (LookupGate): the
// file's bytes, to be decoded by gateconf, and where the result goes.
type CacheLookup struct {
	Data []byte // the config file's bytes
	path string
	name string
	key  string
	file string // the entry's name in the cache dir; "" when there is no usable cache
}

// LookupGate is the run path's config lookup, without the TOML decoder.
// Decoding and validating the TOML is most of a cron-gate call's own cost
// (about 1 ms for 50 gates, and the TOML library's size in the binary), so
// a config whose exact bytes were validated before is served from a cache
// entry that holds the global settings and the one gate asked for.
//
// It returns the Config on a hit (or DefaultConfig for a missing file when
// missingOK), an error when the file cannot be read (ReadConfig), and
// otherwise a miss: a *CacheLookup whose Data the caller decodes and
// validates (gateconf.LoadGate) and hands to Store.
//
// Guarantees: the entry is keyed by a 128-bit hash of the config's bytes, its
// path, cron-gate's version and cacheSchema, so any change to the file is a
// miss; only a config that passed full validation is ever stored, so an
// invalid config is refused exactly as by gateconf.Load; the cache lives in
// a private directory (CacheDir: 0700, owned by the caller, never a
// symlink, reached as a lock dir is: package safeopen), every entry is
// read and written through its descriptor, an entry that is not a regular
// file or is larger than 1 MiB is a miss, and a cache that cannot be used
// is simply not used. A returned
// Config holds no other gates than name (Gates has at most one entry).
func LookupGate(path string, missingOK bool, name string) (*Config, *CacheLookup, error) {
	data, err := ReadConfig(path, missingOK)
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		return DefaultConfig(), nil, nil
	}
	// FNV-1a/128: the key tells versions of the file apart, it does not
	// defend against anyone (whoever can change the config can change the
	// config), and crypto/sha256 would add its package set-up to every call.
	h := fnv.New128a()
	for _, part := range []string{cacheSchema, runner.BuildString(), path, name} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(data)
	l := &CacheLookup{Data: data, path: path, name: name, key: hex.EncodeToString(h.Sum(nil))}
	if CheckName(name) == nil {
		if d := openCacheDir(); d != nil {
			l.file = l.key + "-" + name + ".json"
			cfg := readCacheEntry(d, l.file, l.key, path)
			d.Close()
			if cfg != nil {
				return cfg, nil, nil
			}
		}
	}
	return nil, l, nil
}

// Store caches what the run path needs of full, the validated config
// decoded from l.Data, and returns it: a Config with the global settings
// and only the gate asked for. Failing to write the entry costs only time.
func (l *CacheLookup) Store(full *Config) *Config {
	e := cacheEntry{Key: l.key, StateDir: full.StateDir, SkipCode: full.SkipCode, History: full.History, Report: full.ReportSkips,
		Gate: full.Gates[l.name], Etcd: full.Etcd, Path: l.path}
	if l.file != "" {
		if b, err := json.Marshal(e); err == nil {
			if d := openCacheDir(); d != nil {
				// Any entry's leftover temp: entries' names change
				// with every config, so their writers never meet.
				statefile.Write(d, l.file, b, statefile.Options{Perm: 0o600, NoSync: true, AnyTarget: true})
				d.Close()
			}
		}
	}
	return e.config(l.path)
}

// config is the Config an entry stands for.
func (e *cacheEntry) config(path string) *Config {
	cfg := DefaultConfig()
	cfg.Path, cfg.StateDir, cfg.SkipCode, cfg.History, cfg.Etcd = path, e.StateDir, e.SkipCode, e.History, e.Etcd
	cfg.ReportSkips = e.Report
	if e.Gate != nil {
		cfg.Gates[e.Gate.Name] = e.Gate
	}
	return cfg
}

// maxCacheEntryBytes bounds a cache entry: one gate's table and the
// global settings.
const maxCacheEntryBytes = 1 << 20

func readCacheEntry(d *safeopen.Dir, file, key, path string) *Config {
	// Only an entry this user wrote: the directory is private now, but
	// may not always have been.
	b, err := d.ReadOwnFile(file, maxCacheEntryBytes)
	if err != nil {
		return nil
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil || e.Key != key || e.Path != path {
		return nil
	}
	cfg := e.config(path)
	if cfg.validateRun() != nil { // Validate, for what an entry holds
		return nil
	}
	return cfg
}

// CacheDir returns the private directory of the config cache, creating it,
// or "" if caching is off or no safe directory is available:
// $CRON_GATE_CACHE_DIR ("off" disables the cache), else /var/cache/cron-gate
// for root, else $XDG_CACHE_HOME/cron-gate, else $HOME/.cache/cron-gate,
// else /var/tmp/cron-gate-cache-UID. The name is for messages and tests:
// the cache itself is only ever reached through a fresh safe walk.
func CacheDir() string {
	d := openCacheDir()
	if d == nil {
		return ""
	}
	d.Close()
	return d.Path
}

// openCacheDir opens (creating it 0700) the cache dir CacheDir names, or
// returns nil: it must be a real directory (not a symlink), owned by this
// user, closed to group and others, under directories and symlinks only
// root or this user can change (package safeopen).
func openCacheDir() *safeopen.Dir {
	d, set := os.LookupEnv("CRON_GATE_CACHE_DIR")
	switch {
	case set && (d == "off" || d == ""):
		return nil
	case set:
	case os.Geteuid() == 0:
		d = "/var/cache/cron-gate"
	case os.Getenv("XDG_CACHE_HOME") != "":
		d = filepath.Join(os.Getenv("XDG_CACHE_HOME"), "cron-gate")
	case os.Getenv("HOME") != "":
		d = filepath.Join(os.Getenv("HOME"), ".cache", "cron-gate")
	default:
		d = "/var/tmp/cron-gate-cache-" + strconv.Itoa(os.Geteuid())
	}
	o := safeopen.DirOptions{What: "cache dir", Mode: 0o700, NoFollowLast: true, Private: true}
	sd, err := safeopen.OpenDir(d, o)
	if errors.Is(err, fs.ErrNotExist) {
		o.Create = true
		sd, err = safeopen.OpenDir(d, o)
	}
	if err != nil {
		return nil
	}
	return sd
}
