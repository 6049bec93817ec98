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
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/etcderr"

	mvccpb "github.com/crongate/crongate/internal/etcdpb"
	pb "github.com/crongate/crongate/internal/etcdpb"

	clientv3 "github.com/crongate/crongate/internal/etcdv3"

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
			if _, err := b.cli.Revoke(ctx, id); err == nil || errors.Is(err, clientv3.ErrLeaseNotFound) {
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
	eps, ok := etcdclient.Endpoints(cfg.Endpoints)
	if !ok {
		return nil, errors.New("--endpoints has an empty entry")
	}
	cfg.Endpoints = eps
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !etcdclient.ValidPrefix(cfg.Prefix) {
		return nil, fmt.Errorf("--key-prefix %q must start with / and not end with /", cfg.Prefix)
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
	cli, err := etcdclient.New(cfg.Endpoints, rto, cfg.Security)
	switch {
	case errors.Is(err, etcdclient.ErrLogin):
		return nil, err
	case err != nil && cfg.Security.User != "" && etcderr.Ambiguous(err):
		// The login got no answer.
		return nil, &unavailableError{what: "log in", err: err, endpoints: cfg.Endpoints, timeout: rto}
	case err != nil:
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

// PathKey is the key of a path named rel under prefix.
func PathKey(prefix, rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return prefix + "/paths/" + hex.EncodeToString(sum[:])
}

// PoolPrefix is the key prefix of a pool's slots (ends with "/").
func (b *Backend) PoolPrefix(template string) string { return PoolPrefix(b.cfg.Prefix, template) }

// PoolPrefix is the key prefix of the pool named by template under prefix.
// The template is escaped so that no pool's prefix is a prefix of another's.
func PoolPrefix(prefix, template string) string {
	return prefix + "/slots/" + url.PathEscape(template) + "/"
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
		if errors.Is(err, clientv3.ErrLeaseNotFound) && !expired {
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

// stillBusy reports whether a linearizable read finds the busy path key
// still held since the busy attempt, the full pool still full, or the
// claim still behind earlier waiters for a pool.
func (c *claim) stillBusy() bool {
	if c.busyEnd != "" {
		return c.stillBehindPool()
	}
	if c.busyPrefix {
		return c.stillFull()
	}
	if c.busyKey == "" {
		return false
	}
	var r *clientv3.GetResponse
	err := c.b.pollRead(func(ctx context.Context) (err error) {
		r, err = c.b.cli.Get(ctx, c.busyKey, clientv3.WithKeysOnly())
		return err
	})
	return err == nil && len(r.Kvs) > 0 && r.Kvs[0].CreateRevision <= c.busyRev
}

// pollRead runs read, a waiter's read after a poll interval in which its
// watch reported nothing (a watch on a frozen member is silent), in up
// to three tries of a third of AttemptTimeout each, as a holder renews
// (etcdclient.Renew): a try that gets no answer connects the client to
// every member, and the next goes to the next one in turn, long before
// gRPC's keep-alive would drop a frozen member. Each try asks that the
// member have a leader. It returns the last try's error.
func (b *Backend) pollRead(read func(ctx context.Context) error) error {
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), AttemptTimeout/3)
		err = read(ctx)
		cancel()
		if err == nil {
			return nil
		}
		b.cli.Widen()
	}
	return err
}

// stillFull reports whether a linearizable read of the pool that was
// full (busyKey, a pool's prefix; keys only) finds it still without a
// free slot for each of the claim's occurrences of it. Without it a
// waiter for a full pool sent its lock transaction at every poll: a
// write through the cluster's log, two with the paths a queued waiter
// then gives back (undo), four times a second.
func (c *claim) stillFull() bool {
	w, ok := c.poolWants()[c.busyKey]
	if !ok {
		return false
	}
	need := 0
	for _, p := range c.pools {
		if p.prefix == c.busyKey {
			need++
		}
	}
	var r *clientv3.GetResponse
	err := c.b.pollRead(func(ctx context.Context) (err error) {
		r, err = c.b.cli.Get(ctx, c.busyKey, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	return err == nil && w.size-countTaken(c.busyKey, w.size, r.Kvs) < need
}

// stillBehindPool reads the queue and the pools again (precheck) for a
// claim that waits behind earlier waiters for one of its pools: true if
// it still does. The watch then goes on from the revision it started at
// (its events since are still to come).
func (c *claim) stillBehindPool() bool {
	rev := c.busyRev
	be := c.precheck()
	if be == nil || c.busyEnd == "" {
		return false
	}
	c.busyRev, c.busy = rev, be
	return true
}

// errResend marks a transaction whose outcome was unknown and that was not
// found applied when read back; TryAcquire fences it and tries again.
var errResend = errors.New("lock transaction timed out and was not applied when read back")

// attempt runs the transactions of one try.
func (c *claim) attempt(deadline time.Time) (*held, error) {
	c.busyKey, c.busyPrefix, c.busyEnd, c.busyRev, c.busyQueue = "", false, "", 0, false
	slots := make([]int, len(c.pools))
	cands := make([][]int, len(c.pools))
	chainLen := 0
	for i := range c.pools {
		p := &c.pools[i]
		switch {
		case p.shared:
			if cands[i] != nil {
				break // dealt with the template's first occurrence
			}
			if err := c.dealSlots(i, cands); err != nil {
				return nil, err
			}
		case p.size <= maxChain:
			cands[i] = seq(p.size)
		default:
			free, rev, err := c.freeSlots(p, p.size)
			if err != nil {
				return nil, err
			}
			if len(free) == 0 {
				c.busyKey, c.busyPrefix, c.busyRev = p.prefix, true, rev
				return nil, c.poolBusy(p, nil)
			}
			cands[i] = free[:min(len(free), maxChain)]
		}
	}
	for i := range cands {
		chainLen = max(chainLen, len(cands[i]))
	}
	// The first transaction holds the pools and as many paths as fit.
	first := max(MaxTxnOps-len(c.pools)-chainLen, 0)
	chunks := [][]pathKey{}
	rest := c.keys
	n := min(first, len(rest))
	chunks = append(chunks, rest[:n])
	rest = rest[n:]
	for len(rest) > 0 {
		n := min(MaxTxnOps, len(rest))
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	var rev int64
	for ci, ch := range chunks {
		var pools []pool
		var pc [][]int
		if ci == 0 {
			pools, pc = c.pools, cands
		}
		d := deadline
		if ci > 0 {
			d = time.Now().Add(c.b.rto) // each further chunk gets its own budget
		}
		r, err := c.txn(ch, pools, pc, d)
		if err != nil {
			return nil, err
		}
		if r.busy != nil {
			r.busy.partial = r.busy.partial || ci > 0 || (r.busy.pool && len(c.keys)+len(c.pools) > 1)
			if ci > 0 || !r.busy.partial {
				r.busy.undo = nil // earlier transactions put keys too, or nothing was put
			}
			return nil, r.busy
		}
		if ci == 0 {
			copy(slots, r.slots)
		}
		rev = r.rev
	}
	h := &held{c: c, lease: c.lease, rev: rev, slots: slots}
	return h, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// dealSlots finds the candidates of every occurrence of the template of
// pool first (its first occurrence in the request) and puts them in cands.
//
// The local backend takes one slot per occurrence: each occurrence locks
// a slot file of its own, and a flock conflicts with the same process's
// other open file descriptions, so `--slots 4 --slot-file T` given twice
// takes two distinct slots of T's pool (a job that counts twice). Here one
// transaction cannot put a key twice (etcd refuses it: "duplicate key given
// in txn request"), so the occurrences' chains must be disjoint: the pool is
// read, occurrence j (in request order) is dealt the j-th lowest free slot
// below its own size, as the local backend would take it, and the other
// free slots are dealt round-robin as fall-backs (at most maxChain each).
// Fewer free slots than occurrences is busy, with nothing put. A holder that
// takes every slot dealt to one occurrence before the transaction makes it
// busy too; TryAcquire then reads and deals again (maxRedeals).
func (c *claim) dealSlots(first int, cands [][]int) error {
	p := &c.pools[first]
	var occ []int
	size := 0
	for i := first; i < len(c.pools); i++ {
		if c.pools[i].prefix == p.prefix {
			occ = append(occ, i)
			size = max(size, c.pools[i].size)
		}
	}
	free, rev, err := c.freeSlots(p, size)
	if err != nil {
		return err
	}
	dealt := make([]bool, len(free))
	for _, i := range occ {
		j := 0
		for j < len(free) && dealt[j] {
			j++
		}
		if j == len(free) || free[j] >= c.pools[i].size {
			c.busyKey, c.busyPrefix, c.busyRev = p.prefix, true, rev
			return c.poolBusy(&c.pools[i], nil)
		}
		dealt[j] = true
		cands[i] = []int{free[j]}
	}
	next := 0
	for j, f := range free {
		if dealt[j] {
			continue
		}
		for range occ {
			i := occ[next]
			next = (next + 1) % len(occ)
			if f < c.pools[i].size && len(cands[i]) < maxChain {
				cands[i] = append(cands[i], f)
				break
			}
		}
	}
	return nil
}

// freeSlots reads a pool and returns its free indices below size, in
// order.
func (c *claim) freeSlots(p *pool, size int) ([]int, int64, error) {
	var resp *clientv3.GetResponse
	err := c.b.retry("read pool "+p.template, func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Get(ctx, p.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	taken := map[int]bool{}
	for _, kv := range resp.Kvs {
		if i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p.prefix)); err == nil {
			taken[i] = true
		}
	}
	var free []int
	for i := 0; i < size; i++ {
		if !taken[i] {
			free = append(free, i)
		}
	}
	return free, resp.Header.Revision, nil
}

type txnResult struct {
	rev   int64
	slots []int
	busy  *BusyError
}

// txn takes the path keys of one chunk and one slot of each pool in one
// transaction:
//
//	If   create_revision(path_k) == 0 for every path
//	Then put path_k (lease) ..., chain(pool_1), chain(pool_2), ...
//	Else get path_k ...                      (who holds what, for the message)
//
//	chain(pool) = If create_revision(slot_c1) == 0 Then put slot_c1
//	              Else If create_revision(slot_c2) == 0 Then put slot_c2
//	              Else ... Else get pool/ (prefix)
//
// A pool whose chain ends in the final Else is full: the transaction has
// then put the paths and other pools' slots, which the caller revokes.
func (c *claim) txn(keys []pathKey, pools []pool, cands [][]int, deadline time.Time) (txnResult, error) {
	lease := c.lease.id
	t := &etcdclient.Txn{}
	for _, k := range keys {
		t.If(etcdclient.CreateIs(k.key, 0)).Then(etcdclient.Put(k.key, k.val, lease)).Else(etcdclient.Get(k.key))
	}
	for i := range pools {
		t.Then(c.chain(&pools[i], cands[i], 0))
	}
	var resp *clientv3.TxnResponse
	err := c.b.doFor("lock transaction", max(min(time.Until(deadline), AttemptTimeout), 500*time.Millisecond), func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Commit(ctx, t)
		return err
	})
	if err != nil {
		if !ambiguous(err) {
			if etcderr.Code(err) == clientv3.InvalidArgument && strings.Contains(err.Error(), "too many operations") {
				return txnResult{}, fmt.Errorf("the etcd cluster refuses a transaction of %d keys: withlock-etcd needs --max-txn-ops of at least %d on the etcd members (%v)", len(keys)+len(pools), MaxTxnOps, err)
			}
			return txnResult{}, err
		}
		// The transaction timed out or the connection broke: it may
		// have been applied. Read the keys back and decide by lease; if
		// it does not show, TryAcquire fences it (errResend).
		c.b.Rereads.Add(1)
		res, applied, rerr := c.reread(keys, pools, cands, deadline)
		if rerr != nil {
			return txnResult{}, fmt.Errorf("%w (and reading it back: %v)", err, rerr)
		}
		if applied {
			return res, nil
		}
		return txnResult{}, fmt.Errorf("%w: %v", errResend, err)
	}
	res := txnResult{rev: resp.Header.Revision, slots: make([]int, len(pools))}
	if !resp.Succeeded {
		for i, r := range resp.Responses {
			if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				if rr.Kvs[0].Lease == int64(lease) {
					// Held by this very lease: an earlier attempt
					// applied after all. Never wait on oneself.
					return txnResult{}, fmt.Errorf("%w: a key is already held under this lease", errResend)
				}
				c.busyKey, c.busyRev = keys[i].key, resp.Header.Revision
				c.led.hold(keys[i].key, rr.Kvs[0].CreateRevision)
				res.busy = &BusyError{What: keys[i].canon, Key: keys[i].key, Holders: holders(rr.Kvs)}
				return res, nil
			}
		}
		// A key was busy at the compare but gone by the gets (same
		// revision, so impossible); report it generically.
		res.busy = &BusyError{What: "a path", Key: keys[0].key}
		return res, nil
	}
	for i := range pools {
		r := resp.Responses[len(keys)+i].GetResponseTxn()
		for j := 0; ; j++ {
			if r.Succeeded {
				res.slots[i] = cands[i][j]
				break
			}
			next := r.Responses[0]
			if rr := next.GetResponseRange(); rr != nil {
				c.busyKey, c.busyPrefix, c.busyRev = pools[i].prefix, true, resp.Header.Revision
				res.busy = c.poolBusy(&pools[i], rr.Kvs)
				res.busy.dealt = pools[i].shared
				break
			}
			r = next.GetResponseTxn()
		}
		if res.busy != nil {
			res.busy.undo = putKeys(keys, pools, cands, resp)
			return res, nil
		}
	}
	return res, nil
}

// putKeys lists the keys a transaction that found a pool full put: its
// path keys and the slot of every pool whose chain succeeded.
func putKeys(keys []pathKey, pools []pool, cands [][]int, resp *clientv3.TxnResponse) []string {
	put := make([]string, 0, len(keys)+len(pools))
	for _, k := range keys {
		put = append(put, k.key)
	}
	for i := range pools {
		r := resp.Responses[len(keys)+i].GetResponseTxn()
		for j := 0; r != nil && j < len(cands[i]); j++ {
			if r.Succeeded {
				put = append(put, pools[i].slotKey(cands[i][j]))
				break
			}
			r = r.Responses[0].GetResponseTxn()
		}
	}
	return put
}

// undo deletes the keys a busy transaction put under the claim's lease
// (BusyError.undo), in one transaction that requires each still under it,
// so that a queued claim keeps its lease and with it its queue key and
// place. false if that was not done: the caller then revokes the lease.
func (c *claim) undo(put []string) bool {
	t := &etcdclient.Txn{}
	for _, k := range put {
		t.If(etcdclient.LeaseIs(k, c.lease.id)).Then(etcdclient.Delete(k))
	}
	var resp *clientv3.TxnResponse
	err := c.b.do("give back a busy attempt's keys", func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Commit(ctx, t)
		return err
	})
	if err != nil || !resp.Succeeded {
		return false
	}
	if c.busyPrefix {
		// Our own deletes are no release to wake for.
		c.busyRev = max(c.busyRev, resp.Header.Revision)
	}
	return true
}

func (c *claim) chain(p *pool, cands []int, j int) *pb.RequestOp {
	i := cands[j]
	k := p.slotKey(i)
	t := new(etcdclient.Txn).If(etcdclient.CreateIs(k, 0)).Then(etcdclient.Put(k, p.value(c.b.cfg.Holder, i), c.lease.id))
	if j == len(cands)-1 {
		return t.Else(etcdclient.GetPrefix(p.prefix)).Op()
	}
	return t.Else(c.chain(p, cands, j+1)).Op()
}

// reread decides a transaction whose outcome is unknown: its keys are read
// back (a read is safe to retry) and compared with the lease. The
// transaction was atomic, so either every key it put carries the lease or
// none does. applied is false when it was not applied: nothing of it is
// held and it may be sent again. A pool's slot is the key under the lease
// among its candidates (the occurrences of a shared pool have disjoint
// candidates, see dealSlots).
func (c *claim) reread(keys []pathKey, pools []pool, cands [][]int, deadline time.Time) (res txnResult, applied bool, err error) {
	lease := int64(c.lease.id)
	ops := make([]clientv3.Op, 0, len(keys)+len(pools))
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k.key))
	}
	for _, p := range pools {
		ops = append(ops, clientv3.OpGet(p.prefix, clientv3.WithPrefix()))
	}
	var resp *clientv3.TxnResponse
	for {
		left := time.Until(deadline)
		err = c.b.doFor("read back the lock transaction", max(min(left, AttemptTimeout), 500*time.Millisecond), func(ctx context.Context) (err error) {
			resp, err = c.b.cli.Txn(ctx).Then(ops...).Commit()
			return err
		})
		if err == nil || !errors.Is(err, ErrUnavailable) || left < 200*time.Millisecond {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return res, false, err
	}
	res.slots = make([]int, len(pools))
	mine := 0
	var rev int64
	for i := range keys {
		for _, kv := range resp.Responses[i].GetResponseRange().Kvs {
			if kv.Lease == lease {
				mine++
				rev = max(rev, kv.CreateRevision)
			}
		}
	}
	gotPools := 0
	for i, p := range pools {
		res.slots[i] = -1
		for _, kv := range resp.Responses[len(keys)+i].GetResponseRange().Kvs {
			if kv.Lease == lease {
				if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p.prefix)); err == nil && slices.Contains(cands[i], n) {
					res.slots[i] = n
					rev = max(rev, kv.CreateRevision)
					gotPools++
				}
			}
		}
	}
	switch {
	case mine == 0 && gotPools == 0:
		// Not applied (or applied and busy, which put nothing).
		return res, false, nil
	case mine == len(keys) && gotPools == len(pools):
		// Applied, and every pool had a free slot.
		res.rev = rev
		return res, true, nil
	}
	// Applied with a pool full: busy; the caller revokes what was put.
	for i, s := range res.slots {
		if s < 0 {
			res.busy = c.poolBusy(&pools[i], nil)
			break
		}
	}
	if res.busy == nil {
		res.busy = &BusyError{What: "a path", Key: keys[0].key}
	}
	res.busy.partial = true
	return res, true, nil
}

func (c *claim) poolBusy(p *pool, kvs []*mvccpb.KeyValue) *BusyError {
	unit := "slots"
	if p.size == 1 {
		unit = "slot"
	}
	return &BusyError{What: fmt.Sprintf("slot pool %s (%d %s)", p.template, p.size, unit), Key: p.prefix, Holders: holders(kvs), pool: true}
}

func holders(kvs []*mvccpb.KeyValue) []string {
	var hs []string
	for _, kv := range kvs {
		var v value
		if json.Unmarshal(kv.Value, &v) != nil {
			hs = append(hs, fmt.Sprintf("lease %x", kv.Lease))
			continue
		}
		hs = append(hs, describe(v.Holder, v.Since))
	}
	return hs
}

// WaitChange waits until the key (or pool) that was busy is deleted or its
// lease expires, using an etcd watch from the revision the busy attempt saw,
// so a release between that attempt and the watch is not missed.
//
// Every waiter sees a release at once, and each attempt after it is a
// write through the cluster's log, taken or not: with many waiters on one
// key, all but one of them write for nothing at every hand-over (a
// thundering herd, most of the cluster's work under contention). So a
// waiter that has already lost such a race (raced) staggers: after a
// release it waits a random time below stagger, watching, and tries only
// if nobody has taken what was freed meanwhile (a put of the key, or of as
// many slots as were freed); else it waits for the next release. A waiter
// that has not lost a race tries at once, so a lone waiter never waits for
// nothing. This orders nobody: who gets the key after a release is left to
// chance, as before (a fair queue would also make a hand-over one write
// instead of two: the release, then the next holder's transaction).
func (c *claim) WaitChange(ctx context.Context, poll time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, poll)
	defer cancel()
	if c.busyKey == "" {
		<-wctx.Done()
		return ctx.Err()
	}
	// A waiter takes its place in the queue (queue.go) the first time it
	// waits for its paths, so that later sets that intersect its set
	// yield to it.
	if c.keepsLedger() {
		if handled, err := c.waitLedger(ctx, wctx); handled {
			return err
		}
	}
	c.enqueue()
	w := c.watchBusy()
	if w.missed {
		w.missed = false
		if c.busyQueue || !c.raced || c.queued() {
			c.woke = !c.busyQueue
			return ctx.Err()
		}
		w.freed, w.try = 1, time.After(rand.N(stagger))
	}
	for {
		select {
		case wr, ok := <-w.ch:
			if !ok || wr.Err() != nil {
				c.stopWatch()
				c.b.cli.Widen()
				return ctx.Err()
			}
			if c.busyQueue {
				// Waiting behind an earlier waiter: its key deleted
				// (it took its set, stopped waiting, or its lease
				// ended) may let this one in.
				// Behind waiters for a pool: one of them leaving
				// or a slot of the pool freed.
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.DELETE && (c.busyEnd == "" || c.poolWakes(string(ev.Kv.Key))) {
						return ctx.Err()
					}
				}
				continue
			}
			for _, ev := range wr.Events {
				switch {
				case ev.Type == mvccpb.DELETE:
					w.freed++
				case w.freed > 0:
					w.freed-- // taken again by another waiter
				}
			}
			switch {
			case w.freed > 0 && (!c.raced || c.queued()):
				// A queued waiter never staggers: a later one yields
				// to it, whoever it raced before.
				c.woke = true
				return ctx.Err()
			case w.freed > 0 && w.try == nil:
				w.try = time.After(rand.N(stagger))
			case w.freed <= 0:
				w.freed, w.try = 0, nil
			}
		case <-w.try:
			c.woke = true
			return ctx.Err()
		case <-wctx.Done():
			// The poll ran out with the watch healthy and nothing
			// freed: TryAcquire answers busy without a request, and
			// the watch goes on for the next WaitChange.
			c.quiet = ctx.Err() == nil && w.freed <= 0 && c.busy != nil
			return ctx.Err()
		}
	}
}

// busyWatch is a watch of what the last attempt found busy, from the
// revision at which it was busy: kept across WaitChange calls while that
// does not change (a watch started again would replay every change since
// that revision, each time).
type busyWatch struct {
	key    string
	prefix bool
	end    string // a range [key, end)
	rev    int64
	ch     clientv3.WatchChan
	cancel context.CancelFunc
	freed  int              // deletes minus puts since the first delete
	missed bool             // released before the watch began (watchFromNow)
	try    <-chan time.Time // when a staggering waiter tries
}

// watchBusy returns the watch of what is busy now, started if need be.
func (c *claim) watchBusy() *busyWatch {
	if w := c.watch; w != nil && w.key == c.busyKey && w.prefix == c.busyPrefix && w.end == c.busyEnd && w.rev == c.busyRev {
		return w
	}
	c.stopWatch()
	if !c.busyPrefix && c.busyEnd == "" && c.busyRev > 0 {
		if w := c.watchFromNow(); w != nil {
			c.watch = w
			return w
		}
	}
	var opts []clientv3.OpOption
	if c.busyRev > 0 {
		opts = append(opts, clientv3.WithRev(c.busyRev+1))
	}
	switch {
	case c.busyPrefix:
		opts = append(opts, clientv3.WithPrefix())
	case c.busyEnd != "":
		opts = append(opts, clientv3.WithRange(c.busyEnd))
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	c.watch = &busyWatch{key: c.busyKey, prefix: c.busyPrefix, end: c.busyEnd, rev: c.busyRev, cancel: cancel,
		ch: c.b.cli.Watch(ctx, c.busyKey, opts...)}
	return c.watch
}

// watchFromNow watches the busy key from the revision at which the watch
// is created, then reads the key: if it was deleted (or taken again) since
// the busy read, missed is set. A watch from a past revision would see
// that too, but etcd delivers the events of a watch that starts behind its
// current revision from a loop that runs every 100 ms: under contention,
// where every hand-over makes the next waiter start a watch behind a few
// writes, that wait was most of a hand-over. nil if the watch was not
// created within AttemptTimeout (the caller then watches from the busy
// revision).
func (c *claim) watchFromNow() *busyWatch {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	w := &busyWatch{key: c.busyKey, rev: c.busyRev, cancel: cancel,
		ch: c.b.cli.Watch(ctx, c.busyKey, clientv3.WithCreatedNotify())}
	t := time.NewTimer(AttemptTimeout)
	defer t.Stop()
	select {
	case wr, ok := <-w.ch:
		if !ok || wr.Err() != nil || !wr.Created {
			cancel()
			c.b.cli.Widen()
			return nil
		}
		if wr.Header.Revision <= c.busyRev {
			return w // nothing was written since the busy read
		}
	case <-t.C:
		cancel()
		c.b.cli.Widen()
		return nil
	}
	rctx, rcancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer rcancel()
	r, err := c.b.cli.Get(rctx, c.busyKey, clientv3.WithKeysOnly())
	w.missed = err != nil || len(r.Kvs) == 0 || r.Kvs[0].CreateRevision > c.busyRev
	return w
}

func (c *claim) stopWatch() {
	if c.watch != nil {
		c.watch.cancel()
		c.watch = nil
	}
}

// stagger bounds how long a waiter that lost a race for a key waits,
// after the next release, before it tries (WaitChange): long enough for
// the put of the waiter that tried first to reach the others (a few
// milliseconds on a loaded host), short next to a critical section.
const stagger = 20 * time.Millisecond

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
		return &unavailableError{what: what, err: err, endpoints: b.cfg.Endpoints, timeout: t}
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
			var ue *unavailableError
			if errors.As(err, &ue) {
				ue.timeout = b.rto
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type unavailableError struct {
	what      string
	err       error
	endpoints []string
	timeout   time.Duration
}

func (e *unavailableError) Error() string {
	if errors.Is(e.err, context.DeadlineExceeded) {
		return fmt.Sprintf("etcd unavailable: %s: no answer from %s within %v", e.what, strings.Join(e.endpoints, ","), e.timeout)
	}
	return fmt.Sprintf("etcd unavailable: %s: %v (%s)", e.what, e.err, strings.Join(e.endpoints, ","))
}

func (e *unavailableError) Is(t error) bool {
	return t == ErrUnavailable || t == lockset.ErrUnavailable
}
func (e *unavailableError) Unwrap() error { return e.err }

// ambiguous reports whether err leaves the outcome of a write unknown: a
// timeout, a broken connection, a leader change. Errors the server returns
// after deciding (bad request, lease not found, too many operations) are
// not ambiguous.
func ambiguous(err error) bool {
	var ue *unavailableError
	return errors.As(err, &ue) || etcderr.Ambiguous(err)
}

// hostname for Holder defaults.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}
