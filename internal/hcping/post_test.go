package hcping

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test proxy, named by HTTP_PROXY and HTTPS_PROXY for the whole test
// binary: net/http reads them once per process, so they are set before
// any test runs. Every other test posts to 127.0.0.1, which never goes
// through a proxy (TestProxyFromEnvironment checks that too).
var proxy struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []string // "METHOD REQUEST-URI" (absolute form, or CONNECT host:port)
	tunnel string   // where a CONNECT is tunnelled to
}

func proxySeen() []string {
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	return append([]string(nil), proxy.seen...)
}

func proxyHandler(w http.ResponseWriter, r *http.Request) {
	proxy.mu.Lock()
	proxy.seen = append(proxy.seen, r.Method+" "+r.RequestURI)
	tunnel := proxy.tunnel
	proxy.mu.Unlock()
	if r.Method != http.MethodConnect {
		// A plain-http request in absolute form: the proxy answers it.
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	up, err := net.Dial("tcp", tunnel)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer up.Close()
	c, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go io.Copy(up, brw)
	io.Copy(c, up)
}

func TestMain(m *testing.M) {
	proxy.Server = httptest.NewServer(http.HandlerFunc(proxyHandler))
	for k, v := range map[string]string{
		"HTTP_PROXY": proxy.URL, "HTTPS_PROXY": proxy.URL, "NO_PROXY": "",
		"http_proxy": "", "https_proxy": "", "no_proxy": "", "REQUEST_METHOD": "",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	proxy.Close()
	os.Exit(code)
}

type seen struct {
	method, uri, host, ctype, auth, ua, body string
}

func server(t *testing.T, tlsOn bool, status int, extra func(w http.ResponseWriter)) (*httptest.Server, chan seen) {
	ch := make(chan seen, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.RequestURI, r.Host, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("User-Agent"), string(b)}
		if extra != nil {
			extra(w)
		}
		w.WriteHeader(status)
		io.WriteString(w, "short body\nsecond line")
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
	// A 2xx body is not read.
	if !r.OK() || r.Status != 201 || r.Reason != "Created" || r.Body != "" {
		t.Fatalf("%+v", r)
	}
	got := <-ch
	if got.method != "POST" || got.uri != "/ping/abc/start?rid=1" || got.ctype != "text/plain" || got.body != "hello" ||
		got.auth != "Basic dXNlcjpwYSBzcw==" || got.host != strings.TrimPrefix(s.URL, "http://") || got.ua != UserAgent {
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

// An answer that is not 2xx comes with the start of its body, for the
// error message.
func TestErrorBody(t *testing.T) {
	s, _ := server(t, false, 404, nil)
	r, err := Post(context.Background(), s.URL, "text/plain", nil, nil)
	if err != nil || r.OK() || r.Status != 404 || r.Reason != "Not Found" || r.Body != "short body\nsecond line" {
		t.Fatalf("%+v %v", r, err)
	}
}

// A redirect is the answer: the client does not go where it points.
func TestRedirectNotFollowed(t *testing.T) {
	elsewhere, hit := server(t, false, 200, nil)
	s, ch := server(t, false, 307, func(w http.ResponseWriter) { w.Header().Set("Location", elsewhere.URL+"/moved") })
	r, err := Post(context.Background(), s.URL, "text/plain", []byte("x"), nil)
	if err != nil || r.OK() || r.Status != 307 || r.Location != elsewhere.URL+"/moved" {
		t.Fatalf("%+v %v", r, err)
	}
	<-ch
	select {
	case got := <-hit:
		t.Fatalf("the redirect was followed: %+v", got)
	default:
	}
}

// What the server says is made safe to print: no escape sequence of its
// reaches a terminal.
func TestAnswerNeutralised(t *testing.T) {
	// (net/http itself refuses a control character in a header.)
	u := rawServer(t, "HTTP/1.1 500 Bad\x1b[2J\r\nLocation: /x\u202eevil\r\nContent-Length: 9\r\n\r\nbody\x1b[31m")
	r, err := Post(context.Background(), u, "text/plain", nil, nil)
	if err != nil || r.Status != 500 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, s := range []string{r.Reason, r.Location, r.Body} {
		if strings.ContainsAny(s, "\x1b\u202e") {
			t.Errorf("not neutralised: %q", s)
		}
	}
}

// A body is read only up to MaxBody bytes: an endless one does not hold
// the caller.
func TestBodyBounded(t *testing.T) {
	done := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			select {
			case <-done:
				return
			case <-r.Context().Done():
				return
			default:
			}
		}
	}))
	t.Cleanup(func() { close(done); s.Close() })
	// The deadline only catches a hang: it is not what ends the read.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Post(ctx, s.URL, "text/plain", nil, nil)
	if err != nil || r.Status != 500 || len(r.Body) != MaxBody {
		t.Fatalf("status %d, %d body bytes, %v", r.Status, len(r.Body), err)
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
	if _, err := Post(context.Background(), u, "text/plain", nil, nil); err == nil {
		t.Fatal("a reply that is not HTTP accepted")
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
	_, err := Post(ctx, u+"/secret", "text/plain", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "timed out") || strings.Contains(err.Error(), "secret") {
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

// Errors never quote the URL: it may hold a secret.
func TestBadURLs(t *testing.T) {
	for _, u := range []string{"ftp://secret/", "http://", "::secret", "http://[::1secret", "http://secret\x7f/", "http://x/secret\n"} {
		_, err := Post(context.Background(), u, "text/plain", nil, nil)
		if err == nil {
			t.Errorf("%q accepted", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes the URL: %v", u, err)
		}
	}
	// A closed port fails at once.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := Post(context.Background(), "http://user:secret@"+addr+"/secret?secret", "text/plain", nil, nil)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("closed port: %v", err)
	}
}

// HTTP_PROXY and HTTPS_PROXY (set in TestMain) are used for a target that
// is not on loopback: a plain-http POST is sent to the proxy in absolute
// form, an https one through a CONNECT tunnel (the TLS is still checked
// end to end, against the target's name). Loopback targets go direct.
func TestProxyFromEnvironment(t *testing.T) {
	before := len(proxySeen())
	r, err := Post(context.Background(), "http://hook.example/hook?t=1", "application/json", []byte("{}"), nil)
	if err != nil || r.Status != http.StatusAccepted {
		t.Fatalf("via HTTP_PROXY: %+v %v", r, err)
	}
	if got := proxySeen()[before:]; len(got) != 1 || got[0] != "POST http://hook.example/hook?t=1" {
		t.Fatalf("the proxy saw %q", got)
	}

	// https: the TLS server's certificate names example.com.
	s, ch := server(t, true, 200, nil)
	proxy.mu.Lock()
	proxy.tunnel = s.Listener.Addr().String()
	proxy.mu.Unlock()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	r, err = Post(context.Background(), "https://example.com/hook", "application/json", []byte("{}"), &Options{TLS: &tls.Config{RootCAs: pool}})
	if err != nil || r.Status != 200 {
		t.Fatalf("via HTTPS_PROXY: %+v %v", r, err)
	}
	if got := <-ch; got.uri != "/hook" || got.host != "example.com" || got.body != "{}" {
		t.Fatalf("the target saw %+v", got)
	}
	if got := proxySeen()[before+1:]; len(got) != 1 || got[0] != "CONNECT example.com:443" {
		t.Fatalf("the proxy saw %q", got)
	}

	// Loopback: direct, whatever the environment says.
	direct, _ := server(t, false, 200, nil)
	if r, err := Post(context.Background(), direct.URL, "text/plain", nil, nil); err != nil || r.Status != 200 {
		t.Fatalf("loopback: %+v %v", r, err)
	}
	if got := proxySeen()[before+2:]; len(got) != 0 {
		t.Fatalf("a loopback target went through the proxy: %q", got)
	}
}

func ExamplePost() {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "down for maintenance")
	}))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Post(ctx, s.URL+"/hook", "application/json", []byte(`{"v":1}`), nil)
	if err != nil {
		fmt.Println("no answer:", err)
		return
	}
	fmt.Println(r.OK(), r.Status, r.Reason, r.Body)
	// Output: false 503 Service Unavailable down for maintenance
}
