package etcdlock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/lockset"
)

func TestRelTo(t *testing.T) {
	for _, c := range []struct{ root, p, rel string }{
		{"/", "/srv/blog/a.md", "srv/blog/a.md"},
		{"/", "/", "."},
		{"/srv/blog", "/srv/blog/a.md", "a.md"},
		{"/srv/blog", "/srv/blog", "."},
		{"/srv/blog", "/srv/blog/ko/b.md", "ko/b.md"},
		{"/srv/blog", "/srv/blogx/a.md", ""},
		{"/srv/blog", "/srv", ""},
		{"/srv/blog", "/other/a.md", ""},
	} {
		rel, err := relTo(c.root, c.p)
		if c.rel == "" {
			if !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("relTo(%q, %q) = %q, %v; want ErrOutsideRoot", c.root, c.p, rel, err)
			}
			continue
		}
		if err != nil || rel != c.rel {
			t.Errorf("relTo(%q, %q) = %q, %v; want %q", c.root, c.p, rel, err, c.rel)
		}
	}
}

func TestKeys(t *testing.T) {
	// sha256("a.md")
	if got := PathKey("/withlock", "a.md"); got != "/withlock/paths/"+sha("a.md") {
		t.Errorf("PathKey = %q", got)
	}
	if PathKey("/p", "a") == PathKey("/p", "b") || PathKey("/p", "a") == PathKey("/q", "a") {
		t.Error("PathKey collides")
	}
	// No pool's prefix is a prefix of another's.
	a, b := PoolPrefix("/w", "/tmp/x-{i}.lock"), PoolPrefix("/w", "/tmp/x-{i}.lock/y")
	if strings.HasPrefix(b, a) || strings.HasPrefix(a, b) {
		t.Errorf("pool prefixes nest: %q %q", a, b)
	}
	if !strings.HasSuffix(a, "/") || strings.Count(strings.TrimPrefix(a, "/w/slots/"), "/") != 1 {
		t.Errorf("PoolPrefix = %q", a)
	}
}

// Two hosts that see one tree at different places, each with its own key
// root, name a file the same; a symlinked root is canonicalised first.
func TestSameKeyAcrossRoots(t *testing.T) {
	d := t.TempDir()
	for _, h := range []string{"hostA/tree/ko", "hostB/mnt/blog/ko"} {
		if err := os.MkdirAll(filepath.Join(d, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d, "hostB/mnt/blog"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	key := func(root, p string) string {
		b, err := New(Config{KeyRoot: root, Endpoints: []string{"http://127.0.0.1:1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		c, err := b.Open(lockset.Request{Paths: []string{p}})
		if err != nil {
			t.Fatal(err)
		}
		return c.(*claim).keys[0].key
	}
	ka := key(filepath.Join(d, "hostA/tree"), filepath.Join(d, "hostA/tree/ko/post.md"))
	kb := key(filepath.Join(d, "hostB/mnt/blog"), filepath.Join(d, "hostB/mnt/blog/ko/../ko/post.md"))
	kl := key(filepath.Join(d, "link"), filepath.Join(d, "link/ko/post.md"))
	if ka != kb || ka != kl || ka != PathKey(DefaultPrefix, "ko/post.md") {
		t.Errorf("keys differ: %s %s %s", ka, kb, kl)
	}
}

func TestOpenRefusesOutsideRoot(t *testing.T) {
	b, err := New(Config{KeyRoot: "/srv/blog", Endpoints: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Open(lockset.Request{Paths: []string{"/srv/blog/a", "/etc/passwd"}}); !errors.Is(err, ErrOutsideRoot) {
		t.Fatalf("Open = %v, want ErrOutsideRoot", err)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{
		{TTL: 1500 * time.Millisecond},
		{Prefix: "withlock"},
		{Prefix: "/withlock/"},
		{Endpoints: []string{""}},
	} {
		if b, err := New(c); err == nil {
			b.Close()
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestAmbiguous(t *testing.T) {
	if ambiguous(errors.New("etcdserver: request timed out")) != true {
		t.Error("an unknown error must count as ambiguous")
	}
}

// The transaction plan keeps every transaction within etcd's op limit.
func TestChunking(t *testing.T) {
	for _, c := range []struct{ paths, pools, size int }{
		{1, 0, 0}, {127, 1, 1}, {128, 0, 0}, {95, 1, 32}, {96, 1, 32}, {1000, 2, 6}, {0, 3, 100},
	} {
		first := MaxTxnOps - c.pools - min(c.size, maxChain)
		if c.paths > 0 && first < 1 {
			t.Errorf("%+v: no room for paths in the first transaction", c)
		}
		if c.pools+min(c.size, maxChain)+min(first, c.paths) > MaxTxnOps {
			t.Errorf("%+v: first transaction too large", c)
		}
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// chunkKeys: every path in order, no transaction over MaxTxnOps paths or
// MaxTxnBytes of keys and values, the first within its share.
func TestChunkKeys(t *testing.T) {
	for _, c := range []struct{ paths, keyLen, first int }{
		{2000, 24, 120}, {2000, 200, 120}, {300, 10, 0}, {1, 60000, 5}, {128, 10, 128},
	} {
		keys := make([]pathKey, c.paths)
		for i := range keys {
			keys[i] = pathKey{key: fmt.Sprintf("%0*d", c.keyLen, i), val: strings.Repeat("v", c.keyLen)}
		}
		got := chunkKeys(keys, c.first)
		n := 0
		for ci, ch := range got {
			size := 0
			for _, k := range ch {
				if k.key != keys[n].key {
					t.Fatalf("%+v: chunk %d has %s where %s belongs", c, ci, k.key, keys[n].key)
				}
				n++
				size += 3*len(k.key) + len(k.val) + 32
			}
			if len(ch) > MaxTxnOps || (ci == 0 && len(ch) > c.first) || (size > MaxTxnBytes && len(ch) > 1) {
				t.Errorf("%+v: chunk %d has %d paths, %d bytes", c, ci, len(ch), size)
			}
		}
		if n != c.paths {
			t.Errorf("%+v: %d paths in the chunks, want %d", c, n, c.paths)
		}
	}
}
