//go:build linux

package etcdclient

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestEndpointOf(t *testing.T) {
	eps := []string{"http://127.0.0.1:2379", "https://127.0.0.1:2380", "localhost:2381", "unix:///run/etcd.sock", "[::1]:2382"}
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2379}, "http://127.0.0.1:2379"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2380}, "https://127.0.0.1:2380"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2381}, "localhost:2381"}, // by name
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 2382}, "[::1]:2382"},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2379}, ""},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, ""},
		{&net.UnixAddr{Name: "/run/etcd.sock", Net: "unix"}, "unix:///run/etcd.sock"},
		{&net.UnixAddr{Name: "/run/other.sock", Net: "unix"}, ""},
	} {
		if got := endpointOf(eps, c.addr); got != c.want {
			t.Errorf("endpointOf(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// A member left out is out of the client's endpoints until avoidFor has
// passed; when every member is out, all are in again at once.
func TestLeaveOut(t *testing.T) {
	defer func(d time.Duration) { avoidFor = d }(avoidFor)
	avoidFor = time.Hour
	eps := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	c, err := New(eps, time.Second, Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	live := func() []string {
		c.avoid.mu.Lock()
		defer c.avoid.mu.Unlock()
		return c.Client.Endpoints()
	}
	c.leaveOut(eps[1])
	if got := live(); !slices.Equal(got, []string{eps[0], eps[2]}) {
		t.Fatalf("one left out: endpoints %q", got)
	}
	c.leaveOut(eps[0])
	if got := live(); !slices.Equal(got, eps[2:]) {
		t.Fatalf("two left out: endpoints %q", got)
	}
	c.leaveOut(eps[2])
	if got := live(); !slices.Equal(got, eps) {
		t.Fatalf("all left out: endpoints %q, want all again", got)
	}
	// Left out briefly: all are back once that has passed.
	avoidFor = 50 * time.Millisecond
	c.leaveOut(eps[2])
	if got := live(); !slices.Equal(got, eps[:2]) {
		t.Fatalf("left out briefly: endpoints %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(live(), eps) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a 50-ms leave: endpoints %q", live())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A request that runs out of time without reaching any member (the one
// member not left out is down) brings the members left out back: after
// an election they are the ones that answer.
func TestLeaveOutEndsWhenTheRestIsDown(t *testing.T) {
	defer func(d time.Duration) { avoidFor = d }(avoidFor)
	avoidFor = time.Hour
	dir := t.TempDir()
	var eps []string
	for _, n := range []string{"m1", "m2", "m3"} {
		eps = append(eps, "unix://"+filepath.Join(dir, n)) // no socket: never connects
	}
	c, err := New(eps, time.Second, Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.leaveOut(eps[0])
	c.leaveOut(eps[1])
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k"); err == nil {
		t.Fatal("a request to a member that does not exist succeeded")
	}
	c.avoid.mu.Lock()
	got := c.Client.Endpoints()
	c.avoid.mu.Unlock()
	if !slices.Equal(got, eps) {
		t.Fatalf("after a request that reached no member: endpoints %q, want all %q", got, eps)
	}
}
