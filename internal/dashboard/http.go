//go:build linux

package dashboard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

//go:embed assets
var assets embed.FS

// pageTmpl is parsed on first use, not at start-up: cron-gate links the
// dashboard, and its per-tick run must not pay for parsing a page it never
// serves (docs/design.md, "One cron-gate binary").
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/index.html"))
})

// legacyCookie is the cookie older versions set at login: it held the
// token itself. It is no longer accepted, and a login deletes it.
const legacyCookie = "cron_gate_token"

// loginCookie is set by a login whose session cookie is Secure although
// the login came over plain HTTP as far as the server can see (a
// non-loopback Host, no TLS, no X-Forwarded-Proto: https). It holds no
// secret and is not Secure: when a request then carries it without the
// session cookie, the browser dropped the Secure cookie because the page
// is plain HTTP, and the 401 says so instead of repeating the login
// instruction just followed.
const loginCookie = "cron_gate_login"

// plainHTTPHint is what that 401 says.
const plainHTTPHint = "this browser did not keep the session that the login just opened: its cookie is Secure (sent over HTTPS only) and this address is plain HTTP. Open the dashboard over HTTPS (a TLS proxy in front of cron-gate serve; docs/dashboard.md) or through ssh -L 8371:127.0.0.1:8371 HOST, then http://127.0.0.1:8371/?token=TOKEN"

// csrfHeader is the header in which the page sends its session's key
// (session.go) with every API request.
const csrfHeader = "X-CSRF-Token"

// The content security policy: everything from this origin only, no
// inline script or style, no framing, forms and fetches to this origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

type route struct {
	method string // GET (HEAD too) or POST
	public bool   // no auth token needed
	// cookieOnly: a session cookie alone is enough, without its key in
	// csrfHeader: the page (a shell with no secret in it, which must load
	// before the page can send the key) and logout.
	cookieOnly bool
	fn         func(http.ResponseWriter, *http.Request)
}

func (h *handler) routes() {
	h.mux = http.NewServeMux()
	add := func(path string, rt route) {
		h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { h.dispatch(w, r, rt) })
	}
	add("/{$}", route{method: "GET", cookieOnly: true, fn: h.page})
	add("/assets/app.js", route{method: "GET", public: true, fn: h.asset("assets/app.js", "text/javascript; charset=utf-8")})
	add("/assets/app.css", route{method: "GET", public: true, fn: h.asset("assets/app.css", "text/css; charset=utf-8")})
	add("/assets/favicon.svg", route{method: "GET", public: true, fn: h.asset("assets/favicon.svg", "image/svg+xml")})
	add("/healthz", route{method: "GET", public: true, fn: h.healthz})
	add("/metrics", route{method: "GET", fn: h.metrics})
	add("/api/summary", route{method: "GET", fn: h.apiSummary})
	add("/api/output", route{method: "GET", fn: h.apiOutput})
	add("/api/timeline", route{method: "GET", fn: h.apiTimeline})
	add("/api/csrf", route{method: "GET", public: true, fn: h.apiCSRFGone})
	add("/api/logout", route{method: "POST", cookieOnly: true, fn: h.logout})
	add("/api/pause", route{method: "POST", fn: h.action(actPause)})
	add("/api/resume", route{method: "POST", fn: h.action(actResume)})
	add("/api/force-resume", route{method: "POST", fn: h.action(actForceResume)})
	add("/api/trigger", route{method: "POST", fn: h.action(actTrigger)})
	// Everything else: 404 in the same one-line format as every error
	// (the mux's own is plain text).
	h.mux.HandleFunc("/", h.notFound)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	fail(w, r, http.StatusNotFound, fmt.Sprintf("no such page: %s", safetext.Cut(r.URL.Path, 100)))
}

// cleanPath is the path the mux would redirect to: path.Clean, keeping a
// trailing slash.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// ServeHTTP sets the headers every answer carries, refuses foreign Host
// headers, and turns a panic into a 500.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Printf("panic serving %s %s: %v\n%s", r.Method, r.URL.Path, p, debug.Stack())
			// If the answer has begun this is lost; the client sees a
			// cut answer, which is all that is left to do.
			fail(w, r, http.StatusInternalServerError, "internal error; see the server's log")
		}
	}()
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	if h.open && !loopbackHost(r.Host) {
		// Without a token only loopback names are served: a page on
		// another site whose name was made to resolve to 127.0.0.1 (DNS
		// rebinding) is then refused instead of being "same origin".
		fail(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not served: without an auth token the dashboard answers only to localhost and loopback addresses", r.Host))
		return
	}
	if r.Method != http.MethodConnect && cleanPath(r.URL.Path) != r.URL.Path {
		// /assets/../x, //api/summary: the mux would redirect to the
		// cleaned path; no page of the dashboard is reached that way.
		h.notFound(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// dispatch checks the method, the auth and, for POST, the origin, and the
// session's key, then runs the route. The rules (docs/dashboard.md, "Security"):
//
//   - who: Authorization: Bearer TOKEN, or a live session's cookie; without
//     a configured token (loopback), reads need neither;
//   - from where, for POST: a cross-site request (by Sec-Fetch-Site,
//     Origin or Referer) is refused; one authenticated by the cookie must
//     carry that same-origin proof, since one with none of the three
//     headers is not from a browser page;
//   - and a request that only the session cookie authorises must carry
//     the session's key (csrfHeader), but for the page itself and logout.
func (h *handler) dispatch(w http.ResponseWriter, r *http.Request, rt route) {
	switch {
	case rt.method == "GET" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
	case rt.method == r.Method:
	default:
		allow := rt.method
		if allow == "GET" {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		fail(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, rt.method))
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		// Always answered by a redirect (or a 401): the token must not
		// stay in the address bar, authorised already or not.
		h.login(w, r)
		return
	}
	a := h.authOf(r)
	readOpen := h.open && r.Method != http.MethodPost
	if !rt.public && !a.bearer && a.session == nil && !readOpen {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cron-gate"`)
		msg := "this dashboard needs its auth token: open /?token=TOKEN once in the browser, or send Authorization: Bearer TOKEN"
		switch {
		case h.open:
			msg = "pausing and resuming need the dashboard's action token: open the address ending in /?token=… that cron-gate serve printed when it started, once in this browser (again after every restart of cron-gate serve), or send Authorization: Bearer TOKEN"
		case a.cookie && !a.header:
			msg = "this browser's session has ended (expired, logged out, or cron-gate serve restarted): open /?token=TOKEN again, or send Authorization: Bearer TOKEN"
		case !a.cookie && !a.header && hasCookie(r, loginCookie):
			msg = plainHTTPHint
		}
		fail(w, r, http.StatusUnauthorized, msg)
		return
	}
	if r.Method == http.MethodPost {
		// A browser never adds an Authorization header by itself, so a
		// bearer request is not forged and need not say where it comes
		// from; a cookie is added to any request to this host, so a
		// request it authorises must prove it comes from this origin.
		if err := sameOrigin(r, !a.bearer); err != nil {
			fail(w, r, http.StatusForbidden, err.Error())
			return
		}
	}
	if !rt.public && !a.bearer && a.session != nil && !rt.cookieOnly && !readOpen && !equal(r.Header.Get(csrfHeader), a.session.key) {
		fail(w, r, http.StatusForbidden, "missing or wrong "+csrfHeader+" header (the session's key, which the page got at login): reload the page; if that does not help, open /?token=… again (scripts: send Authorization: Bearer TOKEN)")
		return
	}
	rt.fn(w, r)
}

// auth is how a request authenticated itself.
type auth struct {
	bearer  bool     // Authorization: Bearer with the token
	header  bool     // an Authorization header was sent (right or wrong)
	session *session // a session cookie named a live session
	cookie  bool     // a session cookie was sent (live or not)
}

// authOf reads a request's credentials: the Authorization header when
// there is one (then cookies are not looked at), else the session cookies
// (every one of the name: another local service can set a cookie of the
// same name for this host, which must not hide the real one).
func (h *handler) authOf(r *http.Request) auth {
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, tok, _ := strings.Cut(v, " ")
		return auth{header: true, bearer: strings.EqualFold(scheme, "Bearer") && equal(strings.TrimSpace(tok), h.token)}
	}
	var a auth
	now := h.now()
	for _, c := range r.CookiesNamed(sessionCookie) {
		a.cookie = true
		if se := h.sessions.get(c.Value, now); se != nil {
			a.session = se
			break
		}
	}
	return a
}

// login checks /?token=TOKEN, opens a session (ending the one the browser
// had, if any), sets its cookie and redirects to /#session=KEY: the token
// leaves the address bar and the history, and the page keeps the key
// (session.go). A wrong token is a 401, and the cookie, if any, is left
// alone.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if !equal(r.URL.Query().Get("token"), h.token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cron-gate"`)
		msg := "wrong token"
		if h.open {
			msg = "wrong token: use the address that cron-gate serve printed when it last started (the action token changes at every start)"
		}
		fail(w, r, http.StatusUnauthorized, msg)
		return
	}
	old := ""
	for _, c := range r.CookiesNamed(sessionCookie) {
		if h.sessions.get(c.Value, h.now()) != nil {
			old = c.Value
		}
	}
	id, key, err := h.sessions.open(h.now(), old)
	if err != nil {
		h.log.Printf("login: %v", err)
		fail(w, r, http.StatusInternalServerError, "cannot make a session")
		return
	}
	secure := secureRequest(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: int(SessionMaxAge / time.Second)})
	if secure && r.TLS == nil && !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		// Maybe plain HTTP off loopback, maybe a TLS proxy that does
		// not say so: loginCookie tells the next request which.
		http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "1", Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, MaxAge: 120})
	}
	// The cookie of older versions held the token: drop it.
	http.SetCookie(w, &http.Cookie{Name: legacyCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: -1})
	http.Redirect(w, r, "/#session="+key, http.StatusSeeOther)
}

// logout ends the browser's session and deletes its cookie.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	for _, c := range r.CookiesNamed(sessionCookie) {
		h.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secureRequest(r), MaxAge: -1})
	if hasCookie(r, loginCookie) {
		http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "message": "logged out"})
}

// secureRequest reports whether the auth cookie is to be Secure (sent
// over HTTPS only): TLS here, a TLS proxy's X-Forwarded-Proto: https, or
// any Host that is not loopback — off loopback the README asks for a TLS
// proxy, which keeps the Host header and need not say the protocol, so
// r.TLS is nil there. Loopback (ssh -L, the browser on the machine) is
// plain HTTP.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") || !loopbackHost(r.Host)
}

// hasCookie reports whether the request carries a cookie of that name.
func hasCookie(r *http.Request, name string) bool {
	_, err := r.Cookie(name)
	return err == nil
}

// equal compares two secrets in constant time (whatever their lengths).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1 && b != ""
}

// sameOrigin refuses a request a browser sent from another site: by
// Sec-Fetch-Site when the browser sends it, else by Origin, else by
// Referer, each against the Host header. A request with none of them does
// not come from a browser's page (curl, scripts): it passes unless proof
// is required.
func sameOrigin(r *http.Request, proof bool) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		if s == "same-origin" {
			return nil
		}
		return fmt.Errorf("cross-site request refused (Sec-Fetch-Site: %s)", s)
	}
	check := func(hdr, v string) error {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("cross-origin request refused (%s %s is not this site, %s)", hdr, safetext.Quote(v), r.Host)
		}
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		return check("Origin", o)
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return check("Referer", ref)
	}
	if proof {
		return errors.New("a request authenticated by the session cookie must come from the dashboard's page, and this one carries no Sec-Fetch-Site, Origin or Referer header (scripts: send Authorization: Bearer TOKEN)")
	}
	return nil
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost (or a name under .localhost) or a loopback IP.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// fail answers an error: one line, JSON {"error": ...} under /api/,
// plain text elsewhere.
func fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	msg = oneLine(msg)
	w.Header().Del("Content-Length")
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, "cron-gate serve: "+msg)
}

// writeJSON answers v as JSON. Stored text in it (a pause reason, a
// journal's detail) may hold control or bidirectional characters written
// before they were refused, or by hand: the bytes carry them escaped
// (safetext.JSON), so a terminal that shows the answer raw is safe; the
// page neutralises them again when it shows the decoded values.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	data = safetext.JSON(data)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(append(data, '\n'))
}

// oneLine makes an error message one safe line: its runs of white space
// (line breaks too) folded into one space, then what is left unsafe
// escaped (safetext.Line).
func oneLine(s string) string {
	return safetext.Line(strings.Join(strings.Fields(s), " "))
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	// Whether this browser may use the buttons: it has a session (the
	// page checks that it also has the session's key).
	a := h.authOf(r)
	err := pageTmpl().Execute(&b, struct {
		Zone   string
		CanAct bool
	}{h.loc.String(), a.session != nil || a.bearer})
	if err != nil {
		h.log.Printf("page: %v", err)
		fail(w, r, http.StatusInternalServerError, "cannot render the page")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func (h *handler) asset(name, ctype string) func(http.ResponseWriter, *http.Request) {
	data, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		// The same binary always serves the same bytes; revalidation
		// is cheap, and a new binary is seen at once.
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	}
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// apiCSRFGone answers what used to hand out a per-process CSRF token to
// anyone who could read the page (in loopback mode, every local user).
func (h *handler) apiCSRFGone(w http.ResponseWriter, r *http.Request) {
	fail(w, r, http.StatusGone, "GET /api/csrf is gone: scripts send Authorization: Bearer TOKEN, which needs no CSRF token; the page gets its key when it logs in")
}

func (h *handler) apiSummary(w http.ResponseWriter, r *http.Request) {
	s, err := h.summary()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	cfg, err := h.config()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	rep, err := gate.Status(cfg, h.opts.Pauses, h.now())
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	st, err := watch.ReadState(cfg)
	if err != nil {
		st = nil // the gates' metrics are still worth having
		h.log.Printf("metrics: %v", err)
	}
	var b bytes.Buffer
	if err := watch.WriteMetrics(&b, cfg, rep, st); err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// maxOutput bounds the output tail /api/output returns.
const maxOutput = 64 << 10

func (h *handler) apiOutput(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("gate")
	if err := gate.CheckName(name); err != nil {
		fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	cfg, err := h.config()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	// Only the tail is read: the log can be twice log_max_bytes long.
	tail, err := journal.LastOutputTail(gate.StateDirFor(cfg), name, maxOutput)
	if err != nil {
		fail(w, r, http.StatusInternalServerError, fmt.Sprintf("output of gate %s: %v", name, err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Gate      string `json:"gate"`
		LogOutput bool   `json:"log_output"`
		Output    string `json:"output"`
		Cut       int64  `json:"cut_bytes,omitempty"`
	}{name, cfg.Gate(name).LogOutput, h.zoneMarkers(strings.ToValidUTF8(tail.Text, "\uFFFD")), tail.Cut})
}

// outputMarker begins the lines the output log writes around each run's
// output: "=== cron-gate run ID started TIME" and "… ended TIME: …".
const outputMarker = "=== cron-gate run "

// zoneMarkers rewrites the times of the output log's own marker lines
// (RFC 3339, UTC) into the dashboard's zone, "2026-11-29 18:10:00 KST",
// like every other time on the page; the command's own lines are left as
// they are.
func (h *handler) zoneMarkers(text string) string {
	if !strings.Contains(text, outputMarker) {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, outputMarker)
		if !ok {
			continue
		}
		for _, word := range []string{" started ", " ended "} {
			j := strings.Index(rest, word)
			if j < 0 {
				continue
			}
			k := j + len(word)
			end := len(rest)
			for _, stop := range []string{": ", " ", "\n"} {
				if e := strings.Index(rest[k:], stop); e >= 0 && k+e < end {
					end = k + e
				}
			}
			t, err := time.Parse(time.RFC3339Nano, rest[k:end])
			if err != nil {
				continue
			}
			lines[i] = outputMarker + rest[:k] + t.In(h.loc).Format("2006-01-02 15:04:05 MST") + rest[end:]
			break
		}
	}
	return strings.Join(lines, "")
}
