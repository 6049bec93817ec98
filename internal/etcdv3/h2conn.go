package clientv3

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// An HTTP/2 client connection of its own, made for gRPC's few needs: a
// request's frames are written by the goroutine that makes it, and one
// goroutine per connection reads and hands each stream what the member
// sent. x/net's ClientConn starts a goroutine per request and crosses
// three goroutines per answer; for a process that makes half a dozen
// requests and exits, that and the goroutines' stack growth were a fifth
// of its CPU (docs/benchmarks.md, "Where a contended cycle goes"). The
// frames themselves are x/net's (http2.Framer, hpack).
//
// Flow control: what the member sends is given back (WINDOW_UPDATE) as
// the stream's reader consumes it, so a stream holds at most its window
// (recvWindow) unread; the connection's window is given back on
// receipt, so that a watch nobody reads never stalls the other streams.
// What is sent waits for the member's windows.

const (
	recvWindow  = 1 << 20 // a stream's receive window (our SETTINGS_INITIAL_WINDOW_SIZE)
	connWindow  = 4 << 20 // the connection's receive window
	maxFrame    = 16384   // the largest frame read (the default, which is all we advertise)
	maxHeaders  = 1 << 20 // the largest header list read
	maxStreamID = 1<<31 - 1
)

// errUnsent marks a request that never reached the member: the
// connection was closed or going away before the request was written, or
// the member said it did not process it (GOAWAY, REFUSED_STREAM).
type unsentError struct{ msg string }

func (e unsentError) Error() string { return e.msg }

type h2conn struct {
	nc           net.Conn
	scheme, host string
	fr           *http2.Framer

	wsem chan struct{} // the write lock (lockWrite): bw (through fr), henc, hbuf
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu        sync.Mutex
	streams   map[uint32]*h2stream
	nextID    uint32
	goingAway bool // the member's GOAWAY: no new streams
	retired   bool // ours: no new streams, closed when the last one ends
	closed    bool
	err       error         // why it closed
	peerFrame uint32        // the member's SETTINGS_MAX_FRAME_SIZE
	peerWin   int32         // the member's SETTINGS_INITIAL_WINDOW_SIZE
	peerMax   uint32        // the member's SETTINGS_MAX_CONCURRENT_STREAMS
	sendWin   int64         // the connection's send window
	winCh     chan struct{} // closed when a window grows or a stream ends
	pings     map[[8]byte]chan struct{}
	recvUnack int           // received on the connection, not given back yet
	ready     chan struct{} // closed at the member's first SETTINGS frame
	done      chan struct{} // closed when the connection is closed
}

// h2stream is one request's stream. Its fields but id are guarded by
// the connection's mu.
type h2stream struct {
	cc      *h2conn
	id      uint32
	ctx     context.Context
	sendWin int64

	header    []hpack.HeaderField
	gotHeader bool
	trailer   []hpack.HeaderField
	data      bytes.Buffer
	ended     bool  // the member ended the stream
	sentEnd   bool  // we ended our side
	err       error // reset, or the connection's end
	unacked   int   // bytes read and not given back yet
	halted    bool  // the member reset the stream after its whole answer: send no more
	wake      chan struct{}
	removed   bool
}

// newH2Conn starts HTTP/2 on nc: the preface and our settings, then the
// reading goroutine. The connection is ready when ready is closed with
// closed false.
func newH2Conn(nc net.Conn, scheme, host string) (*h2conn, error) {
	cc := &h2conn{
		nc: nc, scheme: scheme, host: host,
		bw:        bufio.NewWriterSize(nc, 32<<10),
		streams:   map[uint32]*h2stream{},
		wsem:      make(chan struct{}, 1),
		nextID:    1,
		peerFrame: 16384,
		peerMax:   math.MaxUint32, // unlimited until the member says
		peerWin:   65535,
		sendWin:   65535,
		winCh:     make(chan struct{}),
		pings:     map[[8]byte]chan struct{}{},
		ready:     make(chan struct{}),
		done:      make(chan struct{}),
	}
	cc.fr = http2.NewFramer(cc.bw, bufio.NewReaderSize(nc, 16<<10))
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = maxHeaders
	cc.fr.SetMaxReadFrameSize(maxFrame)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.wsem <- struct{}{}
	_, err := cc.bw.WriteString(http2.ClientPreface)
	if err == nil {
		err = cc.fr.WriteSettings(
			http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaders},
		)
	}
	if err == nil {
		err = cc.fr.WriteWindowUpdate(0, connWindow-65535)
	}
	if err == nil {
		err = cc.bw.Flush()
	}
	cc.unlockWrite()
	if err != nil {
		nc.Close()
		return nil, err
	}
	go cc.readLoop()
	return cc, nil
}

// usable reports whether a new request may go on cc.
func (cc *h2conn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.usableLocked()
}

func (cc *h2conn) usableLocked() bool {
	return !cc.closed && !cc.goingAway && !cc.retired && cc.nextID <= maxStreamID
}

// retire takes cc out of service: no new request goes on it, and it is
// closed when the requests under way on it have ended (at once if there
// are none), so that what the member serves is not cut off.
func (cc *h2conn) retire() {
	cc.mu.Lock()
	cc.retired = true
	idle := len(cc.streams) == 0
	cc.mu.Unlock()
	if idle {
		cc.closeWith(errors.New("connection retired"))
	}
}

// lockWrite takes the write lock, unless ctx ends or the connection
// closes first; it fails if ctx has ended, so that nothing is written
// for a request that has given up.
func (cc *h2conn) lockWrite(ctx context.Context) error {
	select {
	case cc.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-cc.done:
		return unsentError{"connection closed"}
	}
	if err := ctx.Err(); err != nil {
		cc.unlockWrite()
		return err
	}
	return nil
}

func (cc *h2conn) unlockWrite() { <-cc.wsem }

// writeGrace is how long a write may still take after its request's
// deadline or cancellation, so that a write that is not blocked always
// completes: only a write stuck on a member that reads nothing fails.
const writeGrace = 250 * time.Millisecond

// guardWrite sets the deadline of the writes for ctx (write lock held):
// ctx's deadline (at least writeGrace away), else writeTimeout; a
// cancellation of ctx moves it to writeGrace from then. A write that
// fails leaves a frame half written, so the connection is then closed;
// that happens only to a write the member has not read for that long.
// done must be called before the write lock is released.
func (cc *h2conn) guardWrite(ctx context.Context) (done func()) {
	now := time.Now()
	d := now.Add(writeTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
		if g := now.Add(writeGrace); d.Before(g) {
			d = g
		}
	}
	cc.nc.SetWriteDeadline(d)
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		cc.nc.SetWriteDeadline(time.Now().Add(writeGrace))
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired // it ran or runs: the next writer sets its own deadline after it
		}
	}
}

// isClosed reports whether cc is closed.
func (cc *h2conn) isClosed() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.closed
}

// active is the number of streams under way.
func (cc *h2conn) active() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.streams)
}

// Close closes the connection; its streams fail.
func (cc *h2conn) Close() error {
	cc.closeWith(errors.New("connection closed"))
	return nil
}

func (cc *h2conn) closeWith(err error) {
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return
	}
	cc.closed = true
	cc.err = err
	for _, st := range cc.streams {
		if st.err == nil && !st.ended { // an answer read whole stays whole
			st.err = err
		}
		st.signal()
	}
	close(cc.done)
	close(cc.winCh)
	cc.mu.Unlock()
	cc.nc.Close()
}

// Ping sends a PING and waits for its answer.
func (cc *h2conn) Ping(ctx context.Context) error {
	var data [8]byte
	rand.Read(data[:])
	ch := make(chan struct{})
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return cc.err
	}
	cc.pings[data] = ch
	cc.mu.Unlock()
	defer func() {
		cc.mu.Lock()
		delete(cc.pings, data)
		cc.mu.Unlock()
	}()
	if err := cc.writeFor(ctx, func() error { return cc.fr.WritePing(false, data) }); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-cc.done:
		return cc.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open starts a request on path with the extra header fields hdr and
// writes body; end ends our side of the stream after it. An error that
// is an unsentError means nothing reached the member.
func (cc *h2conn) open(ctx context.Context, path string, hdr []hpack.HeaderField, body []byte, end bool) (*h2stream, error) {
	var st *h2stream
	for {
		if err := cc.lockWrite(ctx); err != nil {
			return nil, err
		}
		cc.mu.Lock()
		if !cc.usableLocked() {
			cc.mu.Unlock()
			cc.unlockWrite()
			return nil, unsentError{"connection not usable"}
		}
		if uint32(len(cc.streams)) < cc.peerMax {
			break
		}
		// As many streams as the member allows: wait for one to end.
		wait := cc.winCh
		cc.mu.Unlock()
		cc.unlockWrite()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	st = &h2stream{cc: cc, id: cc.nextID, ctx: ctx, sendWin: int64(cc.peerWin), wake: make(chan struct{}, 1)}
	cc.nextID += 2
	cc.streams[st.id] = st
	frameSize := int(cc.peerFrame)
	cc.mu.Unlock()

	done := cc.guardWrite(ctx)
	cc.hbuf.Reset()
	for _, f := range [...]hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: cc.scheme},
		{Name: ":authority", Value: cc.host}, {Name: ":path", Value: path},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	} {
		cc.henc.WriteField(f)
	}
	for _, f := range hdr {
		cc.henc.WriteField(f)
	}
	block := cc.hbuf.Bytes()
	endHeaders := len(block) <= frameSize
	first := block[:min(len(block), frameSize)]
	err := cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: first,
		EndStream: end && len(body) == 0, EndHeaders: endHeaders})
	for block = block[len(first):]; err == nil && len(block) > 0; {
		n := min(len(block), frameSize)
		err = cc.fr.WriteContinuation(st.id, n == len(block), block[:n])
		block = block[n:]
	}
	if end && len(body) == 0 {
		cc.mu.Lock()
		st.sentEnd = true
		cc.mu.Unlock()
	}
	// As much of the body as the windows let go in the same write.
	var sent int
	if err == nil && len(body) > 0 {
		sent, err = cc.writeDataLocked(st, body, end, frameSize)
	}
	if err := cc.endWrite(done, err); err != nil {
		st.close()
		return nil, fmt.Errorf("writing a request: %w", err)
	}
	if sent < len(body) {
		if err := cc.writeRest(st, body[sent:], end, frameSize); err != nil {
			st.close()
			return nil, err
		}
	}
	return st, nil
}

// writeDataLocked writes what the send windows allow of data, in frames
// of at most frameSize (the write lock held), ending the stream with the last
// frame when end is set. It returns the bytes written.
func (cc *h2conn) writeDataLocked(st *h2stream, data []byte, end bool, frameSize int) (int, error) {
	sent := 0
	for {
		cc.mu.Lock()
		n := int(min(int64(len(data)-sent), int64(frameSize), cc.sendWin, st.sendWin))
		if n < 0 {
			n = 0
		}
		cc.sendWin -= int64(n)
		st.sendWin -= int64(n)
		cc.mu.Unlock()
		if n == 0 && sent < len(data) {
			return sent, nil
		}
		last := end && sent+n == len(data)
		if err := cc.fr.WriteData(st.id, last, data[sent:sent+n]); err != nil {
			return sent, err
		}
		sent += n
		if last {
			cc.mu.Lock()
			st.sentEnd = true
			cc.mu.Unlock()
		}
		if sent == len(data) {
			return sent, nil
		}
	}
}

// writeRest writes data that waited for the member's windows.
func (cc *h2conn) writeRest(st *h2stream, data []byte, end bool, frameSize int) error {
	for len(data) > 0 {
		cc.mu.Lock()
		wait := cc.winCh
		blocked := (cc.sendWin <= 0 || st.sendWin <= 0) && !cc.closed && st.err == nil
		err, halted := st.err, st.halted || st.ended
		cc.mu.Unlock()
		if err != nil {
			return err
		}
		if halted {
			return nil // the member has answered: the answer says what happened
		}
		if blocked {
			select {
			case <-wait: // a window grew, the stream failed or the connection closed
			case <-st.ctx.Done():
				return st.ctx.Err()
			}
			continue
		}
		var n int
		if err := cc.writeFor(st.ctx, func() (err error) {
			n, err = cc.writeDataLocked(st, data, end, frameSize)
			return err
		}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// writeTimeout bounds a write: a member that reads nothing fills the
// socket's buffers, and a write then blocks until the connection is
// closed.
const writeTimeout = 10 * time.Second

// signal wakes the stream's reader (cc.mu held, or not needed).
func (st *h2stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// awaitHeader waits for the answer's header fields.
func (st *h2stream) awaitHeader() ([]hpack.HeaderField, error) {
	cc := st.cc
	for {
		cc.mu.Lock()
		switch {
		case st.gotHeader:
			h := st.header
			cc.mu.Unlock()
			return h, nil
		case st.err != nil:
			err := st.err
			cc.mu.Unlock()
			return nil, err
		case st.ended:
			cc.mu.Unlock()
			return nil, errors.New("the stream ended without headers")
		}
		cc.mu.Unlock()
		select {
		case <-st.wake:
		case <-st.ctx.Done():
			return nil, st.ctx.Err()
		}
	}
}

// Read reads the answer's data; io.EOF when the member ended the stream.
func (st *h2stream) Read(p []byte) (int, error) {
	cc := st.cc
	for {
		cc.mu.Lock()
		if st.data.Len() > 0 {
			n, _ := st.data.Read(p)
			st.unacked += n
			give := 0
			if st.unacked >= recvWindow/2 && !st.ended && st.err == nil {
				give, st.unacked = st.unacked, 0
			}
			cc.mu.Unlock()
			if give > 0 {
				cc.windowUpdate(st.id, give)
			}
			return n, nil
		}
		switch {
		case st.err != nil:
			err := st.err
			cc.mu.Unlock()
			return 0, err
		case st.ended:
			cc.mu.Unlock()
			return 0, io.EOF
		}
		cc.mu.Unlock()
		select {
		case <-st.wake:
		case <-st.ctx.Done():
			return 0, st.ctx.Err()
		}
	}
}

// Trailer returns the answer's trailer fields, once Read said io.EOF.
func (st *h2stream) Trailer() []hpack.HeaderField {
	st.cc.mu.Lock()
	defer st.cc.mu.Unlock()
	return st.trailer
}

// close ends the stream: it is reset unless both sides ended it.
func (st *h2stream) close() {
	cc := st.cc
	cc.mu.Lock()
	if st.removed {
		cc.mu.Unlock()
		return
	}
	st.removed = true
	delete(cc.streams, st.id)
	reset := !(st.ended && st.sentEnd) && !st.halted && st.err == nil && !cc.closed
	last := len(cc.streams) == 0 && (cc.retired || cc.goingAway)
	cc.windowsChangedLocked() // a request waiting for a stream slot goes on
	cc.mu.Unlock()
	if reset {
		id := st.id
		cc.write(func() error { return cc.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	}
	if last {
		cc.closeWith(errors.New("connection retired"))
	}
}

func (cc *h2conn) windowUpdate(id uint32, n int) {
	cc.write(func() error { return cc.fr.WriteWindowUpdate(id, uint32(n)) })
}

// write sends a frame that no request waits for (an ack, a window
// update, a reset); nothing if the connection closed meanwhile.
func (cc *h2conn) write(f func() error) {
	cc.writeFor(context.Background(), f)
}

// writeFor writes what f writes, for a request of context ctx: it takes
// the write lock (unless ctx ends first), bounds the write by ctx
// (guardWrite) and flushes it; a write that fails closes the connection.
func (cc *h2conn) writeFor(ctx context.Context, f func() error) error {
	if err := cc.lockWrite(ctx); err != nil {
		return err
	}
	return cc.endWrite(cc.guardWrite(ctx), f())
}

// endWrite ends a write made under the write lock, err being how it has
// gone so far: it flushes the write, lifts its guard (done) and the
// lock, and closes the connection if the write failed.
func (cc *h2conn) endWrite(done func(), err error) error {
	if err == nil {
		err = cc.bw.Flush()
	}
	done()
	cc.unlockWrite()
	if err != nil {
		cc.closeWith(err)
	}
	return err
}

func (cc *h2conn) readLoop() {
	err := cc.read()
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("the member closed the connection")
	}
	cc.closeWith(err)
}

func (cc *h2conn) read() error {
	first := true
	for {
		f, err := cc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if !first && errors.As(err, &se) {
				cc.streamFailed(se.StreamID, fmt.Errorf("the member's answer: %v", se), false)
				cc.write(func() error { return cc.fr.WriteRSTStream(se.StreamID, se.Code) })
				continue
			}
			if first {
				return errors.New("the endpoint does not speak HTTP/2")
			}
			return err
		}
		if first {
			if sf, ok := f.(*http2.SettingsFrame); !ok || sf.IsAck() {
				return errors.New("the endpoint does not speak HTTP/2")
			}
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if err := f.ForeachSetting(func(s http2.Setting) error {
				if s.ID == http2.SettingHeaderTableSize && cc.lockWrite(context.Background()) == nil {
					cc.henc.SetMaxDynamicTableSizeLimit(s.Val)
					cc.unlockWrite()
				}
				return nil
			}); err != nil {
				return err
			}
			if err := cc.settings(f); err != nil {
				return err
			}
			cc.write(func() error { return cc.fr.WriteSettingsAck() })
			if first {
				close(cc.ready)
				first = false
			}
		case *http2.PingFrame:
			if f.IsAck() {
				cc.mu.Lock()
				if ch := cc.pings[f.Data]; ch != nil {
					delete(cc.pings, f.Data)
					close(ch)
				}
				cc.mu.Unlock()
				continue
			}
			data := f.Data
			cc.write(func() error { return cc.fr.WritePing(true, data) })
		case *http2.GoAwayFrame:
			cc.mu.Lock()
			cc.goingAway = true
			for id, st := range cc.streams {
				if id > f.LastStreamID && st.err == nil {
					st.err = unsentError{"the member's GOAWAY says it never read the stream"}
					st.signal()
				}
			}
			cc.windowsChangedLocked()
			cc.mu.Unlock()
		case *http2.WindowUpdateFrame:
			cc.mu.Lock()
			if f.StreamID == 0 {
				cc.sendWin += int64(f.Increment)
			} else if st := cc.streams[f.StreamID]; st != nil {
				st.sendWin += int64(f.Increment)
			}
			cc.windowsChangedLocked()
			cc.mu.Unlock()
		case *http2.MetaHeadersFrame:
			cc.mu.Lock()
			if st := cc.streams[f.StreamID]; st != nil && !st.ended && st.err == nil {
				if !st.gotHeader {
					st.header, st.gotHeader = f.Fields, true
				} else {
					st.trailer = f.Fields
				}
				if f.StreamEnded() {
					st.ended = true
				}
				st.signal()
			}
			cc.mu.Unlock()
		case *http2.DataFrame:
			n := int(f.Length)
			cc.mu.Lock()
			cc.recvUnack += n
			give := 0
			if cc.recvUnack >= connWindow/2 {
				give, cc.recvUnack = cc.recvUnack, 0
			}
			st := cc.streams[f.StreamID]
			if st != nil && !st.ended && st.err == nil {
				if st.data.Len()+len(f.Data()) > recvWindow {
					// More than the window we gave: a protocol error.
					cc.mu.Unlock()
					return errors.New("the member sent beyond its flow-control window")
				}
				st.data.Write(f.Data())
				if f.StreamEnded() {
					st.ended = true
				}
				st.signal()
			}
			cc.mu.Unlock()
			if give > 0 {
				cc.write(func() error { return cc.fr.WriteWindowUpdate(0, uint32(give)) })
			}
			// Padding is nobody's to read: its window goes back at once.
			if pad := n - len(f.Data()); pad > 0 && st != nil && !f.StreamEnded() {
				id := f.StreamID
				cc.write(func() error { return cc.fr.WriteWindowUpdate(id, uint32(pad)) })
			}
		case *http2.RSTStreamFrame:
			cc.mu.Lock()
			if st := cc.streams[f.StreamID]; st != nil && st.ended && st.err == nil {
				// The member answered whole, then reset: it wants no
				// more of the request (RFC 9113, 8.1; grpc-go does so
				// when it ends a stream we have not ended). The answer
				// stands.
				st.halted = true
				st.signal()
				cc.windowsChangedLocked() // a writer waiting for a window stops
				cc.mu.Unlock()
				continue
			}
			cc.mu.Unlock()
			err := error(fmt.Errorf("the member reset the stream (%v)", f.ErrCode))
			if f.ErrCode == http2.ErrCodeRefusedStream {
				err = unsentError{"the member refused the stream"}
			}
			cc.streamFailed(f.StreamID, err, true)
		}
	}
}

// windowsChangedLocked wakes the writers waiting for a send window
// (cc.mu held).
func (cc *h2conn) windowsChangedLocked() {
	if !cc.closed {
		close(cc.winCh)
		cc.winCh = make(chan struct{})
	}
}

// streamFailed ends stream id with err.
func (cc *h2conn) streamFailed(id uint32, err error, byPeer bool) {
	cc.mu.Lock()
	if st := cc.streams[id]; st != nil && st.err == nil {
		st.err = err
		if byPeer {
			st.ended, st.sentEnd = true, true // nothing to reset
		}
		st.signal()
		cc.windowsChangedLocked() // a writer waiting for a window stops
	}
	cc.mu.Unlock()
}

// settings applies the member's settings.
func (cc *h2conn) settings(f *http2.SettingsFrame) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxFrameSize:
			cc.peerFrame = s.Val
		case http2.SettingMaxConcurrentStreams:
			cc.peerMax = s.Val
			cc.windowsChangedLocked()
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - int64(cc.peerWin)
			for _, st := range cc.streams {
				st.sendWin += delta
			}
			cc.peerWin = int32(s.Val)
			cc.windowsChangedLocked()
		}
		return nil
	})
}
