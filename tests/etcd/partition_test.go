//go:build etcd

package etcd

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// partition is a TCP proxy to every member of the cluster, for one "host"
// to reach the cluster through; Cut makes it a network partition between
// that host and the cluster (CutMember, between that host and one member),
// while the cluster itself goes on serving everyone else: the proxy then
// forwards nothing to or from the members cut (connections stay open,
// bytes are dropped, new connections are accepted and left hanging), as a
// dropped route would.
type partition struct {
	cut      []atomic.Bool  // by member
	accepted []atomic.Int32 // connections accepted, by member
	mu       sync.Mutex
	lns      []net.Listener
	conns    [][]net.Conn // by member
}

// newPartition starts the proxy on loopback ports the kernel picks; it is
// closed when the test ends.
func newPartition(t *testing.T) *partition {
	t.Helper()
	eps := cl.Endpoints()
	pt := &partition{cut: make([]atomic.Bool, len(eps)), accepted: make([]atomic.Int32, len(eps)), conns: make([][]net.Conn, len(eps))}
	for i, ep := range eps {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pt.lns = append(pt.lns, ln)
		go pt.serve(i, ln, strings.TrimPrefix(ep, "http://"))
	}
	t.Cleanup(pt.close)
	return pt
}

// Endpoints are the proxy's client URLs, for --endpoints.
func (pt *partition) Endpoints() string {
	var eps []string
	for _, ln := range pt.lns {
		eps = append(eps, "http://"+ln.Addr().String())
	}
	return strings.Join(eps, ",")
}

// Cut starts the partition from every member.
func (pt *partition) Cut() {
	for i := range pt.cut {
		pt.cut[i].Store(true)
	}
}

// CutMember starts a partition from member i only.
func (pt *partition) CutMember(i int) { pt.cut[i].Store(true) }

// HealMember ends the partition from member i. The connections it left
// hanging are closed, as TCP would give up on them after bytes were lost:
// the clients reconnect.
func (pt *partition) HealMember(i int) {
	pt.mu.Lock()
	conns := pt.conns[i]
	pt.conns[i] = nil
	pt.mu.Unlock()
	pt.cut[i].Store(false)
	for _, c := range conns {
		c.Close()
	}
}

func (pt *partition) keep(i int, c net.Conn) {
	pt.mu.Lock()
	pt.conns[i] = append(pt.conns[i], c)
	pt.mu.Unlock()
}

func (pt *partition) serve(i int, ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		pt.accepted[i].Add(1)
		pt.keep(i, c)
		if pt.cut[i].Load() {
			go io.Copy(io.Discard, c)
			continue
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		pt.keep(i, s)
		go pt.pipe(i, c, s)
		go pt.pipe(i, s, c)
	}
}

// pipe copies src to dst until either fails, dropping everything while
// member i is cut.
func (pt *partition) pipe(i int, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pt.cut[i].Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if !pt.cut[i].Load() {
		src.Close()
		dst.Close()
	}
}

func (pt *partition) close() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for _, ln := range pt.lns {
		ln.Close()
	}
	for _, cs := range pt.conns {
		for _, c := range cs {
			c.Close()
		}
	}
}
