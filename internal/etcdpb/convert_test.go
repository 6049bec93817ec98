package etcdpb

import (
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// The tests compare this package's messages with etcd's generated ones
// (the protobuf runtime is the reference for the encoding): ours and
// theirs copy a message field by field, by name, between the two. A field
// of theirs that ours lacks fails the test, so a field the codec must
// know cannot go missing unnoticed.

// oneofs are this package's oneof members, by type name.
var oneofs = map[string]reflect.Type{}

func init() {
	for _, v := range []any{&RequestOp_RequestRange{}, &RequestOp_RequestPut{}, &RequestOp_RequestDeleteRange{}, &RequestOp_RequestTxn{},
		&ResponseOp_ResponseRange{}, &ResponseOp_ResponsePut{}, &ResponseOp_ResponseDeleteRange{}, &ResponseOp_ResponseTxn{},
		&Compare_Version{}, &Compare_CreateRevision{}, &Compare_ModRevision{}, &Compare_Value{}, &Compare_Lease{},
		&WatchRequest_CreateRequest{}, &WatchRequest_CancelRequest{}, &WatchRequest_ProgressRequest{}} {
		oneofs[reflect.TypeOf(v).Elem().Name()] = reflect.TypeOf(v)
	}
}

// ours is the message of this package named as m's type, filled from m.
func ours(t *testing.T, m proto.Message) any {
	t.Helper()
	name := reflect.TypeOf(m).Elem().Name()
	var dst any
	for _, v := range []any{&RangeRequest{}, &RangeResponse{}, &TxnRequest{}, &TxnResponse{}, &PutRequest{}, &PutResponse{},
		&DeleteRangeRequest{}, &DeleteRangeResponse{}, &LeaseGrantRequest{}, &LeaseGrantResponse{}, &LeaseRevokeRequest{},
		&LeaseRevokeResponse{}, &LeaseKeepAliveRequest{}, &LeaseKeepAliveResponse{}, &StatusRequest{}, &StatusResponse{},
		&WatchRequest{}, &WatchResponse{}, &AuthenticateRequest{}, &AuthenticateResponse{}} {
		if reflect.TypeOf(v).Elem().Name() == name {
			dst = v
		}
	}
	if dst == nil {
		t.Fatalf("no message %s here", name)
	}
	if err := copyValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(m).Elem(), nil); err != "" {
		t.Fatalf("%s: %s", name, err)
	}
	return dst
}

// theirs fills etcd's message dst from ours, and returns it.
func theirs(t *testing.T, ours any, dst proto.Message) proto.Message {
	t.Helper()
	if err := copyValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(ours).Elem(), theirOneofs); err != "" {
		t.Fatalf("%T: %s", dst, err)
	}
	return dst
}

// theirOneofs are etcd's oneof members, by type name.
var theirOneofs = map[string]reflect.Type{}

func init() {
	for _, v := range []any{&pb.RequestOp_RequestRange{}, &pb.RequestOp_RequestPut{}, &pb.RequestOp_RequestDeleteRange{}, &pb.RequestOp_RequestTxn{},
		&pb.ResponseOp_ResponseRange{}, &pb.ResponseOp_ResponsePut{}, &pb.ResponseOp_ResponseDeleteRange{}, &pb.ResponseOp_ResponseTxn{},
		&pb.Compare_Version{}, &pb.Compare_CreateRevision{}, &pb.Compare_ModRevision{}, &pb.Compare_Value{}, &pb.Compare_Lease{},
		&pb.WatchRequest_CreateRequest{}, &pb.WatchRequest_CancelRequest{}, &pb.WatchRequest_ProgressRequest{}} {
		theirOneofs[reflect.TypeOf(v).Elem().Name()] = reflect.TypeOf(v)
	}
}

// copyValue copies src into dst, fields by name. wrappers names the oneof
// member types of dst's side (nil: this package's).
func copyValue(dst, src reflect.Value, wrappers map[string]reflect.Type) string {
	if wrappers == nil {
		wrappers = oneofs
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return ""
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		return copyValue(dst.Elem(), src.Elem(), wrappers)
	case reflect.Interface:
		if src.IsNil() {
			return ""
		}
		name := src.Elem().Type().Elem().Name()
		wt, ok := wrappers[name]
		if !ok {
			return "no oneof member " + name
		}
		w := reflect.New(wt.Elem())
		if err := copyValue(w.Elem(), src.Elem().Elem(), wrappers); err != "" {
			return err
		}
		dst.Set(w)
	case reflect.Struct:
		for i := range src.NumField() {
			f := src.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			d := dst.FieldByName(f.Name)
			if !d.IsValid() {
				return "no field " + f.Name + " in " + dst.Type().Name()
			}
			if err := copyValue(d, src.Field(i), wrappers); err != "" {
				return err
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return ""
		}
		if src.Type().Elem().Kind() == reflect.Uint8 {
			dst.SetBytes(append([]byte{}, src.Bytes()...))
			return ""
		}
		s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			if err := copyValue(s.Index(i), src.Index(i), wrappers); err != "" {
				return err
			}
		}
		dst.Set(s)
	case reflect.Int32, reflect.Int64:
		dst.SetInt(src.Int())
	case reflect.Uint64:
		dst.SetUint(src.Uint())
	case reflect.Bool:
		dst.SetBool(src.Bool())
	case reflect.String:
		dst.SetString(src.String())
	default:
		return "kind " + src.Kind().String()
	}
	return ""
}
