// Package etcderr classifies the etcd client's errors, for the two
// packages that talk to etcd (etcdlock, etcdpause).
package etcderr

import (
	"context"
	"errors"

	clientv3 "github.com/crongate/crongate/internal/etcdv3"
)

// Ambiguous reports whether err means "no answer": a timeout, a broken
// connection, a leader change — a write may or may not have been applied.
// Errors the server returns after deciding (bad request, permission
// denied, lease not found, too many operations) are definite.
func Ambiguous(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	switch Code(err) {
	case clientv3.InvalidArgument, clientv3.NotFound, clientv3.FailedPrecondition, clientv3.PermissionDenied,
		clientv3.Unauthenticated, clientv3.OutOfRange, clientv3.AlreadyExists, clientv3.ResourceExhausted:
		return false
	}
	return true
}

// Code is the gRPC code of a client error.
func Code(err error) clientv3.Code { return clientv3.ErrorCode(err) }
