//go:build linux

// Package cluster runs a real etcd cluster on loopback for the etcd tests
// and benchmarks: one etcd process per member (so that a member can be
// killed with SIGKILL or frozen with SIGSTOP like a crashed or partitioned
// host), data in a temporary directory, every wait bounded by a deadline.
package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is one etcd process.
type Member struct {
	Name       string
	ClientPort int
	PeerPort   int
	Dir        string
	cmd        *exec.Cmd
	done       chan struct{}
	stopped    bool // SIGSTOPped
}

// Cluster is a set of members started together.
type Cluster struct {
	Members []*Member
	Etcd    string // the etcd binary
	dir     string
	initial string
	opt     Options
}

// Options are what StartWith adds to a plain cluster: TLS on the client
// URLs (https://), with or without client certificates required.
type Options struct {
	// CertFile and KeyFile are the members' certificate and key, CAFile
	// the CA that signs clients' certificates; set, the client URLs are
	// https://.
	CertFile, KeyFile, CAFile string
	// ClientCertAuth makes the members require a client certificate
	// (etcd --client-cert-auth).
	ClientCertAuth bool
	// ClientTLS is what the cluster's own client (health, Leader) uses.
	ClientTLS *tls.Config
	// ExtraArgs are more etcd flags for every member (extra.go).
	ExtraArgs []string
}

// Find returns the path of the etcd binary: $ETCD_BIN if set (the suite's
// second server version, built from the Go module proxy by .ci/etcd.sh),
// else etcd on PATH; "" if there is none.
func Find() string {
	if p := os.Getenv("ETCD_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd"
	}
	return ""
}

// Start starts n members with client ports clientBase, clientBase+1, ...
// and peer ports peerBase, ... in dir, and waits until the cluster is
// healthy. Ports in use are an error (a leftover cluster would otherwise
// answer in place of this one).
func Start(dir string, n, clientBase, peerBase int) (*Cluster, error) {
	return StartWith(dir, n, clientBase, peerBase, Options{})
}

// StartWith is Start with opt.
func StartWith(dir string, n, clientBase, peerBase int, opt Options) (*Cluster, error) {
	etcd := Find()
	if etcd == "" {
		return nil, errors.New("etcd is not installed (apt-get install etcd-server etcd-client)")
	}
	c := &Cluster{Etcd: etcd, dir: dir, opt: opt}
	var init []string
	for i := 0; i < n; i++ {
		m := &Member{Name: fmt.Sprintf("m%d", i+1), ClientPort: clientBase + i, PeerPort: peerBase + i, Dir: filepath.Join(dir, fmt.Sprintf("m%d", i+1))}
		for _, p := range []int{m.ClientPort, m.PeerPort} {
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err != nil {
				return nil, fmt.Errorf("port %d is in use (a leftover etcd?): %w", p, err)
			} else {
				l.Close()
			}
		}
		c.Members = append(c.Members, m)
		init = append(init, fmt.Sprintf("%s=http://127.0.0.1:%d", m.Name, m.PeerPort))
	}
	c.initial = strings.Join(init, ",")
	for i := range c.Members {
		if err := c.start(i, "new"); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(i int, state string) error {
	m := c.Members[i]
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(c.dir, m.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cu := fmt.Sprintf("%s://127.0.0.1:%d", c.scheme(), m.ClientPort)
	pu := fmt.Sprintf("http://127.0.0.1:%d", m.PeerPort)
	args := []string{
		"--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", c.initial, "--initial-cluster-state", state,
		"--initial-cluster-token", "withlock-test",
		"--logger", "zap", "--log-level", "warn"}
	if c.opt.CertFile != "" {
		args = append(args, "--cert-file", c.opt.CertFile, "--key-file", c.opt.KeyFile, "--trusted-ca-file", c.opt.CAFile)
		if c.opt.ClientCertAuth {
			args = append(args, "--client-cert-auth")
		}
	}
	args = append(args, c.opt.ExtraArgs...)
	cmd := exec.Command(c.Etcd, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// A process group of its own: a test's signals never reach it, and
	// it is never left behind by a killed test (Pdeathsig, below).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(cmd); err != nil {
		return err
	}
	m.cmd, m.done, m.stopped = cmd, make(chan struct{}), false
	go func(done chan struct{}) { cmd.Wait(); close(done) }(m.done)
	return nil
}

// Pdeathsig fires when the thread that forked the child exits
// (go.dev/issue/27505), so every member is started from one goroutine that
// stays locked to its thread for the life of the process.
var starts = make(chan startReq)

type startReq struct {
	cmd *exec.Cmd
	err chan error
}

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range starts {
			r.err <- r.cmd.Start()
		}
	}()
}

func startLocked(cmd *exec.Cmd) error {
	r := startReq{cmd, make(chan error)}
	starts <- r
	return <-r.err
}

func (c *Cluster) scheme() string {
	if c.opt.CertFile != "" {
		return "https"
	}
	return "http"
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, fmt.Sprintf("%s://127.0.0.1:%d", c.scheme(), m.ClientPort))
	}
	return eps
}

// EndpointList is Endpoints joined by commas (for --endpoints).
func (c *Cluster) EndpointList() string { return strings.Join(c.Endpoints(), ",") }

// Pid is member i's process id (0 if it is not running).
func (c *Cluster) Pid(i int) int {
	if !c.Running(i) {
		return 0
	}
	return c.Members[i].cmd.Process.Pid
}

// Running reports whether member i's process is alive.
func (c *Cluster) Running(i int) bool {
	m := c.Members[i]
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Client returns a client of every member.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: c.opt.ClientTLS})
}

// WaitHealthy waits until every running, unfrozen member answers, they
// agree on a leader, and a linearizable read succeeds.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if last = c.healthy(); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd cluster not healthy after %v: %v", timeout, last)
}

func (c *Cluster) healthy() error {
	cli, err := c.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	leader := uint64(0)
	for i, m := range c.Members {
		if !c.Running(i) || m.stopped {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, c.Endpoints()[i])
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %v", m.Name, err)
		}
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return fmt.Errorf("%s: no agreed leader", m.Name)
		}
		leader = st.Leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "/health")
	return err
}

// Leader returns the index of the current leader.
func (c *Cluster) Leader() (int, error) {
	cli, err := c.Client()
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	for i := range c.Members {
		if !c.Running(i) || c.Members[i].stopped {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, c.Endpoints()[i])
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i, nil
		}
	}
	return -1, errors.New("no leader found")
}

// Kill kills member i with SIGKILL and waits for it to be gone.
func (c *Cluster) Kill(i int) error {
	m := c.Members[i]
	if !c.Running(i) {
		return nil
	}
	syscall.Kill(m.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-m.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not die", m.Name)
	}
}

// Restart starts a killed member again on its data.
func (c *Cluster) Restart(i int) error {
	if c.Running(i) {
		return fmt.Errorf("%s is running", c.Members[i].Name)
	}
	return c.start(i, "existing")
}

// Freeze stops (SIGSTOP) the given members and returns once every thread
// of each is stopped (a signal takes effect asynchronously: until then a
// member may still answer a request); Thaw continues them.
func (c *Cluster) Freeze(idx ...int) {
	for _, i := range idx {
		if c.Running(i) {
			syscall.Kill(c.Members[i].cmd.Process.Pid, syscall.SIGSTOP)
			c.Members[i].stopped = true
		}
	}
	for _, i := range idx {
		if c.Running(i) {
			waitStopped(c.Members[i].cmd.Process.Pid)
		}
	}
}

// waitStopped polls /proc/PID/task/*/stat until every thread of pid is in
// state T (stopped) or the process is gone, for at most 10 s.
func waitStopped(pid int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return
		}
		stopped := true
		for _, task := range tasks {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			i := bytes.LastIndexByte(data, ')')
			if err == nil && i >= 0 && i+2 < len(data) && data[i+2] != 'T' && data[i+2] != 't' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Thaw continues frozen members.
func (c *Cluster) Thaw(idx ...int) {
	for _, i := range idx {
		if c.Running(i) {
			syscall.Kill(c.Members[i].cmd.Process.Pid, syscall.SIGCONT)
			c.Members[i].stopped = false
		}
	}
}

// Frozen reports whether the member was frozen by Freeze and not thawed.
func (m *Member) Frozen() bool { return m.stopped }

// All returns the indices of every member.
func (c *Cluster) All() []int {
	idx := make([]int, len(c.Members))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// Close kills every member and waits for them.
func (c *Cluster) Close() {
	for i := range c.Members {
		c.Thaw(i)
		c.Kill(i)
	}
}

// Logs returns the tail of every member's log, for failure messages.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, m := range c.Members {
		data, _ := os.ReadFile(filepath.Join(c.dir, m.Name+".log"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", m.Name, strings.Join(lines, "\n"))
	}
	return b.String()
}
