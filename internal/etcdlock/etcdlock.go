//go:build linux

// Package etcdlock is the etcd backend of lockset: the same requests as the
// local flock backend (path locks and slots from pools, all or nothing), held
// as keys in an etcd cluster so that withlock processes on several hosts
// exclude each other. Only cmd/withlock-etcd links it: the etcd client (net/http's
// HTTP/2 and TLS) costs about 1 ms and 9 MB per binary, which the local
// path does not pay. Its
// Held is a lockset.Leased, its contention error a lockset.BusyError, and
// its errors for a cluster that does not answer wrap
// lockset.ErrUnavailable.
//
// Keys (PREFIX is Config.Prefix, "/withlock" by default):
//
//	PREFIX/paths/<hex sha256(REL)>     one per path; REL is the path relative to the key root
//	PREFIX/slots/<escaped TEMPLATE>/<i> one per slot taken; TEMPLATE is the pool's --slot-file
//	PREFIX/queue/<lease id>           one per --wait waiter, naming its set (queue.go)
//
// Every key of one holder is put under that holder's lease, with a small JSON
// value naming the holder (host, pid, command). The value is for people; the
// key and the lease are the lock.
//
// Guarantees:
//   - all or nothing: a request whose keys and slot candidates fit in one
//     transaction (P paths + K pools + the largest pool's size ≤ 128, etcd's
//     default --max-txn-ops) is decided by ONE transaction whose compares
//     require every path key to be absent; each pool is a nested If/Else
//     chain over its slot indices, so the lowest free slot is taken in the
//     same transaction. Larger requests are taken in several transactions
//     under one lease and released by revoking that lease if any part is
//     busy; nothing is left held after a busy attempt either way;
//   - at most N holders per pool of N: a slot key is created only if absent,
//     and only indices 0..N-1 are tried;
//   - a template given more than once in one request (a job that counts
//     twice) takes one distinct slot per occurrence, as the local backend
//     does (see dealSlots);
//   - a transaction that times out may have been applied: the keys are read
//     back and their lease compared before deciding, never guessed;
//   - the lease is kept alive while held; if renewals stop for 3/4 of the TTL
//     (or etcd says the lease is gone) Held.Lost is closed, before the lease
//     can have expired on the cluster.
package etcdlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/etcdendpoint"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/pathlock"
)

// Defaults.
const (
	DefaultPrefix = "/withlock"
	DefaultTTL    = 10 * time.Second
	// DefaultLockDelay keeps a lock whose holder stopped renewing taken
	// 5 s beyond the TTL (docs/etcd.md, "Lock delay").
	DefaultLockDelay = 5 * time.Second
	DefaultEndpoint  = etcdclient.DefaultEndpoint
	// MaxTxnOps is etcd's default --max-txn-ops. The server counts the
	// largest of compares, then-ops and else-ops of a transaction, and of
	// every nested transaction against what its parent left over.
	MaxTxnOps = 128
	// MaxTxnBytes bounds a lock transaction's paths by size too: a
	// path costs its key three times (compare, put, read back) and its
	// value. Members started with a small --max-request-bytes (64 KiB
	// is the smallest seen in use) refuse a larger request whole.
	MaxTxnBytes = 48 << 10
	// DefaultTimeout bounds one operation, retries included: an
	// unreachable cluster is reported after it.
	DefaultTimeout = 5 * time.Second
	// AttemptTimeout bounds one attempt of a request.
	AttemptTimeout = 1500 * time.Millisecond
	// maxChain is the longest If/Else chain tried for a pool without
	// reading it first; a larger pool is read and only its first maxChain
	// free slots are chained.
	maxChain = 32
	// maxRedeals bounds how often a try deals a shared pool's free slots
	// again after another holder took the ones dealt (dealSlots).
	maxRedeals = 3
)

// ErrUnavailable is wrapped by every error that means "the cluster could not
// be reached or did not answer in time". Nothing is held after it. It wraps
// lockset.ErrUnavailable, so that withlock handles it as any backend's.
var ErrUnavailable error = unavailable{}

type unavailable struct{}

func (unavailable) Error() string { return "etcd unavailable" }
func (unavailable) Unwrap() error { return lockset.ErrUnavailable }

// ErrOutsideRoot is wrapped by Open's error for a path that is not under the
// key root (after canonicalisation).
var ErrOutsideRoot = errors.New("outside the key root")

// Holder describes the process that takes the locks; it is written into
// every key's value for people and messages.
type Holder struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	Cmd  string `json:"cmd,omitempty"`
}

// Config configures a Backend.
type Config struct {
	Endpoints []string
	// Security is TLS and etcd auth; Check it first
	// (etcdclient.Security.Check).
	Security etcdclient.Security
	// KeyRoot is the directory paths are named relative to; each host gives
	// the directory where it sees the shared tree. It is canonicalised like
	// the paths. Empty means "/".
	KeyRoot string
	Prefix  string // empty: DefaultPrefix
	// TTL is the holder's own deadline: renewals every TTL/3, the
	// command stopped at 3/4 of it without one (Held.Lost); 0:
	// DefaultTTL.
	TTL time.Duration
	// LockDelay is how much longer than TTL the lease itself lives: the
	// keys of a holder that stopped renewing (dead, frozen, cut off) stay
	// for TTL + LockDelay after its last renewal, while the holder gives
	// up at 3/4 of TTL; a release revokes the lease at once. Negative:
	// none; 0: DefaultLockDelay.
	LockDelay time.Duration
	// Timeout bounds each operation (grant, read, release), retries
	// included; 0: DefaultTimeout. One attempt lasts at most AttemptTimeout,
	// so that an attempt stuck on a dead leader is retried once a new one
	// is elected (about 1-2 s with etcd's defaults).
	Timeout time.Duration
	Holder  Holder
	// Early grants the first lease at New, alongside what the caller does
	// before its first TryAcquire (reading paths, canonicalising them),
	// instead of after: the first claim's TryAcquire takes it. A lease
	// nobody takes is revoked by Close.
	Early bool
	// Infof, if set, is told what -v says: renewals that needed more than
	// one attempt. Warnf, if set, is told of a renewal that came past the
	// deadline (this process was stopped) and found the lease alive.
	Infof, Warnf func(format string, args ...any)
	// NoVersions skips reading the members' server versions
	// (VersionWarning then says nothing): for -q, which would not print
	// the warning, and should not pay for it either (a full check waits
	// up to etcdclient's askWait for a member that does not answer).
	NoVersions bool
}

// Backend is a connection to one etcd cluster.
type Backend struct {
	cfg      Config
	root     string // canonical key root
	cli      *etcdclient.Client
	ttl      int64 // the leases' TTL in seconds: Config.TTL + Config.LockDelay
	rto      time.Duration
	versions *etcdclient.VersionCheck // started after the first grant
	checked  sync.Once
	// early is the lease granted at New, while the caller still opens its
	// claim (Config.Early), until the first claim takes it.
	early chan granted
	// Rereads counts lock transactions whose outcome was unknown (a
	// timeout, a broken connection) and was read back.
	Rereads atomic.Int64
	// live holds the leases granted and not yet revoked, for Abort.
	liveMu sync.Mutex
	live   map[clientv3.LeaseID]bool
}

// AbortBound bounds Abort: a signal that ends withlock before its command
// has started delays its exit by at most this much.
const AbortBound = time.Second

// Abort revokes every lease this backend granted and has not revoked, at
// once and in parallel, waiting at most bound: for a process that a
// signal ends before its command has started (runner.OnAbort). Its keys —
// locks taken for a command that never ran, a waiter's place in the queue —
// go at once instead of staying a whole TTL, keeping later jobs out for
// nothing. No lock-delay applies: no command ran under them. A revoke that
// does not land within bound leaves the lease to expire, as before.
func (b *Backend) Abort(bound time.Duration) {
	b.liveMu.Lock()
	ids := make([]clientv3.LeaseID, 0, len(b.live))
	for id := range b.live {
		ids = append(ids, id)
	}
	b.liveMu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if _, err := b.cli.Revoke(ctx, id); err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
				b.untrack(id)
			}
		})
	}
	wg.Wait()
}

func (b *Backend) track(id clientv3.LeaseID) {
	b.liveMu.Lock()
	if b.live == nil {
		b.live = map[clientv3.LeaseID]bool{}
	}
	b.live[id] = true
	b.liveMu.Unlock()
}

func (b *Backend) untrack(id clientv3.LeaseID) {
	b.liveMu.Lock()
	delete(b.live, id)
	b.liveMu.Unlock()
}

// New checks cfg and creates a client. It does not contact the cluster:
// client creation is lazy, so an unreachable cluster shows up as
// ErrUnavailable from the first TryAcquire.
func New(cfg Config) (*Backend, error) {
	eps, err := etcdclient.Endpoints(cfg.Endpoints, "--endpoints")
	if err != nil {
		return nil, err
	}
	cfg.Endpoints = eps
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if err := etcdendpoint.CheckPrefix(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("--key-prefix %w", err)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < time.Second || cfg.TTL%time.Second != 0 {
		return nil, fmt.Errorf("--ttl %v: etcd leases have whole seconds, at least 1s", cfg.TTL)
	}
	switch {
	case cfg.LockDelay == 0:
		cfg.LockDelay = DefaultLockDelay
	case cfg.LockDelay < 0:
		cfg.LockDelay = 0
	case cfg.LockDelay%time.Second != 0:
		return nil, fmt.Errorf("--lock-delay %v: etcd leases have whole seconds", cfg.LockDelay)
	}
	if cfg.KeyRoot == "" {
		cfg.KeyRoot = "/"
	}
	root, err := pathlock.Canonical(cfg.KeyRoot)
	if err != nil {
		return nil, fmt.Errorf("--key-root %s: %w", cfg.KeyRoot, err)
	}
	rto := cfg.Timeout
	if rto == 0 {
		rto = DefaultTimeout
	}
	cli, err := etcdclient.New(cfg.Endpoints, rto, cfg.Security, ErrUnavailable)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, root: root, cli: cli, ttl: int64((cfg.TTL + cfg.LockDelay) / time.Second), rto: rto}
	if cfg.Early {
		b.early = make(chan granted, 1)
		go func() {
			l, err := grant(b)
			b.early <- granted{l, err}
		}()
	}
	return b, nil
}

type granted struct {
	l   *lease
	err error
}

// newLease returns the lease granted early, the first time (Config.Early),
// else grants one.
func (b *Backend) newLease() (*lease, error) {
	if b.early != nil {
		g := <-b.early
		b.early = nil
		return g.l, g.err
	}
	return grant(b)
}

// VersionWarning returns the warning for cluster members older than the
// minimum safe server version (etcdclient.CheckVersions), "" if none was
// found or the check did not run (no lease was granted) or did not end
// within wait.
func (b *Backend) VersionWarning(wait time.Duration) string {
	return b.versions.Warning(wait)
}

// Close closes the client. Held locks are not released by it (Release them
// first); their lease then expires after the TTL.
func (b *Backend) Close() error {
	if b.early != nil {
		if g := <-b.early; g.err == nil {
			g.l.revoke(b)
		}
		b.early = nil
	}
	return b.cli.Close()
}

// Client is the underlying client (for tests and benchmarks).
func (b *Backend) Client() *clientv3.Client { return b.cli.Client }

// Root is the canonical key root.
func (b *Backend) Root() string { return b.root }

// Rel names a canonical path relative to the key root: "." for the root
// itself, ErrOutsideRoot if it is not under it.
func (b *Backend) Rel(canonical string) (string, error) {
	return relTo(b.root, canonical)
}

func relTo(root, p string) (string, error) {
	switch {
	case p == root:
		return ".", nil
	case root == "/" && strings.HasPrefix(p, "/"):
		return p[1:], nil
	case strings.HasPrefix(p, root) && p[len(root)] == '/':
		return p[len(root)+1:], nil
	}
	return "", fmt.Errorf("%s is %w %s", p, ErrOutsideRoot, root)
}

// PathKey is the key of a path named rel (relative to the key root).
func (b *Backend) PathKey(rel string) string { return PathKey(b.cfg.Prefix, rel) }

// PathsPrefix is the key prefix of the path keys under prefix. The key
// layout of the package doc is written in PathsPrefix, SlotsPrefix and
// QueuePrefix alone (each ends with "/"); PathKey and PoolPrefix name keys
// within them.
func PathsPrefix(prefix string) string { return prefix + "/paths/" }

// SlotsPrefix is the key prefix of every pool's slots under prefix.
func SlotsPrefix(prefix string) string { return prefix + "/slots/" }

// QueuePrefix is the key prefix of the waiting queue under prefix.
func QueuePrefix(prefix string) string { return prefix + "/queue/" }

// PathKey is the key of a path named rel under prefix.
func PathKey(prefix, rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return PathsPrefix(prefix) + hex.EncodeToString(sum[:])
}

// PoolPrefix is the key prefix of a pool's slots (ends with "/").
func (b *Backend) PoolPrefix(template string) string { return PoolPrefix(b.cfg.Prefix, template) }

// PoolPrefix is the key prefix of the pool named by template under prefix.
// The template is escaped so that no pool's prefix is a prefix of another's.
func PoolPrefix(prefix, template string) string {
	return SlotsPrefix(prefix) + url.PathEscape(template) + "/"
}

// value is what a key holds: who took it, for messages and people.
type value struct {
	Holder
	Since string `json:"since"`
	Path  string `json:"path,omitempty"` // REL; informational (bytes that are not UTF-8 are replaced)
	Pool  string `json:"pool,omitempty"`
	Slot  *int   `json:"slot,omitempty"`
}

// Open canonicalises the paths, names them relative to the key root and
// returns a claim. It does not contact the cluster. A path outside the root
// is an error (wrapping ErrOutsideRoot).
func (b *Backend) Open(r lockset.Request) (lockset.Claim, error) {
	canon, err := pathlock.CanonicalSet(r.Paths)
	if err != nil {
		return nil, err
	}
	c := &claim{b: b, canon: canon}
	since := time.Now().UTC().Format(time.RFC3339)
	type pk struct{ key, rel, canon string }
	pks := make([]pk, len(canon))
	for i, p := range canon {
		rel, err := b.Rel(p)
		if err != nil {
			return nil, err
		}
		pks[i] = pk{b.PathKey(rel), rel, p}
	}
	// Keys in key order, so that large sets are split into transactions
	// the same way by every holder.
	slices.SortFunc(pks, func(a, b pk) int { return strings.Compare(a.key, b.key) })
	for _, p := range pks {
		v, _ := json.Marshal(value{Holder: b.cfg.Holder, Since: since, Path: p.rel})
		c.keys = append(c.keys, pathKey{key: p.key, rel: p.rel, canon: p.canon, val: string(v)})
	}
	seen := map[string]int{}
	for _, ps := range r.Pools {
		if ps.Size <= 0 {
			return nil, fmt.Errorf("pool %s: size %d", ps.Template, ps.Size)
		}
		c.pools = append(c.pools, pool{template: ps.Template, size: ps.Size, prefix: b.PoolPrefix(ps.Template), since: since})
		seen[ps.Template]++
	}
	for i := range c.pools {
		c.pools[i].shared = seen[c.pools[i].template] > 1
	}
	return c, nil
}

type pathKey struct {
	key, rel, canon, val string
}

type pool struct {
	template string
	size     int
	prefix   string
	since    string
	// shared: the request names this template more than once; each
	// occurrence takes a slot of its own (dealSlots).
	shared bool
}

func (p *pool) slotKey(i int) string { return p.prefix + strconv.Itoa(i) }

func (p *pool) value(h Holder, i int) string {
	v, _ := json.Marshal(value{Holder: h, Since: p.since, Pool: p.template, Slot: &i})
	return string(v)
}

type claim struct {
	b     *Backend
	canon []string // canonical local paths, sorted by bytes
	keys  []pathKey
	pools []pool
	lease *lease // granted and kept alive; reused across busy attempts
	held  *held

	// what was busy in the last attempt, for WaitChange (a path key, a
	// pool's prefix, or an earlier waiter's queue key); busyEnd, if set,
	// makes it the range [busyKey, busyEnd) (waiting behind earlier
	// waiters for a pool: the queue and the slots)
	busyKey    string
	busyPrefix bool
	busyEnd    string
	busyRev    int64
	// woke: the last WaitChange saw the busy key (or a slot) freed;
	// raced: an attempt after such a wake still found it busy, so other
	// waiters are racing for it (WaitChange then staggers).
	woke, raced bool
	// tried: an attempt was made (the first one may peek).
	tried bool
	// quiet: the last WaitChange watched until its poll ran out and saw
	// nothing freed; busy is the answer of the attempt before it.
	quiet bool
	busy  error
	watch *busyWatch
	led   *ledger // a queued waiter's ledger (ledger.go)

	// The waiting queue (queue.go): busyQueue, the last attempt found an
	// earlier waiter on its paths (busyKey is then the queue prefix);
	// qkey, qrev, qlease: the claim's queue key, its create revision and
	// the lease it lives on (qrev 0: not queued); idset: the path keys as
	// the queue names them.
	busyQueue bool
	qkey      string
	qrev      int64
	qlease    clientv3.LeaseID
	qchecked  bool // a precheck read the queue since the claim entered it, and found no earlier waiter for its pools
	idset     map[string]bool
	// The pools in the queue: wants, the claim's pools by prefix;
	// poolsAhead, the last read of the queue found earlier waiters for
	// them; poolWake, their queue keys (whose deletes wake the claim).
	wants      map[string]poolWant
	poolsAhead bool
	poolWake   map[string]bool
	// busyPool: the pool prefix of the earlier waiters the last attempt
	// yielded to (with busyEnd). reserve: the pools the claim reserves a
	// slot of (setReserve), qreserve: those its queue value names, qsince:
	// when it entered the queue.
	busyPool          string
	reserve, qreserve []string
	qsince            string
}

// TryAcquire takes every path key and one slot of every pool, or nothing.
// A claim that fails reserves a slot of each pool it waits for
// (setReserve).
func (c *claim) TryAcquire() (lockset.Held, error) {
	h, err := c.tryAcquire()
	if err != nil && len(c.pools) > 0 {
		c.setReserve()
	}
	return h, err
}

func (c *claim) tryAcquire() (lockset.Held, error) {
	// Long: one retry loop whose cases (lease expired, resend, redeal) share its deadline and flags.
	if c.held != nil && !c.held.released {
		return nil, errors.New("etcdlock: claim already held")
	}
	if c.quiet && c.stillBusy() {
		// The last WaitChange watched the busy key from the revision at
		// which it was busy until its poll ran out, saw no release, and
		// a read (no write: an attempt is one, through the cluster's
		// log, taken or not) finds the key still held: nothing to try.
		// The read catches a release that a watch stuck on a frozen
		// member has not reported.
		c.quiet = false
		return nil, c.busy
	}
	c.quiet = false
	if c.busy != nil && c.led.valid(c) && c.led.wait != nil && c.led.recheck && c.stillWaits() {
		return nil, c.busy // a queued waiter's ledger: still waiting (ledger.go)
	}
	deadline := time.Now().Add(c.b.rto)
	redeals := 0
	checked := false
	expired := false // a transaction found the lease gone, once
	for {
		if c.lease != nil && c.lease.isLost() {
			c.lease.revoke(c.b)
			c.lease = nil
		}
		if c.lease == nil {
			// A first try reads the queue and its path keys while the
			// lease is being granted (precheck): an earlier waiter on
			// its paths or a key found held answers busy without the
			// write (the lock transaction, which goes through the
			// cluster's log, taken or not), at no cost in time when
			// they are free.
			var peeked chan *BusyError
			if c.b.early != nil && !c.tried && !checked && c.prechecks() {
				peeked = make(chan *BusyError, 1)
				checked = true
				go func() { peeked <- c.precheck() }()
			}
			l, err := c.b.newLease()
			// The read sets the claim's busy state and reads c.lease:
			// the lease is the claim's only once it is done.
			var be *BusyError
			if peeked != nil {
				be = <-peeked
			}
			if err != nil {
				return nil, err
			}
			c.lease = l
			if be != nil {
				c.tried, c.busy = true, be
				return nil, be
			}
		}
		if !checked && c.prechecks() && c.needsCheck() {
			// Every other try reads the queue and the keys first too
			// (one read): a set that intersects an earlier waiter's is
			// left to it (fair waiting), and a waiter woken by a
			// release that another took meanwhile writes nothing.
			checked = true
			if be := c.precheck(); be != nil {
				c.tried, c.busy = true, be
				c.raced = c.raced || c.woke
				c.woke = false
				return nil, be
			}
		}
		c.tried = true
		h, err := c.attempt(deadline)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && !expired {
			// The lease ended before the transaction: this process was
			// stopped or starved past TTL + lock delay while it waited
			// (its renewal has not said so yet). A put under a lease
			// that is gone fails whole, and keys of earlier chunks
			// went with the lease: nothing is held. Once more, under a
			// new lease (a waiter queues again with it).
			expired = true
			c.lease.markLost("the lease expired before the lock transaction")
			c.lease.revoke(c.b) // its renewals stop; etcd says it is gone
			c.lease = nil
			checked = false
			continue
		}
		if err == nil {
			c.held = h
			// Its queue key goes with the lease, at release, or once
			// the command has started (pools).
			h.started = c.dequeueLater()
			c.qrev = 0
			c.dropLedger()
			return h, nil
		}
		if errors.Is(err, lockset.ErrBusy) {
			c.raced = c.raced || c.woke
			c.busy = err
		}
		c.woke = false
		if errors.Is(err, errResend) {
			// A transaction timed out and did not show when read back,
			// but it may still be in flight (accepted by a leader, not
			// yet committed) and apply later. Revoking its lease is the
			// fence: a put under a revoked lease can never apply. Only
			// once the revoke is confirmed is the set tried again, under
			// a new lease.
			if rerr := c.lease.revokeConfirmed(c.b, deadline); rerr != nil {
				c.lease = nil
				return nil, fmt.Errorf("%w (and revoking its lease: %v)", err, rerr)
			}
			c.lease = nil
			if time.Until(deadline) > 200*time.Millisecond {
				continue
			}
			return nil, err
		}
		// Nothing may stay held after a failed attempt. A busy result of
		// a single transaction put nothing; anything else (a later chunk
		// busy, a pool full after the paths were put, an error) may have
		// put keys: revoking the lease deletes exactly the keys put
		// under it.
		// A queued claim whose transaction found a pool full gives
		// back what it put by deleting the keys instead, when that is
		// known exactly: its lease carries its queue key.
		var be *BusyError
		if !errors.As(err, &be) || be.partial {
			if be == nil || be.undo == nil || !c.queued() || !c.undo(be.undo) {
				c.lease.revoke(c.b)
				c.lease = nil
			}
		}
		if be != nil && be.dealt && redeals < maxRedeals {
			// Another holder took the slots dealt to one occurrence of
			// a shared pool between the read and the transaction: the
			// pool may still have enough free slots. Read it again.
			redeals++
			continue
		}
		return nil, err
	}
}

// Close releases anything held and the lease.
func (c *claim) Close() {
	c.stopWatch()
	c.dropLedger()
	if c.held != nil {
		c.held.Release()
	}
	if c.lease != nil {
		c.lease.revoke(c.b)
		c.lease = nil
	}
}

// do runs one attempt of a request (at most AttemptTimeout); errors that
// mean the cluster did not answer are wrapped in ErrUnavailable.
func (b *Backend) do(what string, f func(ctx context.Context) error) error {
	return b.doFor(what, min(b.rto, AttemptTimeout), f)
}

func (b *Backend) doFor(what string, t time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), t)
	defer cancel()
	err := f(ctx)
	if err != nil && ambiguous(err) {
		return b.cli.Unavailable(what, err, t)
	}
	return err
}

// retry runs a request that is safe to repeat until it succeeds, fails
// definitely, or the operation's timeout has passed since the first try.
func (b *Backend) retry(what string, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(b.rto)
	for {
		left := time.Until(deadline)
		err := b.doFor(what, min(left, AttemptTimeout), f)
		if err == nil || !errors.Is(err, ErrUnavailable) || left < 200*time.Millisecond {
			if ue, ok := errors.AsType[*etcdclient.Unavailable](err); ok {
				ue.Took = b.rto
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ambiguous reports whether err leaves the outcome of a write unknown: a
// timeout, a broken connection, a leader change. Errors the server returns
// after deciding (bad request, lease not found, too many operations) are
// not ambiguous.
func ambiguous(err error) bool {
	_, ok := errors.AsType[*etcdclient.Unavailable](err)
	return ok || etcdclient.Ambiguous(err)
}

// hostname for Holder defaults.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}
