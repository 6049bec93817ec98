//go:build linux

package gate

import "time"

// EtcdConfig is the `[etcd]` table: where the shared pauses live. It is
// "set" when it names endpoints.
type EtcdConfig struct {
	Endpoints []string      // `endpoints`: client URLs of every member
	Prefix    string        // `prefix`: key prefix, "" for the default ("/cron-gate")
	Timeout   time.Duration // `timeout`: per call, retries included; 0 for the default
	RunOnDown bool          // `on_coordinator_down = "run"`; false is "skip" (fail closed)
	// TLS and etcd auth (docs/etcd.md, "TLS and auth"): `ca_file`,
	// `cert_file`, `key_file`, `server_name`, `user`, `password_file`.
	// The password itself is never in the config: it is in password_file
	// or $CRON_GATE_ETCD_PASSWORD.
	CAFile, CertFile, KeyFile, ServerName, User, PasswordFile string
}

// DefaultEtcdTimeout is `timeout` when not set.
const DefaultEtcdTimeout = 5 * time.Second

// Set reports whether the config names a cluster.
func (e *EtcdConfig) Set() bool { return len(e.Endpoints) > 0 }

// TimeoutOr returns timeout or its default.
func (e *EtcdConfig) TimeoutOr() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultEtcdTimeout
}
