package clientv3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	official "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/crongate/crongate/internal/etcdpb"
)

// fakeMember is an HTTP/2 (cleartext) server that answers gRPC requests
// as answer says: a message, or a status.
type fakeMember struct {
	url   string
	srv   *http.Server
	calls atomic.Int32
	mu    sync.Mutex
	seen  []http.Header
}

func startMember(t *testing.T, answer func(method string, h http.Header, req []byte) (msg []byte, status int, message string)) *fakeMember {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMember{url: "http://" + ln.Addr().String()}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.calls.Add(1)
		m.mu.Lock()
		m.seen = append(m.seen, r.Header.Clone())
		m.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		var req []byte
		if len(body) >= 5 {
			req = body[5:]
		}
		msg, status, message := answer(r.URL.Path, r.Header, req)
		w.Header().Set("Content-Type", "application/grpc")
		if msg == nil && status != 0 { // trailers only
			w.Header().Set("Grpc-Status", string(rune('0'+status/10))+string(rune('0'+status%10)))
			w.Header().Set("Grpc-Message", message)
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(200)
		if msg != nil {
			w.Write(frame(msg))
			if r.URL.Path == "/etcdserverpb.Maintenance/Status" {
				w.Write(frame(msg)) // a unary answer of two messages
			}
		}
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", string(rune('0'+status/10))+string(rune('0'+status%10)))
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", message)
	})}
	m.srv = srv
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// deadMember accepts connections and closes them at once: a member whose
// endpoint answers but never speaks HTTP/2.
func deadMember(t *testing.T) string { return oddMember(t, "") }

// oddMember accepts connections, writes say and closes them: an endpoint
// that is not an HTTP/2 server.
func oddMember(t *testing.T, say string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(say))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

func rangeAnswer(rev int64) []byte {
	// RangeResponse{Header{Revision: rev}, Count: 1}
	hdr := []byte{0x18, byte(rev)}
	return append(append([]byte{0x0a, byte(len(hdr))}, hdr...), 0x20, 0x01)
}

func TestUnaryAndHeaders(t *testing.T) {
	m := startMember(t, func(method string, _ http.Header, req []byte) ([]byte, int, string) {
		if method != "/etcdserverpb.KV/Range" {
			return nil, 12, "unknown method"
		}
		if want, _ := pb.Marshal(&pb.RangeRequest{Key: []byte("/k"), KeysOnly: true}); !bytes.Equal(req, want) {
			return nil, 3, "bad request"
		}
		return rangeAnswer(42), 0, ""
	})
	c, ctx := testClient(t, m.url, 10*time.Second)
	r, err := c.Get(WithRequireLeader(ctx), "/k", WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Revision != 42 || r.Count != 1 {
		t.Fatalf("answer %+v %+v", r, r.Header)
	}
	m.mu.Lock()
	h := m.seen[0]
	m.mu.Unlock()
	if h.Get("Content-Type") != "application/grpc" || h.Get("Te") != "trailers" || h.Get("Hasleader") != "true" {
		t.Fatalf("request headers %v", h)
	}
}

func TestStatusErrors(t *testing.T) {
	m := startMember(t, func(method string, _ http.Header, _ []byte) ([]byte, int, string) {
		switch method {
		case "/etcdserverpb.Lease/LeaseRevoke": // trailers only, as etcd answers an error
			return nil, 5, "etcdserver: requested lease not found"
		case "/etcdserverpb.Lease/LeaseKeepAlive": // TTL 0: the lease is gone
			return []byte{0x10, 0x07}, 0, ""
		}
		return []byte{}, 3, "etcdserver: too many operations in txn request %25" // status after a message
	})
	c, ctx := testClient(t, m.url, 10*time.Second)
	if _, err := c.Revoke(ctx, 7); !errors.Is(err, ErrLeaseNotFound) {
		t.Errorf("revoke: %v, want ErrLeaseNotFound", err)
	}
	if _, err := c.KeepAliveOnce(ctx, 7); !errors.Is(err, ErrLeaseNotFound) {
		t.Errorf("keep-alive: %v, want ErrLeaseNotFound", err)
	}
	if _, err := c.Status(ctx, ""); err == nil || ErrorCode(err) != Unavailable {
		t.Errorf("status answered with two messages: %v, want Unavailable", err)
	}
	_, err := c.Txn(ctx).Then(OpGet("/k")).Commit()
	if ErrorCode(err) != InvalidArgument || err.Error() != "etcdserver: too many operations in txn request %" {
		t.Errorf("txn: %v (code %d)", err, ErrorCode(err))
	}
}

// TestWaitsForAConnection: a request is not sent to an endpoint that
// cannot be reached, and waits for one that can; with none, it ends with
// its context.
func TestWaitsForAConnection(t *testing.T) {
	dead := deadMember(t)
	m := startMember(t, func(string, http.Header, []byte) ([]byte, int, string) { return rangeAnswer(5), 0, "" })
	for _, ep := range []string{dead, oddMember(t, "HTTP/1.1 400 Bad Request\r\n\r\n")} {
		c, err := New(Config{Endpoints: []string{ep}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err = c.Get(ctx, "/k")
		cancel()
		c.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("with an endpoint that does not speak HTTP/2 only: %v, want the context's deadline", err)
		}
	}
	c, ctx := testClient(t, dead, 10*time.Second)
	go func() { time.Sleep(50 * time.Millisecond); c.SetEndpoints(dead, m.url) }()
	if _, err := c.Get(ctx, "/k"); err != nil {
		t.Fatalf("after the endpoints changed: %v", err)
	}
}

// TestUnusedConnectionClosed: a connection that was made but never
// carried a request, then closed by its member, is not given a request
// (the HTTP/2 client lets such a connection take one, to fail it).
func TestUnusedConnectionClosed(t *testing.T) {
	answer := func(string, http.Header, []byte) ([]byte, int, string) { return rangeAnswer(3), 0, "" }
	a, b := startMember(t, answer), startMember(t, answer)
	c, err := New(Config{Endpoints: []string{a.url, b.url}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both connect; wait until both are ready.
	for ready := 0; ready < 2; {
		if _, err := c.Get(ctx, "/k"); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		ready = 0
		for _, cn := range c.conns {
			if cn.cc != nil {
				ready++
			}
		}
		c.mu.Unlock()
		if ctx.Err() != nil {
			t.Fatal("the two connections never became ready")
		}
	}
	// A connection of its own, unused, to b, which b then closes.
	c.mu.Lock()
	cn := c.conns[b.url]
	c.mu.Unlock()
	fresh, err := c.connect(ctx, cn)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	old := cn.cc
	cn.cc = fresh
	c.mu.Unlock()
	old.Close()
	b.srv.Close()
	for !fresh.isClosed() {
		if ctx.Err() != nil {
			t.Fatal("the member's close was never seen")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 4 {
		if _, err := c.Get(ctx, "/k"); err != nil {
			t.Fatalf("request %d after the close: %v", i, err)
		}
	}
}

// TestLoginAgain: a request refused for an invalid auth token is sent
// again after a new login, once.
func TestLoginAgain(t *testing.T) {
	var logins atomic.Int32
	m := startMember(t, func(method string, h http.Header, _ []byte) ([]byte, int, string) {
		if method == "/etcdserverpb.Auth/Authenticate" {
			n := logins.Add(1)
			tok := "tok" + string(rune('0'+n))
			return append([]byte{0x12, byte(len(tok))}, tok...), 0, ""
		}
		if h.Get("Token") != "tok2" {
			return nil, 16, "etcdserver: invalid auth token"
		}
		return rangeAnswer(9), 0, ""
	})
	c, err := New(Config{Endpoints: []string{m.url}, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "/k"); err != nil {
		t.Fatalf("after a new login: %v", err)
	}
	if logins.Load() != 2 {
		t.Fatalf("%d logins, want 2", logins.Load())
	}
}

func TestGetPrefixRangeEnd(t *testing.T) {
	for _, p := range []string{"/a", "/a/", "a\xff", "\xff\xff", "", "/x\xffy"} {
		if got, want := GetPrefixRangeEnd(p), official.GetPrefixRangeEnd(p); got != want {
			t.Errorf("GetPrefixRangeEnd(%q) = %q, want %q", p, got, want)
		}
	}
}

// FuzzFrames: any answer body is read as frames or refused, never a
// panic, and a message is never longer than what was sent.
func FuzzFrames(f *testing.F) {
	f.Add(frame([]byte("abc")))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &frameReader{r: bytes.NewReader(data)}
		total := 0
		for {
			msg, err := r.next()
			if err != nil {
				break
			}
			total += 5 + len(msg)
			if total > len(data) {
				t.Fatalf("read %d bytes of %d", total, len(data))
			}
		}
	})
}

// FuzzStatus: a status and message from a member's trailers give an
// error or nil, never a panic; the message is kept, decoded.
func FuzzStatus(f *testing.F) {
	f.Add("5", "etcdserver: requested lease not found")
	f.Add("0", "")
	f.Add("x", "%zz%4")
	f.Fuzz(func(t *testing.T, status, message string) {
		err := statusError(status, message)
		if status == "0" && err != nil {
			t.Fatalf("status 0: %v", err)
		}
		if err != nil && !strings.Contains(message, "%") && status != "0" && ErrorCode(err) != Unavailable && err.Error() != message[:min(len(message), maxMessage)] {
			t.Fatalf("message %q became %q", message, err.Error())
		}
	})
}

// TestLargeRequestAndAnswer: a request larger than the member's
// flow-control window waits for its window updates, and an answer larger
// than the stream's receive window arrives whole as it is read.
func TestLargeRequestAndAnswer(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 1200<<10) // more than net/http's 1 MiB windows; etcd's own limit is 1.5 MiB
	value := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	// RangeResponse{Header{Revision: 7}, Kvs: [{Key: "/v", Value: value}], Count: 1}
	var kv, answer []byte
	kv = protowire.AppendBytes(protowire.AppendTag(kv, 1, protowire.BytesType), []byte("/v"))
	kv = protowire.AppendBytes(protowire.AppendTag(kv, 5, protowire.BytesType), value)
	answer = protowire.AppendBytes(protowire.AppendTag(answer, 1, protowire.BytesType), []byte{0x18, 7})
	answer = protowire.AppendBytes(protowire.AppendTag(answer, 2, protowire.BytesType), kv)
	answer = protowire.AppendVarint(protowire.AppendTag(answer, 4, protowire.VarintType), 1)
	m := startMember(t, func(method string, _ http.Header, req []byte) ([]byte, int, string) {
		if want, _ := pb.Marshal(&pb.RangeRequest{Key: key}); !bytes.Equal(req, want) {
			return nil, 3, "not the request sent"
		}
		return answer, 0, ""
	})
	c, ctx := testClient(t, m.url, 20*time.Second)
	for i := range 2 { // the second on the same connection, its windows given back
		resp, err := c.Get(ctx, string(key))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, value) || resp.Header.Revision != 7 {
			t.Fatalf("request %d: the answer changed on the way (%d keys)", i, len(resp.Kvs))
		}
	}
}

// TestWatchCancelResets: a watch whose context ends resets its stream,
// and the connection goes on serving requests.
func TestWatchCancelResets(t *testing.T) {
	started := make(chan struct{}, 1)
	gone := make(chan struct{}, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		if r.URL.Path != "/etcdserverpb.Watch/Watch" {
			w.WriteHeader(200)
			w.Write(frame(rangeAnswer(5)))
			w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
			return
		}
		w.WriteHeader(200)
		w.Write(frame([]byte{0x0a, 0x02, 0x18, 0x05, 0x18, 0x01})) // created
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-r.Context().Done()
		gone <- struct{}{}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := New(Config{Endpoints: []string{"http://" + ln.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithCancel(context.Background())
	ch := c.Watch(wctx, "/k", WithPrefix())
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never started")
	}
	wcancel()
	for range ch {
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the member never saw the watch end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "/k"); err != nil {
		t.Fatalf("a request after the watch: %v", err)
	}
}

// TestPing: a ping is answered; a closed connection's is not.
func TestPing(t *testing.T) {
	m := startMember(t, func(string, http.Header, []byte) ([]byte, int, string) { return rangeAnswer(1), 0, "" })
	c, ctx := testClient(t, m.url, 10*time.Second)
	cn, cc, err := c.pick(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	c.drop(cn, cc)
	if err := cc.Ping(ctx); err == nil {
		t.Fatal("a closed connection's ping answered")
	}
}
