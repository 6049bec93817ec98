//go:build linux

package cluster

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Servers started with Options.ExtraArgs test the client against a
// server's limits and timers that the default flags leave far away, for
// example:
//
//	--auth-token simple --auth-token-ttl 2  tokens that expire within a call
//	--grpc-keepalive-min-time 30s            pings more often are answered with GOAWAY
//	--max-request-bytes 65536                a request above 64 KiB is refused
//
// Flags given twice (one of them by the cluster itself) are an error of
// etcd's: ExtraArgs are for flags the cluster does not set.

// ClientAs is Client logged in as user with password, for a cluster whose
// etcd auth is enabled (Client, without a user, is refused there unless
// its certificate names one).
func (c *Cluster) ClientAs(user, password string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: c.opt.ClientTLS,
		Username: user, Password: password})
}
