//go:build linux

package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// A browser logs in by opening /?token=TOKEN once. What it gets is not the
// token: a session, made for it, that lives only in this process.
//
// The token must not be the cookie. A browser sends a cookie to every port
// of its host, so after a login on 127.0.0.1:8371 any other local service
// the browser visits (127.0.0.1:9000, another user's) receives the cookie;
// if it held the token, that service could use it as a bearer token for
// ever. A session is worth much less to such a thief:
//
//   - the cookie holds a random session ID; it is never accepted as a
//     bearer token, expires (SessionIdle, SessionMaxAge), ends at logout and
//     with the process;
//   - the cookie alone authorises nothing but the page itself (a shell with
//     no secret in it). Every API request authenticated by the cookie must
//     also carry the session's key in the X-CSRF-Token header. The key is
//     given to the page once, at login, in the redirect's fragment
//     (/#session=KEY, which no browser sends to a server) and kept in the
//     page's localStorage, which belongs to this origin — scheme, host
//     and port — alone: the other service receives the cookie but can never
//     read the key, and no endpoint hands it out again;
//   - a state change authenticated by the cookie must also come with
//     same-origin proof (Sec-Fetch-Site: same-origin, or an Origin or
//     Referer naming this Host); a request that carries none of them is not
//     a browser page's and is refused. Only `Authorization: Bearer`
//     requests may omit it.

// sessionCookie is the name of the cookie that holds a session ID.
const sessionCookie = "cron_gate_session"

// How long a session lasts: it ends when it has not been used for
// SessionIdle, and in any case SessionMaxAge after the login (the cookie's
// Max-Age). The page refreshes every 5 s, so an open page keeps its
// session for a week.
const (
	SessionIdle   = 12 * time.Hour
	SessionMaxAge = 7 * 24 * time.Hour
)

// MaxSessions bounds the sessions kept: a login beyond it ends the session
// used least recently.
const MaxSessions = 64

type session struct {
	key     string    // what the page echoes in X-CSRF-Token
	created time.Time // the login
	used    time.Time // the last request it authorised
}

// sessions is the process's sessions, by the SHA-256 of their ID (so that
// a map lookup's timing tells nothing about an ID).
type sessions struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

func randomString() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// open makes a session at now and returns its ID and key; replaces, if
// not "", is the ID of the session the browser had (it is ended).
func (s *sessions) open(now time.Time, replaces string) (id, key string, err error) {
	if id, err = randomString(); err != nil {
		return "", "", err
	}
	if key, err = randomString(); err != nil {
		return "", "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[sha256.Size]byte]*session{}
	}
	if replaces != "" {
		delete(s.m, sha256.Sum256([]byte(replaces)))
	}
	var oldest [sha256.Size]byte
	var oldestUsed time.Time
	for h, se := range s.m {
		if !se.valid(now) {
			delete(s.m, h)
			continue
		}
		if oldestUsed.IsZero() || se.used.Before(oldestUsed) {
			oldest, oldestUsed = h, se.used
		}
	}
	if len(s.m) >= MaxSessions {
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = &session{key: key, created: now, used: now}
	return id, key, nil
}

// get returns the live session whose ID is id and marks it used at now, or
// nil.
func (s *sessions) get(id string, now time.Time) *session {
	if id == "" {
		return nil
	}
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.m[h]
	if se == nil {
		return nil
	}
	if !se.valid(now) {
		delete(s.m, h)
		return nil
	}
	se.used = now
	return &session{key: se.key, created: se.created, used: se.used}
}

// end ends the session whose ID is id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	delete(s.m, sha256.Sum256([]byte(id)))
	s.mu.Unlock()
}

// count is the number of sessions kept (live or not yet pruned).
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (se *session) valid(now time.Time) bool {
	return now.Before(se.used.Add(SessionIdle)) && now.Before(se.created.Add(SessionMaxAge))
}
