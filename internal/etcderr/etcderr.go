// Package etcderr classifies the etcd client's errors, for the two
// packages that talk to etcd (etcdlock, etcdpause).
package etcderr

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.PermissionDenied,
		codes.Unauthenticated, codes.OutOfRange, codes.AlreadyExists, codes.ResourceExhausted:
		return false
	}
	return true
}

// Code is the gRPC code of a client error: the client turns server errors
// into rpctypes.EtcdError, other failures stay gRPC status errors.
func Code(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	return status.Code(err)
}
