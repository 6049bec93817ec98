package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/browsertest"
)

// TestLoginOverPlainHTTP (issue 16, item 6): a token login over plain HTTP
// off loopback sets a Secure cookie the browser drops; the next request,
// which comes without it, is told to use HTTPS or ssh -L, not to open
// /?token= again (the instruction just followed). Over HTTPS (the proxy
// says so) or on loopback nothing changes.
func TestLoginOverPlainHTTP(t *testing.T) {
	e := newEnv(t)
	const token = "0123456789abcdef-secret"
	o := e.options()
	o.Token = token
	srv, _ := server(t, o)
	lan := map[string]string{"Host": "192.168.1.20:8371"}
	code, hd, _ := do(t, "GET", srv.URL+"/?token="+token, nil, lan)
	var session, marker *http.Cookie
	for _, c := range (&http.Response{Header: hd}).Cookies() {
		switch c.Name {
		case sessionCookie:
			session = c
		case loginCookie:
			marker = c
		}
	}
	if code != http.StatusSeeOther || session == nil || !session.Secure || marker == nil || marker.Secure || marker.Value != "1" {
		t.Fatalf("login over plain HTTP: %d, session %+v, marker %+v", code, session, marker)
	}
	// The browser kept the marker, not the Secure session cookie.
	code, _, body := do(t, "GET", srv.URL+"/", nil, map[string]string{"Host": lan["Host"], "Cookie": loginCookie + "=1"})
	if code != http.StatusUnauthorized || !strings.Contains(body, "Secure") || !strings.Contains(body, "ssh -L 8371:127.0.0.1:8371") || !strings.Contains(body, "HTTPS") {
		t.Errorf("after the dropped cookie: %d %s", code, body)
	}
	// Without the marker, the old message.
	code, _, body = do(t, "GET", srv.URL+"/", nil, lan)
	if code != http.StatusUnauthorized || strings.Contains(body, "ssh -L") || !strings.Contains(body, "/?token=TOKEN") {
		t.Errorf("no login tried: %d %s", code, body)
	}
	// Over HTTPS as the proxy says, or on loopback: no marker.
	for _, h := range []map[string]string{{"Host": "cron.example.org", "X-Forwarded-Proto": "https"}, {"Host": "127.0.0.1:8371"}} {
		_, hd, _ := do(t, "GET", srv.URL+"/?token="+token, nil, h)
		if strings.Contains(strings.Join(hd.Values("Set-Cookie"), "\n"), loginCookie+"=") {
			t.Errorf("login with %v set the marker: %q", h, hd.Values("Set-Cookie"))
		}
	}
}

// TestOutputTimesInZone: the output log's own marker lines show their
// times in the dashboard's zone, as every time on the page; the
// command's lines are left alone.
func TestOutputTimesInZone(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	o := e.options()
	o.TimeZone = seoul(t)
	srv, _ := server(t, o)
	code, _, body := do(t, "GET", srv.URL+"/api/output?gate=translate", nil, nil)
	if code != 200 || !strings.Contains(body, "=== cron-gate run r1 started 2026-11-29 18:10:00 KST\\n") ||
		!strings.Contains(body, "=== cron-gate run r1 ended 2026-11-29 18:10:06 KST: failure, exit 3") || !strings.Contains(body, "ValueError: quota") {
		t.Errorf("output: %d %s", code, body)
	}
}

// TestBrowserPlainHTTP (issue 16, item 6): in a real browser, a token
// login over plain HTTP to another machine's name (lan.test, which
// chromium's host resolver maps to this loopback server, so the server
// sees Host lan.test) loses its Secure session cookie, and the page that
// follows says to use HTTPS or ssh -L, not to open /?token= again.
func TestBrowserPlainHTTP(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	fixture(t, e, time.Now())
	o := e.options()
	o.Token = "0123456789abcdef-secret"
	srv, _ := server(t, o)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	wd := browsertest.Start(t, 1280, 800, "--host-resolver-rules=MAP lan.test "+u.Hostname())
	wd.Open("http://lan.test:" + u.Port() + "/?token=" + o.Token)
	var page struct{ URL, Text string }
	browsertest.WaitFor(t, "the page after the login to say why it did not hold", 20*time.Second, func() bool {
		wd.Eval(`return {URL: location.href, Text: document.body ? document.body.innerText : ''};`, &page)
		return strings.Contains(page.Text, "ssh -L")
	})
	if !strings.HasPrefix(page.URL, "http://lan.test:") || !strings.Contains(page.Text, "Secure") || !strings.Contains(page.Text, "HTTPS") ||
		strings.Contains(page.Text, "open /?token=TOKEN once") {
		t.Errorf("after a login over plain HTTP, at %s:\n%s", page.URL, page.Text)
	}
}
