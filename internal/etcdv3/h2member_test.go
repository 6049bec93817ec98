package clientv3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ---------------------------------------------------------------------
// A real grpc-go server (the server etcd runs), answering raw bytes.

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// startGRPC serves handle for every method on a grpc-go server.
func startGRPC(t *testing.T, handle func(method string, ss grpc.ServerStream) error, opts ...grpc.ServerOption) (string, *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(ss)
		return handle(m, ss)
	}))
	srv := grpc.NewServer(opts...)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String(), srv
}

// unary answers a unary call with msg after reading its request.
func unary(ss grpc.ServerStream, msg []byte) error {
	var req []byte
	if err := ss.RecvMsg(&req); err != nil {
		return err
	}
	return ss.SendMsg(&msg)
}

// ---------------------------------------------------------------------
// A raw HTTP/2 member, for what a server library will not do on demand.

type rawMember struct {
	url   string
	conns atomic.Int32
}

// startRaw accepts connections, reads the preface, sends settings (and
// a connection WINDOW_UPDATE of connWin if not 0), then hands the
// connection to serve. rcvBuf, if not 0, is the sockets' SO_RCVBUF.
func startRaw(t *testing.T, settings []http2.Setting, connWin uint32, rcvBuf int, serve func(nc net.Conn, fr *http2.Framer, enc *hpackWriter)) *rawMember {
	t.Helper()
	lc := net.ListenConfig{}
	if rcvBuf > 0 {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf) })
			return serr
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &rawMember{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			m.conns.Add(1)
			mu.Lock()
			open = append(open, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				if _, err := io.ReadFull(nc, make([]byte, len(http2.ClientPreface))); err != nil {
					return
				}
				fr := http2.NewFramer(nc, nc)
				fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				fr.MaxHeaderListSize = 16 << 20
				if fr.WriteSettings(settings...) != nil {
					return
				}
				if connWin > 0 && fr.WriteWindowUpdate(0, connWin) != nil {
					return
				}
				serve(nc, fr, newHpackWriter())
			}()
		}
	}()
	return m
}

type hpackWriter struct {
	buf bytes.Buffer
	enc *hpack.Encoder
}

func newHpackWriter() *hpackWriter {
	h := &hpackWriter{}
	h.enc = hpack.NewEncoder(&h.buf)
	return h
}

func (h *hpackWriter) block(kv ...string) []byte {
	h.buf.Reset()
	for i := 0; i < len(kv); i += 2 {
		h.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), h.buf.Bytes()...)
}

// answerFrames writes a whole unary answer on stream id.
func answerFrames(fr *http2.Framer, h *hpackWriter, id uint32, msg []byte) error {
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
		BlockFragment: h.block(":status", "200", "content-type", "application/grpc")}); err != nil {
		return err
	}
	if err := fr.WriteData(id, false, frame(msg)); err != nil {
		return err
	}
	return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true,
		BlockFragment: h.block("grpc-status", "0")})
}

// TestResetAfterWholeAnswerKeepsIt: a member that sends a whole
// answer and then RST_STREAM(NO_ERROR) (grpc-go does, when its handler
// finishes before its reader marks the client's END_STREAM) has served
// the request: the answer stands (RFC 9113, 8.1).
func TestResetAfterWholeAnswerKeepsIt(t *testing.T) {
	var served atomic.Int32
	m := startRaw(t, nil, 0, 0, func(nc net.Conn, fr *http2.Framer, h *hpackWriter) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				served.Add(1)
				answerFrames(fr, h, d.StreamID, rangeAnswer(9))
				fr.WriteRSTStream(d.StreamID, http2.ErrCodeNo)
			}
		}
	})
	c, ctx := testClient(t, m.url, 5*time.Second)
	_, err := c.Txn(ctx).Then(OpGet("/k")).Commit()
	if err != nil {
		t.Fatalf("a txn the member served (%d time(s)) and answered OK failed: %v (code %d)", served.Load(), err, ErrorCode(err))
	}
}

// TestGRPCServerResetsKeepAnswers: the same against a real grpc-go
// server, where it happens by a race in the server (the handler's
// WriteStatus against the reader's END_STREAM): some of many plain
// unary requests fail.
func TestGRPCServerResetsKeepAnswers(t *testing.T) {
	url, _ := startGRPC(t, func(method string, ss grpc.ServerStream) error {
		return unary(ss, rangeAnswer(3))
	})
	c, err := New(Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.token = strings.Repeat("t", 40<<10) // a large header block widens the server's race
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var fails atomic.Int32
	var last atomic.Value
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rstRounds {
				if _, err := c.Get(ctx, "/k"); err != nil {
					fails.Add(1)
					last.Store(err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if n := fails.Load(); n > 0 {
		t.Fatalf("%d of %d requests to grpc-go failed; last: %v", n, 20*rstRounds, last.Load())
	}
}

// TestWatchEndKeepsStatus: a watch the member ends with a status after
// its first message (grpc-go then sends trailers and RST_STREAM
// NO_ERROR, the client never having ended its side) reports the status,
// not the reset.
func TestWatchEndKeepsStatus(t *testing.T) {
	url, _ := startGRPC(t, func(method string, ss grpc.ServerStream) error {
		var req []byte
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		created := []byte{0x0a, 0x02, 0x18, 0x05, 0x18, 0x01}
		if err := ss.SendMsg(&created); err != nil {
			return err
		}
		return status.Error(codes.FailedPrecondition, "etcdserver: the watch ends here")
	})
	c, err := New(Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := 0
	var last error
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var got error
		for wr := range c.Watch(ctx, "/k") {
			got = wr.Err()
		}
		cancel()
		if ErrorCode(got) != FailedPrecondition || got.Error() != "etcdserver: the watch ends here" {
			bad++
			last = got
		}
	}
	if bad > 0 {
		t.Fatalf("%d of 20 watches lost the member's status; last error: %v (code %d)", bad, last, ErrorCode(last))
	}
}

// TestOversizeRequestStatus: a request larger than the member's limit
// is answered ResourceExhausted (trailers only, then RST_STREAM NO_ERROR
// while the client is still sending): the client stops sending and
// reports the definite ResourceExhausted, not an ambiguous reset.
func TestOversizeRequestStatus(t *testing.T) {
	url, _ := startGRPC(t, func(method string, ss grpc.ServerStream) error {
		return unary(ss, rangeAnswer(1))
	}, grpc.MaxRecvMsgSize(4096))
	c, ctx := testClient(t, url, 10*time.Second)
	_, err := c.Get(ctx, strings.Repeat("k", 200<<10))
	if ErrorCode(err) != ResourceExhausted {
		t.Fatalf("oversize request: %v (code %d), want ResourceExhausted", err, ErrorCode(err))
	}
}

// inFlight is a transaction under way at a grpc-go member: applied,
// its answer held back for hold.
type inFlight struct {
	c       *Client
	srv     *grpc.Server
	cc      *h2conn // the connection it went on
	ctx     context.Context
	applied *atomic.Int32
	done    chan error // its result
}

func txnInFlight(t *testing.T, hold time.Duration, opts ...grpc.ServerOption) *inFlight {
	t.Helper()
	f := &inFlight{applied: new(atomic.Int32), done: make(chan error, 1)}
	var url string
	url, f.srv = startGRPC(t, func(method string, ss grpc.ServerStream) error {
		if method != "/etcdserverpb.KV/Txn" {
			return unary(ss, rangeAnswer(1))
		}
		var req []byte
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		f.applied.Add(1)
		time.Sleep(hold)
		out := []byte{}
		return ss.SendMsg(&out)
	}, opts...)
	f.c, f.ctx = testClient(t, url, 10*time.Second)
	ctx := f.ctx
	if _, err := f.c.Get(ctx, "/warm"); err != nil {
		t.Fatal(err)
	}
	var err error
	if _, f.cc, err = f.c.pick(ctx, ""); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := f.c.Txn(ctx).Then(OpGet("/k")).Commit()
		f.done <- err
	}()
	until(t, "the member to apply the transaction", func() bool { return f.applied.Load() > 0 })
	return f
}

// testClient is a client of url, closed at the test's end, and a
// context of the given timeout.
func testClient(t *testing.T, url string, timeout time.Duration) (*Client, context.Context) {
	t.Helper()
	c, err := New(Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return c, ctx
}

// until polls cond, for at most 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 10 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMaxConcurrentStreams: a member that allows one stream at a time
// (SETTINGS_MAX_CONCURRENT_STREAMS): a second request waits for the
// first instead of being refused, and the first, applied, succeeds.
func TestMaxConcurrentStreams(t *testing.T) {
	f := txnInFlight(t, 500*time.Millisecond, grpc.MaxConcurrentStreams(1))
	_, getErr := f.c.Get(f.ctx, "/k") // the second stream
	if err := <-f.done; err != nil || getErr != nil {
		t.Fatalf("the txn, applied %d time(s) by the member: %v; the request beside it: %v", f.applied.Load(), err, getErr)
	}
}

// TestGracefulGoAwayFinishesStreams: a member going away gracefully
// finishes the streams it has; the client sends new requests elsewhere
// and does not close the connection under the old ones.
func TestGracefulGoAwayFinishesStreams(t *testing.T) {
	f := txnInFlight(t, time.Second)
	go f.srv.GracefulStop() // waits for the txn to be answered
	until(t, "GOAWAY", func() bool { return !f.cc.usable() })
	gctx, gcancel := context.WithTimeout(f.ctx, 200*time.Millisecond)
	f.c.Get(gctx, "/k") // another request: nowhere to go
	gcancel()
	if err := <-f.done; err != nil {
		t.Fatalf("the txn in flight under a graceful GOAWAY (applied %d time(s)) failed: %v", f.applied.Load(), err)
	}
}

// stallingMember gives huge windows, answers every request, and after
// the first 1 MiB of request data stops reading for stall (forever if
// 0); stalled is closed when it stops.
func stallingMember(t *testing.T, stall time.Duration) (*rawMember, chan struct{}) {
	stalledCh, quit := make(chan struct{}), make(chan struct{})
	m := startRaw(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 30}}, 1<<30, 64<<10,
		func(nc net.Conn, fr *http2.Framer, h *hpackWriter) {
			read, stalled := 0, false
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.DataFrame:
					read += len(f.Data())
					if f.StreamEnded() {
						if answerFrames(fr, h, f.StreamID, rangeAnswer(1)) != nil {
							return
						}
					}
				case *http2.MetaHeadersFrame:
					if f.StreamEnded() {
						if answerFrames(fr, h, f.StreamID, rangeAnswer(1)) != nil {
							return
						}
					}
				}
				if read > 1<<20 && !stalled {
					stalled = true
					close(stalledCh)
					if stall == 0 {
						<-quit // never reads again
						return
					}
					time.Sleep(stall)
				}
			}
		})
	t.Cleanup(func() { close(quit) })
	return m, stalledCh
}

// bigKey is a 32 MiB key.
func bigKey() string { return strings.Repeat("k", 32<<20) }

// TestWriteLockWaitHonoursDeadline: a request waiting for the write lock
// while another's write is stuck on a member that reads nothing returns
// at its own deadline, not when the other write ends (8 s here).
func TestWriteLockWaitHonoursDeadline(t *testing.T) {
	m, stalled := stallingMember(t, 8*time.Second)
	c, ctx := testClient(t, m.url, 30*time.Second)
	if _, err := c.Get(ctx, "/warm"); err != nil {
		t.Fatal(err)
	}
	go c.Get(ctx, bigKey()) // A: a large request the member is slow to read
	<-stalled               // A holds the write lock: its body is written in one hold
	bctx, bcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer bcancel()
	start := time.Now()
	_, err := c.Get(bctx, "/k") // B
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("a request with a 200ms deadline returned after %v (%v)", d.Round(10*time.Millisecond), err)
	}
}

// TestExpiredRequestWritesNothing: a request whose deadline passes
// while it waits for the write lock writes nothing, so the connection
// and the request that held the lock live on.
func TestExpiredRequestWritesNothing(t *testing.T) {
	m, stalled := stallingMember(t, 2*time.Second)
	c, ctx := testClient(t, m.url, 30*time.Second)
	if _, err := c.Get(ctx, "/warm"); err != nil {
		t.Fatal(err)
	}
	aErr := make(chan error, 1)
	go func() { _, err := c.Get(ctx, bigKey()); aErr <- err }() // A: sent whole, answered
	<-stalled
	bctx, bcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer bcancel()
	_, bErr := c.Get(bctx, "/k") // B: expires while waiting for the write lock
	if err := <-aErr; err != nil {
		t.Fatalf("request A, written whole and answered by the member, failed: %v (B: %v)", err, bErr)
	}
}

// TestCancelMidWrite: a request cancelled while its write is stuck on a
// member that reads nothing returns writeGrace after its cancellation
// (its connection closes: a frame is half written), not when the 10-s
// writeTimeout fires.
func TestCancelMidWrite(t *testing.T) {
	m, stalled := stallingMember(t, 0)
	c, err := New(Config{Endpoints: []string{m.url}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if _, err := c.Get(wctx, "/warm"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled atomic.Int64
	go func() {
		<-stalled
		time.Sleep(200 * time.Millisecond)
		cancelled.Store(time.Now().UnixNano())
		cancel()
	}()
	_, err = c.Get(ctx, bigKey())
	if cancelled.Load() == 0 {
		t.Fatalf("the member never stalled: %v", err)
	}
	if d := time.Since(time.Unix(0, cancelled.Load())); d > 4*time.Second {
		t.Fatalf("a request cancelled mid-write returned %v after its cancel (%v)", d.Round(10*time.Millisecond), err)
	}
}

// TestPaddingWindowGivenBack: padding counts against the stream's
// window and nobody reads it: its window is given back on receipt.
func TestPaddingWindowGivenBack(t *testing.T) {
	gotUpdate := make(chan bool, 1)
	m := startRaw(t, nil, 0, 0, func(nc net.Conn, fr *http2.Framer, h *hpackWriter) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			d, ok := f.(*http2.DataFrame)
			if !ok || !d.StreamEnded() {
				continue
			}
			id := d.StreamID
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
				BlockFragment: h.block(":status", "200", "content-type", "application/grpc")})
			pad := make([]byte, 255)
			for range recvWindow / 256 { // 256 flow-controlled bytes each
				if fr.WriteDataPadded(id, false, nil, pad) != nil {
					return
				}
			}
			// The stream's window is used up; wait for credit.
			ok = false
			deadline := time.Now().Add(2 * time.Second)
			nc.SetReadDeadline(deadline)
			for !ok {
				f, err := fr.ReadFrame()
				if err != nil {
					break
				}
				if wu, isWU := f.(*http2.WindowUpdateFrame); isWU && wu.StreamID == id {
					ok = true
				}
			}
			nc.SetReadDeadline(time.Time{})
			gotUpdate <- ok
			if ok {
				answerRest(fr, h, id)
			} else {
				fr.WriteRSTStream(id, http2.ErrCodeFlowControl)
			}
			return
		}
	})
	c, ctx := testClient(t, m.url, 10*time.Second)
	_, err := c.Get(ctx, "/k")
	if !<-gotUpdate {
		t.Fatalf("1 MiB of padding used up the stream's window and no WINDOW_UPDATE came in 2s (request: %v)", err)
	}
}

func answerRest(fr *http2.Framer, h *hpackWriter, id uint32) {
	fr.WriteData(id, false, frame(rangeAnswer(1)))
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true,
		BlockFragment: h.block("grpc-status", "0")})
}

// TestRefusingMemberNotRedialledInLoop: a member that refuses every
// stream gets a few connections, not one per millisecond.
func TestRefusingMemberNotRedialledInLoop(t *testing.T) {
	m := startRaw(t, nil, 0, 0, func(nc net.Conn, fr *http2.Framer, h *hpackWriter) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if hf, ok := f.(*http2.MetaHeadersFrame); ok {
				fr.WriteRSTStream(hf.StreamID, http2.ErrCodeRefusedStream)
			}
		}
	})
	c, ctx := testClient(t, m.url, time.Second)
	_, err := c.Get(ctx, "/k")
	if n := m.conns.Load(); n > 10 {
		t.Fatalf("one request made %d connections in 1s (%v)", n, err)
	}
}

// TestStreamIDsRunOut: when a connection's stream IDs run out, new
// requests go to a new connection and the old one's finish.
func TestStreamIDsRunOut(t *testing.T) {
	f := txnInFlight(t, 500*time.Millisecond)
	f.cc.mu.Lock()
	f.cc.nextID = maxStreamID // as after 2^30 requests
	f.cc.mu.Unlock()
	if _, err := f.c.Get(f.ctx, "/k"); err != nil {
		t.Fatal(err)
	}
	if err := <-f.done; err != nil {
		t.Fatalf("the txn in flight when the ids ran out failed: %v", err)
	}
}

// ---------------------------------------------------------------------
// Against grpc-go, CONTINUATION, large bodies both
// ways, many concurrent streams, trailers-only errors, header table 0.

// TestAgainstGRPCServer: a header block in three frames, 2 MiB out and
// 3 MiB back, 200 concurrent requests and a trailers-only error against
// grpc-go's server.
func TestAgainstGRPCServer(t *testing.T) {
	value := bytes.Repeat([]byte("v"), 3<<20)
	url, _ := startGRPC(t, func(method string, ss grpc.ServerStream) error {
		var req []byte
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		if method == "/etcdserverpb.Lease/LeaseRevoke" {
			return status.Error(codes.NotFound, "etcdserver: requested lease not found")
		}
		if len(req) > 1<<20 {
			var kv, answer []byte
			kv = append(kv, 0x2a) // field 5, bytes
			kv = appendVarint(kv, uint64(len(value)))
			kv = append(kv, value...)
			answer = append(answer, 0x12)
			answer = appendVarint(answer, uint64(len(kv)))
			answer = append(answer, kv...)
			return ss.SendMsg(&answer)
		}
		out := rangeAnswer(3)
		return ss.SendMsg(&out)
	}, grpc.MaxRecvMsgSize(8<<20))
	c, err := New(Config{Endpoints: []string{url}, Username: "", Password: ""})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.token = strings.Repeat("t", 40<<10) // a header block of three frames
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.Get(ctx, strings.Repeat("k", 2<<20))
	if err != nil || len(r.Kvs) != 1 || len(r.Kvs[0].Value) != len(value) {
		t.Fatalf("large both ways: %v", err)
	}
	c.token = "" // (see TestGRPCServerResetsKeepAnswers)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Get(ctx, "/k"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent: %v", err)
	}
	if _, err := c.Revoke(ctx, 7); !errors.Is(err, ErrLeaseNotFound) {
		t.Fatalf("trailers only: %v", err)
	}
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// TestHeaderTableSizeZero: a member that allows no dynamic table
// gets header blocks it can decode.
func TestHeaderTableSizeZero(t *testing.T) {
	bad := make(chan error, 10)
	m := startRaw(t, []http2.Setting{{ID: http2.SettingHeaderTableSize, Val: 0}}, 0, 0, func(nc net.Conn, fr *http2.Framer, h *hpackWriter) {
		fr.ReadMetaHeaders = hpack.NewDecoder(0, nil)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "closed") {
					bad <- err
				}
				return
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				answerFrames(fr, h, d.StreamID, rangeAnswer(2))
			}
		}
	})
	c, ctx := testClient(t, m.url, 5*time.Second)
	for i := range 5 {
		if _, err := c.Get(WithRequireLeader(ctx), "/k"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	select {
	case err := <-bad:
		t.Fatal(err)
	default:
	}
}

var rstRounds = 50

// TestCloseDuringRequests: Close while one request is blocked in
// its write (the member not reading) and another waits for its answer:
// both return at once, and the connection's goroutines end.
func TestCloseDuringRequests(t *testing.T) {
	m, stalled := stallingMember(t, 0)
	c, err := New(Config{Endpoints: []string{m.url}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "/warm"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { _, err := c.Get(ctx, bigKey()); errs <- err }()
	<-stalled
	_, cc, _ := c.pick(ctx, "")
	go func() { // a stream that waits for its answer (no write needed: its frames are written by hand)
		st := &h2stream{cc: cc, id: 1 << 20, ctx: ctx, wake: make(chan struct{}, 1)}
		cc.mu.Lock()
		cc.streams[st.id] = st
		cc.mu.Unlock()
		_, err := st.awaitHeader()
		errs <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	c.Close()
	for range 2 {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("a request succeeded on a closed client")
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a request did not return after Close")
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("requests returned %v after Close", d)
	}
}
