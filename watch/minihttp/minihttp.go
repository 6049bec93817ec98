// Package minihttp sends one HTTP/1.1 POST and reads the status: what the
// watchdog's webhook notifier and the healthchecks pings need, and nothing
// more.
//
// Why not net/http: cron-gate is one binary, and linking net/http adds its
// package initialisation (about 0.2 ms, measured) to every cron-gate call,
// including the per-tick run path, which never needs it. net and
// crypto/tls, which this package uses, cost next to nothing at start-up.
//
// What it does: http and https URLs (TLS with the system roots, SNI, the
// URL's host and port), user:password@ in the URL as basic auth, one
// request per connection (Connection: close), a context that bounds
// everything (dial, TLS handshake, write, read). What it does not do:
// redirects (a 3xx is returned as it is), proxies ($HTTPS_PROXY is
// ignored), reading more than a short prefix of the response body.
package minihttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Response is what is read of the server's answer.
type Response struct {
	Status   int    // e.g. 200
	Reason   string // e.g. "OK"
	Location string // the Location header, for a redirect
	Body     string // at most MaxBody bytes, only when Content-Length says the body is that short
}

// MaxBody is how much of a response body is kept (for error messages).
const MaxBody = 512

// OK reports whether the status is 2xx.
func (r Response) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Options are optional settings; the zero value is fine.
type Options struct {
	TLS       *tls.Config // nil: system roots; ServerName is filled in
	UserAgent string      // "" : "cron-gate"
}

// Post sends body to rawURL with the given Content-Type and returns the
// response status. An error means no status was received: the URL is bad,
// the connection, the TLS handshake, the write or the read failed, or ctx
// ended.
func Post(ctx context.Context, rawURL, contentType string, body []byte, opt *Options) (Response, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Response{}, fmt.Errorf("bad URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Response{}, fmt.Errorf("bad URL: scheme %q is not http or https", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return Response{}, errors.New("bad URL: no host")
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return Response{}, err
	}
	defer conn.Close()
	// Whatever blocks below — handshake, write, read — ends with ctx.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if o.TLS != nil {
			cfg = o.TLS.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return Response{}, ctxErr(ctx, err)
		}
		conn = tc
	}
	ua := o.UserAgent
	if ua == "" {
		ua = "cron-gate"
	}
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", u.RequestURI(), u.Host, oneLine(ua))
	if u.User != nil {
		pw, _ := u.User.Password()
		fmt.Fprintf(&req, "Authorization: Basic %s\r\n", base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	fmt.Fprintf(&req, "Content-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", oneLine(contentType), len(body))
	if _, err := io.WriteString(conn, req.String()); err != nil {
		return Response{}, ctxErr(ctx, err)
	}
	if _, err := conn.Write(body); err != nil {
		return Response{}, ctxErr(ctx, err)
	}
	r, err := readResponse(bufio.NewReaderSize(conn, 4096))
	return r, ctxErr(ctx, err)
}

// readResponse reads the status line and headers (skipping 1xx interim
// responses), and a short body when its length is known.
func readResponse(br *bufio.Reader) (Response, error) {
	for interim := 0; ; interim++ {
		line, err := readLine(br)
		if err != nil {
			return Response{}, fmt.Errorf("reading the response: %w", err)
		}
		proto, rest, _ := strings.Cut(line, " ")
		code, reason, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(code)
		if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || n < 100 || n > 999 {
			return Response{}, fmt.Errorf("not an HTTP response: %q", clip(line, 80))
		}
		r := Response{Status: n, Reason: reason}
		length := int64(-1)
		for i := 0; ; i++ {
			h, err := readLine(br)
			if err != nil {
				return r, fmt.Errorf("reading the response headers: %w", err)
			}
			if h == "" {
				break
			}
			if i > 200 {
				return r, errors.New("too many response headers")
			}
			k, v, _ := strings.Cut(h, ":")
			v = strings.TrimSpace(v)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "location":
				r.Location = clip(v, 200)
			case "content-length":
				if l, err := strconv.ParseInt(v, 10, 64); err == nil {
					length = l
				}
			}
		}
		if n < 200 && interim < 10 {
			continue
		}
		if length > 0 && length <= MaxBody {
			buf := make([]byte, length)
			if _, err := io.ReadFull(br, buf); err == nil {
				r.Body = string(buf)
			}
		}
		return r, nil
	}
}

// readLine reads one CRLF- or LF-terminated line of at most 8 KiB.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > 8<<10 {
			return "", errors.New("line too long")
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// ctxErr prefers the context's reason ("context deadline exceeded") to
// the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); ok && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return &timeoutError{err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// timeoutError is the deadline of the context passing (the connection's
// deadline is set to it, and may fire first).
type timeoutError struct{ err error }

func (e *timeoutError) Error() string { return "timed out (" + e.err.Error() + ")" }
func (e *timeoutError) Unwrap() []error {
	return []error{context.DeadlineExceeded, e.err}
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
