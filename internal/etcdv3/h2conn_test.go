package clientv3

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// memberFrames is what a member answers for one unary request on stream
// 1, built with x/net's framer: the answer's headers, one message, and
// the trailers.
func memberFrames(msg []byte, status string) []byte {
	var out, hb bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	enc := hpack.NewEncoder(&hb)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, frame(msg))
	hb.Reset()
	enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: status})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
	return out.Bytes()
}

// askOnce runs one unary request over an HTTP/2 connection to a member
// that sends its settings, reads the request, answers with data and
// closes the connection; it returns the answer's message.
func askOnce(t *testing.T, data []byte, wait time.Duration) ([]byte, error) {
	// A socket pair, not net.Pipe: the client writes its preface and
	// settings before it reads, as it may with a socket's buffers; and
	// not loopback TCP, whose closed connections linger in TIME_WAIT
	// and, at a fuzzer's pace, use up the ephemeral ports.
	a, b := socketPair(t)
	go func() {
		defer b.Close()
		fr := http2.NewFramer(b, b)
		if _, err := io.ReadFull(b, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		if fr.WriteSettings() != nil {
			return
		}
		for { // the request: its data ends the stream
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				break
			}
		}
		go io.Copy(io.Discard, b) // acks and resets, until the close
		b.Write(data)
	}()
	cc, err := newH2Conn(a, "http", "member:2379")
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case <-cc.ready:
	case <-cc.done:
		return nil, cc.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c := &Client{}
	return c.roundTrip(ctx, &conn{ep: "member"}, cc, "/etcdserverpb.KV/Range", frame([]byte{0x0a, 0x01, 'k'}))
}

func TestH2Answer(t *testing.T) {
	msg := rangeAnswer(4)
	got, err := askOnce(t, memberFrames(msg, "0"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("answer %x, want %x", got, msg)
	}
	if _, err := askOnce(t, memberFrames(msg, "5"), 10*time.Second); ErrorCode(err) != NotFound {
		t.Fatalf("status 5: %v", err)
	}
	if _, err := askOnce(t, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), 10*time.Second); err == nil {
		t.Fatal("an answer that is not HTTP/2 was taken")
	}
	if _, err := askOnce(t, memberFrames(msg, "0")[:20], 10*time.Second); err == nil {
		t.Fatal("an answer cut short was taken")
	}
}

// FuzzMemberFrames: whatever a member sends, a request ends (an answer
// or an error) without a panic, once the member closes the connection.
func FuzzMemberFrames(f *testing.F) {
	good := memberFrames(rangeAnswer(4), "0")
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(memberFrames(nil, "16"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		askOnce(t, data, 5*time.Second)
	})
}

// socketPair is a connected pair of Unix stream sockets.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return conns[0], conns[1]
}
