package minihttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type seen struct {
	method, uri, host, ctype, auth, body string
}

func server(t *testing.T, tlsOn bool, status int, extra func(w http.ResponseWriter)) (*httptest.Server, chan seen) {
	ch := make(chan seen, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.RequestURI, r.Host, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)}
		if extra != nil {
			extra(w)
		}
		w.WriteHeader(status)
		io.WriteString(w, "short body")
	})
	var s *httptest.Server
	if tlsOn {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s, ch
}

func TestPostHTTP(t *testing.T) {
	s, ch := server(t, false, 201, nil)
	u := strings.Replace(s.URL, "http://", "http://user:pa%20ss@", 1) + "/ping/abc/start?rid=1"
	r, err := Post(context.Background(), u, "text/plain", []byte("hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Status != 201 || r.Reason != "Created" || r.Body != "short body" {
		t.Fatalf("%+v", r)
	}
	got := <-ch
	if got.method != "POST" || got.uri != "/ping/abc/start?rid=1" || got.ctype != "text/plain" || got.body != "hello" ||
		got.auth != "Basic dXNlcjpwYSBzcw==" || got.host != strings.TrimPrefix(s.URL, "http://") {
		t.Fatalf("%+v", got)
	}
}

func TestPostHTTPS(t *testing.T) {
	s, ch := server(t, true, 200, nil)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	r, err := Post(context.Background(), s.URL, "application/json", []byte(`{}`), &Options{TLS: &tls.Config{RootCAs: pool}})
	if err != nil || r.Status != 200 {
		t.Fatalf("%+v %v", r, err)
	}
	if got := <-ch; got.uri != "/" || got.body != "{}" {
		t.Fatalf("%+v", got)
	}
	// Without the test CA: the certificate is refused.
	if _, err := Post(context.Background(), s.URL, "text/plain", nil, nil); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	s, _ := server(t, false, 302, func(w http.ResponseWriter) { w.Header().Set("Location", "https://elsewhere/") })
	r, err := Post(context.Background(), s.URL, "text/plain", nil, nil)
	if err != nil || r.OK() || r.Status != 302 || r.Location != "https://elsewhere/" {
		t.Fatalf("%+v %v", r, err)
	}
}

// rawServer answers every connection with reply (after reading the
// request head), or with nothing when reply is "".
func rawServer(t *testing.T, reply string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					l, err := br.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				if reply == "" {
					io.Copy(io.Discard, c) // hang until the client goes
					return
				}
				io.WriteString(c, reply)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestInterimAndOddResponses(t *testing.T) {
	u := rawServer(t, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n")
	if r, err := Post(context.Background(), u, "text/plain", nil, nil); err != nil || r.Status != 204 {
		t.Fatalf("%+v %v", r, err)
	}
	u = rawServer(t, "SSH-2.0-OpenSSH\r\n")
	if _, err := Post(context.Background(), u, "text/plain", nil, nil); err == nil || !strings.Contains(err.Error(), "not an HTTP response") {
		t.Fatalf("got %v", err)
	}
	u = rawServer(t, "HTTP/1.0 200 OK\n\n") // bare LF, HTTP/1.0
	if r, err := Post(context.Background(), u, "text/plain", nil, nil); err != nil || r.Status != 200 {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	u := rawServer(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Post(ctx, u, "text/plain", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "timed out") {
		t.Fatalf("got %v", err)
	}
	// a hang-catcher, not a timing assertion: the server never answers
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v", d)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := Post(ctx, u, "text/plain", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestBadURLs(t *testing.T) {
	for _, u := range []string{"ftp://x/", "http://", "::", "http://[::1"} {
		if _, err := Post(context.Background(), u, "text/plain", nil, nil); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	// A closed port fails at once.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Post(context.Background(), "http://"+addr, "text/plain", nil, nil); err == nil {
		t.Error("closed port: no error")
	}
}
