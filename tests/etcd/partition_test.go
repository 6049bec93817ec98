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
// that host and the cluster, which itself goes on serving everyone else:
// the proxy then forwards nothing (connections stay open, bytes are
// dropped, new connections are accepted and left hanging), as a dropped
// route would.
type partition struct {
	cut   atomic.Bool
	mu    sync.Mutex
	lns   []net.Listener
	conns []net.Conn
}

// newPartition starts the proxy on loopback ports the kernel picks; it is
// closed when the test ends.
func newPartition(t *testing.T) *partition {
	t.Helper()
	pt := &partition{}
	for _, ep := range cl.Endpoints() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pt.lns = append(pt.lns, ln)
		go pt.serve(ln, strings.TrimPrefix(ep, "http://"))
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

// Cut starts the partition.
func (pt *partition) Cut() { pt.cut.Store(true) }

func (pt *partition) keep(c net.Conn) {
	pt.mu.Lock()
	pt.conns = append(pt.conns, c)
	pt.mu.Unlock()
}

func (pt *partition) serve(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		pt.keep(c)
		if pt.cut.Load() {
			go io.Copy(io.Discard, c)
			continue
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		pt.keep(s)
		go pt.pipe(c, s)
		go pt.pipe(s, c)
	}
}

// pipe copies src to dst until either fails, dropping everything once
// the partition is cut.
func (pt *partition) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pt.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if !pt.cut.Load() {
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
	for _, c := range pt.conns {
		c.Close()
	}
}
