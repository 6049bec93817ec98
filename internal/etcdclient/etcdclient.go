// Package etcdclient creates the etcd client the way both packages that
// talk to etcd (etcdlock for withlock-etcd, etcdpause for cron-gate-etcd)
// need it, and holds the rules their configurations share: the default
// endpoint, no empty endpoint, the shape of a key prefix.
package etcdclient

import (
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultEndpoint is the client URL used when none is given: a member on
// this host, on etcd's default client port.
const DefaultEndpoint = "http://127.0.0.1:2379"

// Endpoints returns eps, or DefaultEndpoint alone when eps is empty. ok is
// false when an entry is empty (a stray comma): such a list is refused,
// not cleaned up.
func Endpoints(eps []string) (_ []string, ok bool) {
	if len(eps) == 0 {
		return []string{DefaultEndpoint}, true
	}
	for _, e := range eps {
		if e == "" {
			return nil, false
		}
	}
	return eps, true
}

// ValidPrefix reports whether p can be a key prefix: it starts with "/" and
// does not end with "/", so that the keys PREFIX/... are well formed and
// one deployment's prefix is never a prefix of another's keys by accident.
func ValidPrefix(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/")
}

// New creates a client for eps. It does not contact the cluster (client
// creation is lazy since 3.7): an unreachable cluster shows up in the first
// request. dialTimeout bounds connecting to a member. The client pings the
// member it talks to every 5 s and leaves it after 1 s without an answer,
// so a member that stopped answering (frozen, partitioned) is left in
// about 6 s, before a 10 s lease is at risk; etcd refuses pings more often
// than every 5 s (--grpc-keepalive-min-time). It logs nothing: errors are
// returned to the caller, which says them in its own words.
func New(eps []string, dialTimeout time.Duration) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
}
