//go:build linux

package etcdclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// tokenAuth logs in to etcd's user/password auth and keeps the token,
// in place of the client's own handling (clientv3.Config's Username and
// Password), which fails against the servers we support: from client
// v3.6 on, a lapsed token is sent along with the login that should
// replace it, and members older than 3.5 check that token before the
// login and refuse it (etcd PRs #12165, server side, and #12549, the
// client side fix that v3.6 dropped), so every request of a process whose
// token lapsed waits for its deadline (on Debian's 3.4.23 with
// --auth-token-ttl 2: every call that held longer than that). Here the
// login never carries a token, and a request refused for its token
// (invalid, or none: a member that lost it) logs in again and is sent once
// more: refused for the token means not applied, so sending it again is
// safe for any request.
type tokenAuth struct {
	user, password string

	tok atomic.Pointer[token]
	mu  sync.Mutex // one login at a time
}

type token struct {
	s  string
	at time.Time // when the login that got it was answered
}

// authMethod is the login's gRPC method.
const authMethod = "/etcdserverpb.Auth/Authenticate"

// fresh: a token this young refused is a member that has not applied the
// login yet (each member learns a simple token from the log), not a
// lapsed token: no new login; the client's retry sends the request again,
// to the next member.
const fresh = 500 * time.Millisecond

// GetRequestMetadata adds the token to every request but the login.
func (a *tokenAuth) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	t := a.tok.Load()
	if t == nil || ctx.Value(noToken{}) != nil {
		return nil, nil
	}
	return map[string]string{rpctypes.TokenFieldNameGRPC: t.s}, nil
}

// RequireTransportSecurity: etcd takes a token over plain connections
// too, as etcdctl sends it.
func (a *tokenAuth) RequireTransportSecurity() bool { return false }

// noToken marks the login's context: it goes without the token.
type noToken struct{}

// login logs in through cc and keeps the token.
func (a *tokenAuth) login(ctx context.Context, cc grpc.ClientConnInterface) error {
	resp, err := pb.NewAuthClient(cc).Authenticate(context.WithValue(ctx, noToken{}, true),
		&pb.AuthenticateRequest{Name: a.user, Password: a.password})
	if errors.Is(rpctypes.Error(err), rpctypes.ErrAuthNotEnabled) {
		// As the client's own login: a cluster without auth takes
		// requests without a token.
		a.tok.Store(nil)
		return nil
	}
	if err != nil {
		return err
	}
	a.tok.Store(&token{s: resp.Token, at: time.Now()})
	return nil
}

// relogin logs in again after a request sent with stale was refused for
// its token, unless another request did meanwhile or stale is fresh. It
// reports whether the request is to be sent again now.
func (a *tokenAuth) relogin(ctx context.Context, cc grpc.ClientConnInterface, stale *token) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch cur := a.tok.Load(); {
	case cur != stale:
		return true // another request logged in meanwhile
	case cur != nil && time.Since(cur.at) < fresh:
		return false
	}
	return a.login(ctx, cc) == nil
}

// unary sends a request, and once more after a new login if it was
// refused for its token. It runs inside the client's retry interceptor,
// once for each attempt.
func (a *tokenAuth) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method == authMethod {
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	used := a.tok.Load()
	err := invoke(ctx, method, req, reply, cc, opts...)
	if tokenRefused(err) && a.relogin(ctx, cc, used) {
		err = invoke(ctx, method, req, reply, cc, opts...)
	}
	return err
}

// The streams (a watch, a lease renewal) are opened by Client.stream,
// which calls these two. A stream refused for its token logs in again,
// for the next one: the callers open a new stream after an error.

// current is the token a stream is opened with (nil on a nil tokenAuth:
// no auth).
func (a *tokenAuth) current() *token {
	if a == nil {
		return nil
	}
	return a.tok.Load()
}

// opened: a stream opened with used, or refused with err.
func (a *tokenAuth) opened(ctx context.Context, cc *grpc.ClientConn, used *token, err error) {
	if a != nil && tokenRefused(err) {
		a.relogin(ctx, cc, used)
	}
}

// received: an answer m (or err) on a stream opened with used. A watch is
// refused through its answer: 3.4 cancels it with "permission denied"
// (indistinguishable there from a user without permission, so a lapsed
// token is assumed: one login), later versions with the token's error.
func (a *tokenAuth) received(cc *grpc.ClientConn, used *token, m any, err error) {
	if a == nil {
		return
	}
	refused := tokenRefused(err)
	if w, ok := m.(*pb.WatchResponse); ok && err == nil && w.Canceled {
		refused = w.CancelReason == rpctypes.ErrGRPCPermissionDenied.Error() ||
			w.CancelReason == rpctypes.ErrGRPCInvalidAuthToken.Error()
	}
	if refused {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		a.relogin(ctx, cc, used)
		cancel()
	}
}

// tokenRefused reports whether err says the request's token was refused:
// invalid (lapsed), or missing where the member needs one.
func tokenRefused(err error) bool {
	e := rpctypes.Error(err)
	return errors.Is(e, rpctypes.ErrInvalidAuthToken) || errors.Is(e, rpctypes.ErrUserEmpty)
}
