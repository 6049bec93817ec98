package etcdpb

import (
	"bytes"
	"math/rand/v2"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// requests and responses are the messages codec writes out by hand.
func requests() []proto.Message {
	return []proto.Message{&pb.RangeRequest{}, &pb.TxnRequest{}, &pb.LeaseGrantRequest{}, &pb.LeaseRevokeRequest{},
		&pb.LeaseKeepAliveRequest{}, &pb.StatusRequest{}, &pb.WatchRequest{}, &pb.AuthenticateRequest{}}
}

func responses() []proto.Message {
	return []proto.Message{&pb.RangeResponse{}, &pb.TxnResponse{}, &pb.LeaseGrantResponse{}, &pb.LeaseRevokeResponse{},
		&pb.LeaseKeepAliveResponse{}, &pb.StatusResponse{}, &pb.WatchResponse{}, &pb.AuthenticateResponse{}}
}

// fill sets a random subset of m's fields to random values, one member
// of each oneof, down to depth levels of nested messages.
func fill(r *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	oneofs := m.Descriptor().Oneofs()
	chosen := map[protoreflect.FullName]protoreflect.FieldDescriptor{}
	for i := range oneofs.Len() {
		o := oneofs.Get(i)
		if r.IntN(4) > 0 {
			chosen[o.FullName()] = o.Fields().Get(r.IntN(o.Fields().Len()))
		}
	}
	for i := range fields.Len() {
		f := fields.Get(i)
		if o := f.ContainingOneof(); o != nil {
			if chosen[o.FullName()] != f {
				continue
			}
		} else if r.IntN(3) == 0 {
			continue
		}
		switch {
		case f.IsList():
			l := m.Mutable(f).List()
			for range r.IntN(4) {
				if f.Kind() == protoreflect.MessageKind {
					if depth > 0 {
						e := l.NewElement()
						fill(r, e.Message(), depth-1)
						l.Append(e)
					}
				} else {
					l.Append(scalar(r, f))
				}
			}
		case f.Kind() == protoreflect.MessageKind:
			if depth > 0 || f.ContainingOneof() != nil {
				sub := m.Mutable(f).Message()
				if depth > 0 {
					fill(r, sub, depth-1)
				}
			}
		default:
			m.Set(f, scalar(r, f))
		}
	}
}

func scalar(r *rand.Rand, f protoreflect.FieldDescriptor) protoreflect.Value {
	n := r.Int64()
	if r.IntN(3) == 0 {
		n = -n
	}
	if r.IntN(4) == 0 {
		n = 0 // an explicit zero: left out, except in a oneof
	}
	switch f.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(int32(r.IntN(8) - 1)))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(n)
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString([]string{"", "3.4.23", "κλειδί", "etcdserver: requested lease not found"}[r.IntN(4)])
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic("kind " + f.Kind().String())
}

// TestCodecMatchesProtobuf: for random messages of every type the codec
// handles, its requests are the protobuf runtime's bytes, and it decodes
// the runtime's bytes into equal messages.
func TestCodecMatchesProtobuf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		for _, m := range requests() {
			m = m.ProtoReflect().New().Interface()
			fill(r, m.ProtoReflect(), 3)
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := Marshal(ours(t, m))
			if !ok {
				t.Fatalf("%T: not encoded", m)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%T %v:\n got %x\nwant %x", m, m, got, want)
			}
		}
		for _, m := range responses() {
			m = m.ProtoReflect().New().Interface()
			fill(r, m.ProtoReflect(), 3)
			b, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got := ours(t, m.ProtoReflect().New().Interface())
			if err := Unmarshal(b, got); err != nil {
				t.Fatalf("%T %v: %v", m, m, err)
			}
			if back := theirs(t, got, m.ProtoReflect().New().Interface()); !proto.Equal(back, m) {
				t.Fatalf("%T:\n got %v\nwant %v", m, back, m)
			}
		}
	}
}

// TestCodecUnknownType: a type the codec does not know is refused, not
// sent as something else.
func TestCodecUnknownType(t *testing.T) {
	if _, ok := Marshal(&pb.MemberListRequest{}); ok {
		t.Fatal("a MemberListRequest was encoded")
	}
	if err := Unmarshal(nil, &struct{}{}); err == nil {
		t.Fatal("an unknown answer type was decoded")
	}
}

// TestCodecCopies: decoded bytes do not share the buffer they were read
// from, which the transport reuses.
func TestCodecCopies(t *testing.T) {
	b, _ := proto.Marshal(&pb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte("key"), Value: []byte("value")}}})
	var got RangeResponse
	if err := Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	clear(b)
	if string(got.Kvs[0].Key) != "key" || string(got.Kvs[0].Value) != "value" {
		t.Fatalf("decoded bytes alias the input: %q %q", got.Kvs[0].Key, got.Kvs[0].Value)
	}
}

// dropUnknown drops the unknown fields of m and its messages, which the
// codec does not keep (nothing reads them).
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.IsList() && f.Kind() == protoreflect.MessageKind:
			for i := range v.List().Len() {
				dropUnknown(v.List().Get(i).Message())
			}
		case !f.IsList() && f.Kind() == protoreflect.MessageKind:
			dropUnknown(v.Message())
		}
		return true
	})
}

// FuzzCodecUnmarshal: on any bytes the codec's decoding agrees with the
// protobuf runtime's: both fail, or both give equal messages but for the
// unknown fields, which the codec skips; never a panic.
func FuzzCodecUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, m := range responses() {
		fill(r, m.ProtoReflect(), 3)
		b, _ := proto.Marshal(m)
		f.Add(uint8(i), b)
	}
	f.Add(uint8(1), []byte{0x1a, 0x02, 0x22, 0x00})       // a nested transaction
	f.Add(uint8(5), []byte{0x12, 0x02, 0xff, 0xfe})       // a version that is not UTF-8
	f.Add(uint8(0), []byte{0x0c})                         // an end group without a start
	f.Add(uint8(1), bytes.Repeat([]byte{0x1a, 0x7f}, 64)) // truncated
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		types := responses()
		m := types[int(which)%len(types)]
		want := m.ProtoReflect().New().Interface()
		werr := proto.Unmarshal(data, want)
		got := ours(t, m.ProtoReflect().New().Interface())
		gerr := Unmarshal(data, got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%T: protobuf says %v, the codec %v", m, werr, gerr)
		}
		dropUnknown(want.ProtoReflect())
		if werr == nil && !proto.Equal(theirs(t, got, m.ProtoReflect().New().Interface()), want) {
			t.Fatalf("%T:\n got %v\nwant %v", m, got, want)
		}
	})
}
