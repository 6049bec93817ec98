package clientv3

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Code is a gRPC status code (google.golang.org/grpc/codes: the same
// numbers).
type Code uint32

const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

// EtcdError is an error a member answered with (its gRPC status: code and
// message, "etcdserver: requested lease not found"), or a failure of the
// connection, which is Unavailable. Two with the same code and message
// are equal, so errors.Is(err, ErrLeaseNotFound) works.
type EtcdError struct {
	code   Code
	desc   string
	unsent bool // the request never left: it may be sent elsewhere
}

func (e EtcdError) Error() string { return e.desc }

// Code is the error's gRPC status code.
func (e EtcdError) Code() Code { return e.code }

// The errors the callers tell apart.
var (
	ErrLeaseNotFound    = EtcdError{code: NotFound, desc: "etcdserver: requested lease not found"}
	ErrCompacted        = EtcdError{code: OutOfRange, desc: "etcdserver: mvcc: required revision has been compacted"}
	ErrFutureRev        = EtcdError{code: OutOfRange, desc: "etcdserver: mvcc: required revision is a future revision"}
	ErrInvalidAuthToken = EtcdError{code: Unauthenticated, desc: "etcdserver: invalid auth token"}
)

// unavailable is a failure to reach a member or to get its answer whole.
func unavailable(format string, a ...any) error {
	return EtcdError{code: Unavailable, desc: fmt.Sprintf(format, a...)}
}

// ErrorCode is err's gRPC code: EtcdError's, DeadlineExceeded or Canceled
// for a context's error, Unknown for anything else.
func ErrorCode(err error) Code {
	var ee EtcdError
	switch {
	case err == nil:
		return OK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return Unknown
}

// ContextError is err, or ctx's error when ctx has ended (the request
// was abandoned because of it).
func ContextError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// statusError reads a gRPC status from an answer's trailers (or headers,
// for an answer without a body): nil for OK.
func statusError(status, message string) error {
	if status == "" {
		return unavailable("the member's answer carries no gRPC status")
	}
	n, err := strconv.ParseUint(status, 10, 32)
	if err != nil {
		return unavailable("the member's answer carries a malformed gRPC status")
	}
	if n == 0 {
		return nil
	}
	return EtcdError{code: Code(n), desc: decodeMessage(message[:min(len(message), maxMessage)])}
}

// maxMessage bounds the part of a member's error message that is kept:
// the messages are one line and it is shown in one.
const maxMessage = 1000

// decodeMessage undoes gRPC's percent-encoding of grpc-message.
func decodeMessage(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}
