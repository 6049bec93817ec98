package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

// TestSessionLeak is the scenario (issue 12, item 9), with and
// without a configured token: a browser logs in through /?token=; its
// cookie leaks to another local service (browsers send a cookie to every
// port of its host), which replays it with curl. The cookie is not the
// token; alone, or with forged same-origin headers, it changes nothing and
// reads nothing the open mode does not already show; as a bearer token it
// is refused; there is no endpoint that hands out the key it lacks.
func TestSessionLeak(t *testing.T) {
	for _, token := range []string{"", "0123456789abcdef-secret"} {
		t.Run(fmt.Sprintf("token=%v", token != ""), func(t *testing.T) {
			e := newEnv(t)
			fixture(t, e, time.Now())
			opts := e.options()
			opts.Token = token
			srv, h := server(t, opts)
			b := login(t, srv.URL, h.token)
			leaked := strings.TrimPrefix(b.cookie, sessionCookie+"=")
			if strings.Contains(b.cookie, h.token) || leaked == h.token || b.key == h.token {
				t.Fatalf("the login's cookie %q or key holds the token", b.cookie)
			}
			ct := "application/x-www-form-urlencoded"
			for _, c := range []struct {
				name string
				hdr  map[string]string
				code int
			}{
				// Only the cookie, as curl would send it: no Origin,
				// Referer or Sec-Fetch-Site.
				{"the cookie alone", map[string]string{"Cookie": b.cookie}, 403},
				// With same-origin headers forged (curl can): still no key.
				{"forged origin", map[string]string{"Cookie": b.cookie, "Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, 403},
				{"forged referer", map[string]string{"Cookie": b.cookie, "Referer": srv.URL + "/"}, 403},
				// The key without the cookie is nothing either.
				{"the key alone", map[string]string{csrfHeader: b.key, "Origin": srv.URL}, 401},
				// The cookie's value as a bearer token.
				{"cookie as bearer", map[string]string{"Authorization": "Bearer " + leaked}, 401},
				{"cookie as bearer with it", map[string]string{"Authorization": "Bearer " + leaked, "Cookie": b.cookie}, 401},
				{"key as bearer", map[string]string{"Authorization": "Bearer " + b.key}, 401},
			} {
				for _, path := range []string{"/api/force-resume", "/api/pause", "/api/resume", "/api/trigger"} {
					hdr := map[string]string{"Content-Type": ct}
					for k, v := range c.hdr {
						hdr[k] = v
					}
					code, _, body := do(t, "POST", srv.URL+path, strings.NewReader("gate=dependency-classifier"), hdr)
					if code != c.code {
						t.Errorf("%s: POST %s: %d %s, want %d", c.name, path, code, body, c.code)
					}
				}
			}
			if !mustLoad(t, e).Gate("dependency-classifier").Paused {
				t.Fatal("a replayed cookie force-resumed the gate")
			}
			if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
				t.Fatalf("a replayed cookie paused: %v", ps)
			}
			// Nothing hands out the key: not the page, not /api/csrf.
			_, _, page := do(t, "GET", srv.URL+"/", nil, map[string]string{"Cookie": b.cookie})
			if strings.Contains(page, b.key) || strings.Contains(page, h.token) {
				t.Errorf("the page served to the cookie holds the key or the token")
			}
			if code, _, body := do(t, "GET", srv.URL+"/api/csrf", nil, map[string]string{"Cookie": b.cookie}); code != 410 || strings.Contains(body, b.key) {
				t.Errorf("/api/csrf: %d %s", code, body)
			}
			// With a token configured, the cookie alone reads nothing.
			if token != "" {
				if code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Cookie": b.cookie}); code != 403 {
					t.Errorf("GET /api/summary with the leaked cookie: %d, want 403", code)
				}
			}
			// The browser itself (cookie, key, same origin) can.
			if code, body := post(t, srv.URL, "/api/force-resume", h, map[string][]string{"gate": {"dependency-classifier"}}); code != 200 {
				t.Errorf("the logged-in page's force-resume: %d %s", code, body)
			}
		})
	}
}

// TestSessionEnds: a session ends at logout, when unused for SessionIdle,
// SessionMaxAge after the login however much it is used, and with the
// process; its cookie is refused after each.
func TestSessionEnds(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	var mu sync.Mutex
	now := time.Now()
	opts := e.options()
	opts.Token = "0123456789abcdef-secret"
	opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv, h := server(t, opts)
	read := func(b browser) int {
		code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Cookie": b.cookie, csrfHeader: b.key})
		return code
	}

	// Logout: needs same-origin proof like any state change, then the
	// session is gone and its cookie deleted.
	b := login(t, srv.URL, h.token)
	if code, _, _ := do(t, "POST", srv.URL+"/api/logout", nil, map[string]string{"Cookie": b.cookie}); code != 403 {
		t.Errorf("logout without same-origin proof: %d, want 403", code)
	}
	if read(b) != 200 {
		t.Fatal("the session does not work")
	}
	code, hd, body := do(t, "POST", srv.URL+"/api/logout", nil, map[string]string{"Cookie": b.cookie, "Origin": srv.URL})
	if code != 200 || !strings.Contains(hd.Get("Set-Cookie"), sessionCookie+"=;") || !strings.Contains(hd.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d %v %s", code, hd, body)
	}
	if c := read(b); c != 401 {
		t.Errorf("after logout: %d, want 401", c)
	}
	if code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Cookie": b.cookie}); code != 401 || !strings.Contains(body, "session has ended") {
		t.Errorf("after logout, the message: %d %s", code, body)
	}

	// Idle: used within SessionIdle it lives on; unused for it, it ends.
	b = login(t, srv.URL, h.token)
	advance(SessionIdle - time.Minute)
	if read(b) != 200 {
		t.Fatal("a session used within SessionIdle ended")
	}
	advance(SessionIdle - time.Minute)
	if read(b) != 200 {
		t.Fatal("a session used within SessionIdle of its last use ended")
	}
	advance(SessionIdle)
	if c := read(b); c != 401 {
		t.Errorf("a session unused for SessionIdle: %d, want 401", c)
	}

	// Max age: used all the time, it still ends SessionMaxAge after the
	// login; the cookie's Max-Age says the same.
	code, hd, _ = do(t, "GET", srv.URL+"/?token="+h.token, nil, nil)
	if code != 303 || !strings.Contains(hd.Get("Set-Cookie"), fmt.Sprintf("Max-Age=%d", int(SessionMaxAge/time.Second))) {
		t.Errorf("login's cookie: %v", hd)
	}
	b = login(t, srv.URL, h.token)
	for elapsed := time.Duration(0); elapsed+time.Hour < SessionMaxAge; elapsed += time.Hour {
		advance(time.Hour)
		if read(b) != 200 {
			t.Fatalf("a session in use ended after %v", elapsed+time.Hour)
		}
	}
	advance(time.Hour)
	if c := read(b); c != 401 {
		t.Errorf("a session past SessionMaxAge: %d, want 401", c)
	}

	// Another process (a restart) knows no session.
	b = login(t, srv.URL, h.token)
	srv2, _ := server(t, opts)
	if code, _, _ := do(t, "GET", srv2.URL+"/api/summary", nil, map[string]string{"Cookie": b.cookie, csrfHeader: b.key}); code != 401 {
		t.Errorf("a session of another process: %d, want 401", code)
	}
}

// TestSessionsBounded: logins beyond MaxSessions end the sessions used
// least recently; the memory they take is bounded.
func TestSessionsBounded(t *testing.T) {
	e := newEnv(t)
	srv, h := server(t, e.options())
	first := login(t, srv.URL, h.token)
	kept := login(t, srv.URL, h.token)
	for i := 0; i < 3*MaxSessions; i++ {
		// kept is used between logins; first never again.
		if code, _, _ := do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=x"),
			kept.page(srv.URL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})); code != http.StatusOK {
			t.Fatalf("the session in use was ended after %d logins: %d", i, code)
		}
		login(t, srv.URL, h.token)
		if n := h.sessions.count(); n > MaxSessions {
			t.Fatalf("%d sessions kept, more than %d", n, MaxSessions)
		}
	}
	if code, _, _ := do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=x"),
		first.page(srv.URL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})); code != http.StatusUnauthorized {
		t.Errorf("the session used least recently survived %d logins: %d", 3*MaxSessions, code)
	}
}
