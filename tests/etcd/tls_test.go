//go:build etcd

package etcd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/tests/etcd/cluster"
)

// pki is a CA made by the test and the certificates it signed, as PEM
// files in dir.
type pki struct {
	t    *testing.T
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	serN int64
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "withlock test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{t: t, dir: t.TempDir(), ca: ca, key: key, serN: 1}
	p.write("ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(name, typ string, der []byte) string {
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return f
}

// issue signs a certificate for cn (a server's for 127.0.0.1 and
// etcd.test, and a client's) and returns its and its key's files.
func (p *pki) issue(cn string) (cert, key string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serN++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serN),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"etcd.test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(cn+".pem", "CERTIFICATE", der), p.write(cn+"-key.pem", "EC PRIVATE KEY", kd)
}

func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.pem") }

// tlsConfig is a client configuration with cert and key.
func (p *pki) tlsConfig(cert, key string) *tls.Config {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		p.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
}

// A one-member cluster that serves clients over TLS only and requires a
// client certificate (--client-cert-auth), with etcd's auth enabled: a
// user "locker" whose role may use the test's prefix only. withlock-etcd
// and cron-gate reach it with the CA, a client certificate and the user's
// password from a 0600 file or the environment; without a certificate, or
// with a wrong password, nothing runs; a password file others can read is
// refused; the password reaches neither the command's environment nor a
// message; the TLS options refuse http:// endpoints. Certificates are made
// by the test (crypto/x509).
func TestTLSAndAuth(t *testing.T) {
	need(t)
	p := prefix(t)
	pk := newPKI(t)
	srvCert, srvKey := pk.issue("server")
	rootCert, rootKey := pk.issue("root") // etcd takes a client certificate's CN as the user
	lockCert, lockKey := pk.issue("client")
	dir := t.TempDir()
	tc, err := cluster.StartWith(dir, 1, clientBase+5, peerBase+5, cluster.Options{
		CertFile: srvCert, KeyFile: srvKey, CAFile: pk.caFile(), ClientCertAuth: true,
		ClientTLS: pk.tlsConfig(rootCert, rootKey),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	const password = "s3cret-p4ss"
	enableAuth(t, tc, p, password)
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eps := tc.EndpointList()
	base := []string{"--endpoints", eps, "--ca-file", pk.caFile(), "--cert-file", lockCert, "--key-file", lockKey, "--key-prefix", p}
	wl := func(env []string, args ...string) result {
		t.Helper()
		return run(t, append([]string{"WITHLOCK_ETCD_ENDPOINTS="}, env...), "withlock-etcd", args...)
	}
	noSecret := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Errorf("%s: the password shows in the output: %q %q", what, r.stdout, r.stderr)
		}
	}

	// The password from a file; then from the environment, which the
	// command does not inherit.
	r := wl(nil, append(base, "--etcd-user", "locker", "--password-file", pwFile, "--paths", "/srv/tls.md", "--", "sh", "-c", "echo ran")...)
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("TLS, client certificate, password file: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = wl([]string{"WITHLOCK_ETCD_USER=locker", "WITHLOCK_ETCD_PASSWORD=" + password},
		append(base, "--paths", "/srv/tls.md", "--", "sh", "-c", `echo "[${WITHLOCK_ETCD_PASSWORD-unset}]"`)...)
	if r.code != 0 || r.stdout != "[unset]\n" {
		t.Fatalf("password from the environment: exit %d %q %q (want the command not to see it)", r.code, r.stdout, r.stderr)
	}
	noSecret("password from the environment", r)

	// Refusals: a wrong password, a password file others can read, no
	// client certificate, http:// endpoints with TLS options, a password
	// given in the URL.
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("not-"+password), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte(password), 0o644)
	os.Chmod(open, 0o644)
	for _, c := range []struct {
		what string
		args []string
		want string
	}{
		{"wrong password", append(base, "--etcd-user", "locker", "--password-file", wrong), "refused the login"},
		{"password file others can read", append(base, "--etcd-user", "locker", "--password-file", open), "has mode 0644"},
		{"user without password", append(base, "--etcd-user", "locker"), "has no password"},
		{"http:// with TLS options", []string{"--endpoints", strings.ReplaceAll(eps, "https://", "http://"), "--ca-file", pk.caFile(), "--key-prefix", p}, "need TLS endpoints"},
		{"password in the URL", []string{"--endpoints", strings.ReplaceAll(eps, "https://", "https://locker:"+password+"@"), "--key-prefix", p}, "carries a user or password"},
		{"user on a cluster that needs a certificate, without one", []string{"--endpoints", eps, "--ca-file", pk.caFile(), "--key-prefix", p, "--etcd-user", "locker", "--password-file", pwFile}, "etcd unavailable"},
	} {
		r := wl(nil, append(c.args, "--paths", "/srv/tls.md", "--", "sh", "-c", "echo ran")...)
		if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d %q %q; want 125, nothing run, %q", c.what, r.code, r.stdout, r.stderr, c.want)
		}
		noSecret(c.what, r)
	}

	// cron-gate's [etcd] with the same options: a pause set on one host
	// stops the gate on another.
	eq := func(s string) string { return fmt.Sprintf("%q", s) }
	extra := strings.Join([]string{
		"ca_file = " + eq(pk.caFile()), "cert_file = " + eq(lockCert), "key_file = " + eq(lockKey),
		"user = \"locker\"", "password_file = " + eq(pwFile)}, "\n")
	a, b := newCGHostAt(t, "a", tc.Endpoints(), extra), newCGHostAt(t, "b", tc.Endpoints(), extra)
	if r := a.cg("pause", "g", "--reason", "tls"); r.code != 0 {
		t.Fatalf("pause over TLS with auth: %d %s", r.code, r.stderr)
	}
	if r := b.cg("-v", "g", "--", "true"); r.code != 75 || !strings.Contains(r.stderr, "paused by command") {
		t.Fatalf("the other host's run: %d %s", r.code, r.stderr)
	}
	if r := b.cg("resume", "g"); r.code != 0 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	r = run(t, []string{"CRON_GATE_CACHE_DIR=" + filepath.Join(a.dir, "cache"), "CRON_GATE_ETCD_PASSWORD=" + password}, "cron-gate",
		"--config", newCGHostAt(t, "c", tc.Endpoints(), strings.ReplaceAll(extra, "password_file = "+eq(pwFile), "")).config,
		"g", "--", "sh", "-c", `echo "[${CRON_GATE_ETCD_PASSWORD-unset}]"`)
	if r.code != 0 || r.stdout != "[unset]\n" {
		t.Fatalf("cron-gate with $CRON_GATE_ETCD_PASSWORD: exit %d %q %q (want the command not to see it)", r.code, r.stdout, r.stderr)
	}
	noSecret("cron-gate", r)
}

// enableAuth turns on etcd's auth on the TLS cluster: root (the admin
// client's certificate says CN=root), and a user "locker" with password
// whose role may read and write under prefix only.
func enableAuth(t *testing.T, tc *cluster.Cluster, prefix, password string) {
	t.Helper()
	cli, err := tc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "root-"+password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "lockers"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "lockers", prefix+"/", clientv3.GetPrefixRangeEnd(prefix+"/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "locker", password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "locker", "lockers"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("enabling etcd auth, step %d: %v", i+1, err)
		}
	}
}
