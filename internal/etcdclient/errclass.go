//go:build linux

package etcdclient

// The classes of the etcd client's errors, for the two packages that talk
// to etcd (etcdlock, etcdpause) and this one.

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

// Code is the gRPC code of a client error: the member's answer
// (rpctypes.EtcdError, or a gRPC status), DeadlineExceeded or Canceled
// for a context's error, Unknown for anything else.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if ee, ok := errors.AsType[rpctypes.EtcdError](err); ok {
		return ee.Code()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Unknown
}
