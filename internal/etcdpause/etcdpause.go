//go:build linux

// Package etcdpause keeps cron-gate's command-line pauses in an etcd
// cluster, so that `cron-gate pause NAME` on one host pauses the gate on
// every host that names the same cluster and prefix. Only the binary that
// talks to etcd (cron-gate-etcd) links it; cron-gate itself stays lean.
//
// Keys (PREFIX is Config.Prefix, "/cron-gate" by default; one prefix per
// independent deployment sharing a cluster):
//
//	PREFIX/pauses/<gate>   the pause: gate.Pause as JSON, by "command";
//	                       under a lease when the pause has an Until
//	PREFIX/resumed/<gate>  when the gate last resumed, for the watchdog:
//	                       {"resumed", "pause_until", "who", "id"}; no lease
//
// Guarantees:
//   - a read (Get, List) is one linearizable request: it sees every Set and
//     Clear that finished before it started, from any host;
//   - each gate is its own pair of keys, and every write is a transaction
//     conditioned on the revisions it read (retried on conflict): hosts
//     pausing and resuming the same or different gates at once lose nothing;
//     the last write of a gate wins, whole;
//   - a pause with an Until ends at Until by the reading host's clock, and
//     its key is put under a lease of the remaining time (rounded up to a
//     second) so that the cluster removes it by itself, even if no host is
//     up. The lease is the garbage collector, not the deadline: etcd
//     restarts every lease's countdown when a new leader is elected, so the
//     key can outlive Until by up to its TTL, and readers ignore it then;
//   - a pause that replaces a lease-bound one is put without that lease
//     (and the old lease is revoked): the old lease's expiry never removes
//     a newer pause;
//   - every call is bounded: one attempt lasts at most AttemptTimeout, and
//     attempts that found no answer are repeated until Config.Timeout (or
//     the caller's deadline, if sooner); then the error wraps
//     ErrUnavailable. Reads are repeated freely; a write whose outcome is
//     unknown (a timeout, a lost connection) is re-read first: each Set or
//     Clear carries an id in the resume record, so a write that was applied
//     is recognised and not repeated, and one that was not is sent again
//     conditioned on fresh revisions, so that a late copy of it can never
//     apply over a newer write;
//   - a value that is not a pause is an error wrapping ErrCorrupt that names
//     the key; it never panics and never reads as "not paused".
package etcdpause

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/etcdendpoint"
	"github.com/crongate/crongate/internal/safetext"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/gate"
)

// Defaults.
const (
	DefaultPrefix      = gate.DefaultEtcdPrefix
	DefaultEndpoint    = etcdclient.DefaultEndpoint
	DefaultDialTimeout = 2 * time.Second
	// DefaultTimeout bounds one call, retries included. A run that cannot
	// read its pause within it is skipped (coordinator_down): a leader
	// election (1-2 s with etcd's defaults) fits, a dead cluster does not
	// hold a cron tick for long.
	DefaultTimeout = gate.DefaultEtcdTimeout
	// AttemptTimeout bounds one request, so that a request stuck on a dead
	// or frozen member is sent again (to another member) in time.
	AttemptTimeout = 1500 * time.Millisecond
	// maxLeaseTTL is etcd's largest lease TTL (seconds); a pause longer
	// than that gets a lease of that length and ends by its Until.
	maxLeaseTTL = 9_000_000_000
)

// ErrUnavailable is wrapped by every error that means the cluster could not
// be reached or did not answer in time (no quorum, wrong endpoints, a
// partition). The run path skips the run then (fail closed, reason
// coordinator_down). After a Set or Clear it means the outcome is unknown:
// the write may or may not have been applied.
var ErrUnavailable = gate.ErrCoordinatorDown // "etcd unavailable": cron-gate's run path skips on it

// Config configures a Store.
type Config struct {
	// Endpoints are the client URLs of the members; give every member.
	// Empty: DefaultEndpoint.
	Endpoints []string
	// Security is TLS and etcd auth; Check it first
	// (etcdclient.Security.Check).
	Security etcdclient.Security
	// Prefix is where the keys live; empty: DefaultPrefix. It starts with
	// "/" and does not end with "/".
	Prefix string
	// DialTimeout bounds connecting to a member; 0: DefaultDialTimeout.
	DialTimeout time.Duration
	// Timeout bounds each call, retries included; 0: DefaultTimeout.
	Timeout time.Duration
	// Who is written into resume records ("user@host"); empty: gate.Who().
	Who string
	// Now is the clock that decides whether a pause's Until has passed;
	// nil: time.Now. (For tests.)
	Now func() time.Time
}

// Store is a connection to the cluster that holds the pauses: a
// gate.PauseStore that every host naming the same cluster and prefix shares.
type Store struct {
	cfg      Config
	cli      *etcdclient.Client
	now      func() time.Time
	checked  sync.Once
	versions *etcdclient.VersionCheck // started after the first answer
}

var _ gate.PauseStore = (*Store)(nil)

// Open checks cfg and creates a client. It does not contact the cluster:
// an unreachable cluster shows up as ErrUnavailable from the first call.
func Open(cfg Config) (*Store, error) {
	eps, err := etcdclient.Endpoints(cfg.Endpoints, "[etcd] endpoints")
	if err != nil {
		return nil, err
	}
	cfg.Endpoints = eps
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if err := etcdendpoint.CheckPrefix(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("[etcd] prefix %w", err)
	}
	if cfg.DialTimeout < 0 || cfg.Timeout < 0 {
		return nil, errors.New("etcd timeouts must not be negative")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cli, err := etcdclient.New(cfg.Endpoints, cfg.DialTimeout, cfg.Security, ErrUnavailable)
	if err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, cli: cli, now: now}, nil
}

// Warning returns, once per process, the warning for cluster members
// older than the minimum safe server version (etcdclient.CheckVersions,
// started after the first answer from the cluster), "" if there is none or
// the check did not end within wait. cron-gate writes it to stderr and in
// the run's start record (gate.Warner).
func (s *Store) Warning(wait time.Duration) string {
	return s.versions.Warning(wait)
}

// answered starts the version check after a first answer.
func (s *Store) answered() {
	s.checked.Do(func() { s.versions = etcdclient.CheckVersions(s.cli, s.cfg.Timeout) })
}

// Close closes the client.
func (s *Store) Close() error { return s.cli.Close() }

// Prefix is the key prefix in use.
func (s *Store) Prefix() string { return s.cfg.Prefix }

// PauseKey is the key of gate's pause under prefix.
func PauseKey(prefix, gate string) string { return prefix + "/pauses/" + gate }

// ResumeKey is the key of gate's resume record under prefix.
func ResumeKey(prefix, gate string) string { return prefix + "/resumed/" + gate }

// Get returns the pause of gate that applies now, or nil: none, or its
// Until has passed. One linearizable read (repeated only if it got no
// answer).
func (s *Store) Get(ctx context.Context, name string) (*gate.Pause, error) {
	if err := gate.CheckName(name); err != nil {
		return nil, err
	}
	key := PauseKey(s.cfg.Prefix, name)
	var kv *mvccpb.KeyValue
	err := s.retry(ctx, "read the pause of gate "+name, func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, key)
		if err == nil {
			kv = first(r.Kvs)
		}
		return err
	})
	if err == nil {
		s.answered()
	}
	if err != nil || kv == nil {
		return nil, err
	}
	p, err := DecodePause(key, kv.Value)
	if err != nil {
		return nil, err
	}
	if !p.Active(s.now()) {
		return nil, nil
	}
	return &p, nil
}

// List returns every pause that applies now, by gate, for the status. A
// key that is not a valid pause (a bad value, a name CheckName refuses) is
// left out and reported in the error (wrapping ErrCorrupt), with the map
// of the valid ones; an unreachable cluster returns a nil map.
func (s *Store) List(ctx context.Context) (map[string]gate.Pause, error) {
	pfx := PauseKey(s.cfg.Prefix, "")
	kvs, err := s.scan(ctx, pfx, "read the pauses")
	if err != nil {
		return nil, err
	}
	now := s.now()
	m := map[string]gate.Pause{}
	err = eachGate(kvs, pfx, func(name, key string, value []byte) error {
		p, err := DecodePause(key, value)
		if err == nil && p.Active(now) {
			m[name] = p
		}
		return err
	})
	return m, err
}

// ResumedAt returns when gate last resumed, as far as the cluster knows:
// its last Clear, or the Until of a pause that has since ended by itself;
// zero if neither. The watchdog takes the later of this and the local
// pauses.json's (gate.PauseFile.NoteResumed, which also records the resumes of
// config pauses, a per-host matter).
func (s *Store) ResumedAt(ctx context.Context, name string) (time.Time, error) {
	if err := gate.CheckName(name); err != nil {
		return time.Time{}, err
	}
	key := ResumeKey(s.cfg.Prefix, name)
	var kv *mvccpb.KeyValue
	err := s.retry(ctx, "read the resume of gate "+name, func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, key)
		if err == nil {
			kv = first(r.Kvs)
		}
		return err
	})
	if err == nil {
		s.answered()
	}
	if err != nil || kv == nil {
		return time.Time{}, err
	}
	r, err := decodeRecord(key, kv.Value)
	if err != nil {
		return time.Time{}, err
	}
	return r.resumedAt(s.now()), nil
}

// Resumes returns ResumedAt of every gate the cluster has a record of
// (non-zero times only), with the same error rules as List.
func (s *Store) Resumes(ctx context.Context) (map[string]time.Time, error) {
	pfx := ResumeKey(s.cfg.Prefix, "")
	kvs, err := s.scan(ctx, pfx, "read the resumes")
	if err != nil {
		return nil, err
	}
	now := s.now()
	m := map[string]time.Time{}
	err = eachGate(kvs, pfx, func(name, key string, value []byte) error {
		r, err := decodeRecord(key, value)
		if err == nil {
			if t := r.resumedAt(now); !t.IsZero() {
				m[name] = t
			}
		}
		return err
	})
	return m, err
}

// eachGate calls fn for every key under pfx whose gate name CheckName
// accepts; the keys it refuses and fn's errors are joined into the error
// (each wrapping ErrCorrupt), the others are still visited.
func eachGate(kvs []*mvccpb.KeyValue, pfx string, fn func(name, key string, value []byte) error) error {
	var bad []error
	for _, kv := range kvs {
		key := string(kv.Key)
		name := key[len(pfx):]
		if err := gate.CheckName(name); err != nil {
			bad = append(bad, corrupt(key, err))
		} else if err := fn(name, key, kv.Value); err != nil {
			bad = append(bad, err)
		}
	}
	return errors.Join(bad...)
}

func (s *Store) scan(ctx context.Context, pfx, what string) ([]*mvccpb.KeyValue, error) {
	var kvs []*mvccpb.KeyValue
	err := s.retry(ctx, what, func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix())
		if err == nil {
			kvs = r.Kvs
		}
		return err
	})
	return kvs, err
}

// Set pauses gate on every host, replacing its earlier command-line pause
// (By is set to "command"). With an Until, which must be in the future,
// the key is put under a lease of the remaining time, rounded up to whole
// seconds. The resume record is updated in the same transaction: an earlier
// pause whose Until has passed counts as the last resume, and the new
// Until is remembered (its key goes with its lease).
//
// A reason that gate.CheckReason refuses is refused before anything is
// written; Who is neutralised (safetext.Line).
//
// A Set that returns ErrUnavailable may or may not have been applied.
func (s *Store) Set(ctx context.Context, name string, p gate.Pause) error {
	if err := gate.CheckName(name); err != nil {
		return err
	}
	p.By = gate.ByCommand
	if err := gate.CheckReason(p.Reason); err != nil {
		return fmt.Errorf("pause of gate %s: %w", name, err)
	}
	// Who is informational (user@host); DecodePause refuses it with a
	// control character, which a host name could hold.
	p.Who = safetext.Line(p.Who)
	if !p.Until.IsZero() && !p.Until.After(s.now()) {
		return fmt.Errorf("pause of gate %s: until %s is not in the future", name, p.Until.Format(time.RFC3339))
	}
	val, err := EncodePause(p)
	if err != nil {
		return err
	}
	pk, rk := PauseKey(s.cfg.Prefix, name), ResumeKey(s.cfg.Prefix, name)
	id := newID()
	var lease, old clientv3.LeaseID
	err = s.retry(ctx, "pause gate "+name, func(ctx context.Context) error {
		pkv, rkv, err := s.readPair(ctx, pk, rk)
		if err != nil {
			return err
		}
		prev, perr := record{}, error(nil)
		if rkv != nil {
			prev, perr = decodeRecord(rk, rkv.Value)
			if perr == nil && prev.ID == id {
				return nil // an earlier attempt was applied
			}
			// A corrupt record is replaced: the resume time is only
			// for the watchdog's grace, and must not block a pause.
		}
		now := s.now()
		if lease == 0 && !p.Until.IsZero() {
			if !p.Until.After(now) {
				return definite{fmt.Errorf("pause of gate %s: until %s passed before it could be stored", name, p.Until.Format(time.RFC3339))}
			}
			g, err := s.cli.Grant(ctx, leaseTTL(p.Until.Sub(now)))
			if err != nil {
				// A grant that timed out may have created a lease;
				// holding no key, it expires by itself.
				return err
			}
			lease = g.ID
		}
		rec := record{Resumed: prev.resumedAt(now), PauseUntil: p.Until, Who: p.Who, ID: id}
		rv, _ := json.Marshal(rec)
		// Without a lease (0) the put detaches the key from any lease
		// it had: the old pause's lease can no longer remove it.
		tr, err := s.cli.Commit(ctx, new(etcdclient.Txn).If(
			etcdclient.ModIs(pk, modRev(pkv)),
			etcdclient.ModIs(rk, modRev(rkv)),
		).Then(
			etcdclient.Put(pk, string(val), lease),
			etcdclient.Put(rk, string(rv), clientv3.NoLease),
		))
		if err != nil {
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				lease = 0 // expired before use (a very short pause): grant anew
				return errConflict
			}
			return err
		}
		if !tr.Succeeded {
			return errConflict
		}
		if pkv != nil {
			old = clientv3.LeaseID(pkv.Lease)
		}
		return nil
	})
	if err == nil && old != 0 && old != lease {
		s.revoke(old)
	}
	return err
}

// Clear lifts gate's command-line pause on every host and reports whether
// there was one (expired by its Until or not, as long as its key was still
// there). When there was, the resume record says so (for the watchdog), in
// the same transaction as the delete.
//
// A Clear that returns ErrUnavailable may or may not have been applied.
func (s *Store) Clear(ctx context.Context, name string) (bool, error) {
	if err := gate.CheckName(name); err != nil {
		return false, err
	}
	who := s.cfg.Who
	if who == "" {
		who = gate.Who()
	}
	pk, rk := PauseKey(s.cfg.Prefix, name), ResumeKey(s.cfg.Prefix, name)
	id := newID()
	had := false
	var old clientv3.LeaseID
	err := s.retry(ctx, "resume gate "+name, func(ctx context.Context) error {
		pkv, rkv, err := s.readPair(ctx, pk, rk)
		if err != nil {
			return err
		}
		if rkv != nil {
			if r, err := decodeRecord(rk, rkv.Value); err == nil && r.ID == id {
				had = true // an earlier attempt was applied
				return nil
			}
		}
		if pkv == nil {
			had = false
			return nil
		}
		rv, _ := json.Marshal(record{Resumed: s.now(), Who: who, ID: id})
		tr, err := s.cli.Commit(ctx, new(etcdclient.Txn).If(
			etcdclient.ModIs(pk, pkv.ModRevision),
		).Then(
			etcdclient.Delete(pk),
			etcdclient.Put(rk, string(rv), clientv3.NoLease),
		))
		if err != nil {
			return err
		}
		if !tr.Succeeded {
			return errConflict
		}
		had, old = true, clientv3.LeaseID(pkv.Lease)
		return nil
	})
	if err == nil && old != 0 {
		s.revoke(old)
	}
	return had, err
}

// readPair reads both keys of a gate in one linearizable request.
func (s *Store) readPair(ctx context.Context, pk, rk string) (p, r *mvccpb.KeyValue, err error) {
	tr, err := s.cli.Txn(ctx).Then(clientv3.OpGet(pk), clientv3.OpGet(rk)).Commit()
	if err != nil {
		return nil, nil, err
	}
	return first(tr.Responses[0].GetResponseRange().Kvs), first(tr.Responses[1].GetResponseRange().Kvs), nil
}

// revoke ends a lease that no longer holds a key, best effort: if it
// fails, the lease expires by itself, and removes nothing then.
func (s *Store) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	s.cli.Revoke(ctx, id)
}

// leaseTTL is the TTL in whole seconds that covers d, at least 1 s. (etcd
// raises a TTL below its minimum, about 2 s with default settings; the
// Until check ends such a pause on time.)
func leaseTTL(d time.Duration) int64 {
	secs := math.Ceil(d.Seconds())
	if secs < 1 {
		return 1
	}
	if secs > maxLeaseTTL {
		return maxLeaseTTL
	}
	return int64(secs)
}

func first(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

func modRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errConflict: a transaction found that another writer got in between;
// read again and retry at once.
var errConflict = errors.New("changed concurrently")

// definite wraps an error that retrying cannot change.
type definite struct{ error }

func (d definite) Unwrap() error { return d.error }

// retry runs f until it succeeds, fails definitely, or the call's time is
// up: Config.Timeout from now, or the caller's deadline if sooner. Each
// attempt gets at most AttemptTimeout. Only errors that leave the outcome
// unknown (no answer, a lost connection, a leader change) and transaction
// conflicts are retried; f must make a repeat safe.
func (s *Store) retry(ctx context.Context, what string, f func(ctx context.Context) error) error {
	start := time.Now()
	deadline := start.Add(s.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var err error
	for {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		actx, cancel := context.WithTimeout(ctx, min(left, AttemptTimeout))
		err = f(actx)
		cancel()
		if err == nil {
			return nil
		}
		var d definite
		if errors.As(err, &d) {
			return d.error
		}
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		if errors.Is(err, errConflict) {
			continue
		}
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		if !etcdclient.Ambiguous(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		s.cli.Suspect()
		if time.Until(deadline) < 100*time.Millisecond {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if errors.Is(err, errConflict) {
		return fmt.Errorf("%s: the keys kept changing under concurrent writers for %v; try again", what, s.cfg.Timeout)
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return s.cli.Unavailable(what, err, time.Since(start))
}
