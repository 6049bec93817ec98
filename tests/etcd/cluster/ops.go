//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The operations an operator runs on a live cluster, done the way an
// operator does them: with etcdctl (move-leader, member remove and add,
// compact, defrag), each waited for until the cluster shows it done. For
// a plain cluster (no TLS: Ctl passes no certificates).

// Etcdctl returns the path of etcdctl: $ETCDCTL_BIN if set, else etcdctl
// on PATH; "" if there is none.
func Etcdctl() string {
	if p := os.Getenv("ETCDCTL_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("etcdctl"); err == nil {
		return p
	}
	return ""
}

// Ctl runs etcdctl against endpoints (every running member's when empty)
// and returns its standard output; an error carries its output. It is
// bounded by 30 s.
func (c *Cluster) Ctl(endpoints []string, args ...string) (string, error) {
	ctl := Etcdctl()
	if ctl == "" {
		return "", errors.New("etcdctl is not installed (apt-get install etcd-client)")
	}
	if len(endpoints) == 0 {
		for i, ep := range c.Endpoints() {
			if c.Running(i) && !c.Members[i].stopped {
				endpoints = append(endpoints, ep)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"--endpoints", strings.Join(endpoints, ","), "--command-timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, ctl, all...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("etcdctl %s: %v: %s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// Status asks member i for its status (its ID, the leader it knows, its
// revision and raft indexes), within a second.
func (c *Cluster) Status(i int) (*clientv3.StatusResponse, error) {
	cli, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cli.Status(ctx, c.Endpoints()[i])
}

// ID returns member i's member ID, as the member says.
func (c *Cluster) ID(i int) (uint64, error) {
	st, err := c.Status(i)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Members[i].Name, err)
	}
	return st.Header.MemberId, nil
}

// MoveLeader moves the leadership to member to (etcdctl move-leader) and
// waits, at most timeout, until every running member names it as leader.
func (c *Cluster) MoveLeader(to int, timeout time.Duration) error {
	id, err := c.ID(to)
	if err != nil {
		return err
	}
	if _, err := c.Ctl(nil, "move-leader", strconv.FormatUint(id, 16)); err != nil {
		return err
	}
	return c.poll(timeout, fmt.Sprintf("every member to name %s leader", c.Members[to].Name), func() error {
		for i := range c.Members {
			if !c.Running(i) || c.Members[i].stopped {
				continue
			}
			st, err := c.Status(i)
			if err != nil {
				return fmt.Errorf("%s: %v", c.Members[i].Name, err)
			}
			if st.Leader != id {
				return fmt.Errorf("%s names %x leader", c.Members[i].Name, st.Leader)
			}
		}
		return nil
	})
}

// Replace takes member i out of the cluster and puts it back empty, as an
// operator replaces a failed host: etcdctl member remove (the member
// stops itself; it is killed if it has not within 10 s), its data
// directory deleted, etcdctl member add under the same name and peer URL,
// and the member started with --initial-cluster-state existing. It waits,
// at most timeout, until the cluster is healthy and the new member has
// applied what the leader had when it started. It returns the old and the
// new member ID.
func (c *Cluster) Replace(i int, timeout time.Duration) (old, now uint64, err error) {
	m := c.Members[i]
	if old, err = c.ID(i); err != nil {
		return 0, 0, err
	}
	var others []string
	for j, ep := range c.Endpoints() {
		if j != i && c.Running(j) && !c.Members[j].stopped {
			others = append(others, ep)
		}
	}
	// A leader refuses to remove a member until it has been connected
	// to every peer for 5 s (--strict-reconfig-check): "unhealthy
	// cluster" is tried again.
	err = c.poll(timeout, "the member remove to be accepted", func() error {
		_, err := c.Ctl(others, "member", "remove", strconv.FormatUint(old, 16))
		if err != nil && !strings.Contains(err.Error(), "unhealthy cluster") {
			return &permanent{err}
		}
		return err
	})
	if err != nil {
		return old, 0, err
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		if err := c.Kill(i); err != nil {
			return old, 0, err
		}
	}
	if err := os.RemoveAll(filepath.Join(m.Dir, "data")); err != nil {
		return old, 0, err
	}
	// The removed member may have been the leader: a member add sent
	// during the election that follows is dropped by raft and answered
	// only at its timeout. The rest agree on a leader first.
	if err := c.WaitHealthy(timeout); err != nil {
		return old, 0, err
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", m.PeerPort)
	if _, err := c.Ctl(others, "member", "add", m.Name, "--peer-urls", peer); err != nil {
		return old, 0, err
	}
	if err := c.start(i, "existing"); err != nil {
		return old, 0, err
	}
	if err := c.WaitHealthy(timeout); err != nil {
		return old, 0, err
	}
	if now, err = c.ID(i); err != nil {
		return old, 0, err
	}
	if now == old {
		return old, now, fmt.Errorf("%s came back with its old ID %x", m.Name, old)
	}
	return old, now, c.WaitCaughtUp(i, timeout)
}

// WaitCaughtUp waits, at most timeout, until member i has applied every
// entry the leader had when it was called (RaftAppliedIndex, which 3.4
// servers answer too).
func (c *Cluster) WaitCaughtUp(i int, timeout time.Duration) error {
	l, err := c.Leader()
	if err != nil {
		return err
	}
	st, err := c.Status(l)
	if err != nil {
		return err
	}
	want := st.RaftIndex
	return c.poll(timeout, fmt.Sprintf("%s to apply raft index %d", c.Members[i].Name, want), func() error {
		st, err := c.Status(i)
		if err != nil {
			return err
		}
		if st.RaftAppliedIndex < want {
			return fmt.Errorf("applied %d", st.RaftAppliedIndex)
		}
		return nil
	})
}

// Revision is the cluster's current revision, as the leader says.
func (c *Cluster) Revision() (int64, error) {
	l, err := c.Leader()
	if err != nil {
		return 0, err
	}
	st, err := c.Status(l)
	if err != nil {
		return 0, err
	}
	return st.Header.Revision, nil
}

// Compact compacts the key space at rev (etcdctl compact) and waits for
// the compaction to be applied (--physical).
func (c *Cluster) Compact(rev int64) error {
	_, err := c.Ctl(nil, "compact", "--physical", strconv.FormatInt(rev, 10))
	return err
}

// Defrag defragments member i (etcdctl defrag, that member alone).
func (c *Cluster) Defrag(i int) error {
	_, err := c.Ctl([]string{c.Endpoints()[i]}, "defrag")
	return err
}

// Stop stops member i as an operator does (SIGTERM: a leader hands its
// leadership over first), and waits at most 20 s for it to exit, then
// kills it.
func (c *Cluster) Stop(i int) error {
	m := c.Members[i]
	if !c.Running(i) {
		return nil
	}
	c.Thaw(i)
	syscall.Kill(m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.done:
		return nil
	case <-time.After(20 * time.Second):
		return c.Kill(i)
	}
}

// permanent is an error poll does not try again after.
type permanent struct{ error }

// poll calls f every 100 ms until it returns nil or a *permanent error,
// at most timeout.
func (c *Cluster) poll(timeout time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if p, ok := err.(*permanent); ok {
			return p.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
