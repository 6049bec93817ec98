package etcdclient

import (
	"bytes"
	"context"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/crongate/crongate/internal/etcdpb"
	lite "github.com/crongate/crongate/internal/etcdv3"
)

// sentTxn is a pb.KVClient that keeps the transaction clientv3 sends.
type sentTxn struct {
	pb.KVClient
	got *pb.TxnRequest
}

func (s *sentTxn) Txn(ctx context.Context, r *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	s.got = r
	return &pb.TxnResponse{}, nil
}

// TestTxnMatchesClientv3: every comparison and request Txn builds is
// sent as the bytes of the message the official client sends for the
// same transaction.
func TestTxnMatchesClientv3(t *testing.T) {
	const lease = lite.LeaseID(0x1234abcd)
	for _, c := range []struct {
		name string
		ours *Txn
		cv3  func(clientv3.Txn) clientv3.Txn
	}{
		{"lock", new(Txn).If(CreateIs("/p/a", 0), CreateIs("/p/b", 0)).
			Then(Put("/p/a", "v", lease), Put("/p/b", "w", lease), Delete("/p/queue/1")).
			Else(Get("/p/a"), Get("/p/b")),
			func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.CreateRevision("/p/a"), "=", 0), clientv3.Compare(clientv3.CreateRevision("/p/b"), "=", 0)).
					Then(clientv3.OpPut("/p/a", "v", clientv3.WithLease(clientv3.LeaseID(lease))), clientv3.OpPut("/p/b", "w", clientv3.WithLease(clientv3.LeaseID(lease))), clientv3.OpDelete("/p/queue/1")).
					Else(clientv3.OpGet("/p/a"), clientv3.OpGet("/p/b"))
			}},
		{"revisions and leases", new(Txn).If(CreateIs("/q", 42), ModIs("/r", 7), LeaseIs("/s", lease)).
			Then(PutKeepLease("/q", "x"), Put("/t", "", lite.NoLease)),
			func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.CreateRevision("/q"), "=", 42), clientv3.Compare(clientv3.ModRevision("/r"), "=", 7), clientv3.Compare(clientv3.LeaseValue("/s"), "=", clientv3.LeaseID(lease))).
					Then(clientv3.OpPut("/q", "x", clientv3.WithIgnoreLease()), clientv3.OpPut("/t", ""))
			}},
		{"nested, prefix", new(Txn).If(CreateIs("/pool/0", 0)).
			Then(new(Txn).If(CreateIs("/pool/1", 0)).Then(Put("/pool/1", "h", lease)).Else(GetPrefix("/pool/")).Op()),
			func(x clientv3.Txn) clientv3.Txn {
				return x.If(clientv3.Compare(clientv3.CreateRevision("/pool/0"), "=", 0)).
					Then(clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("/pool/1"), "=", 0)},
						[]clientv3.Op{clientv3.OpPut("/pool/1", "h", clientv3.WithLease(clientv3.LeaseID(lease)))},
						[]clientv3.Op{clientv3.OpGet("/pool/", clientv3.WithPrefix())}))
			}},
	} {
		s := &sentTxn{}
		if _, err := c.cv3(clientv3.NewKVFromKVClient(s, nil).Txn(context.Background())).Commit(); err != nil {
			t.Fatal(err)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(s.got)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := etcdpb.Marshal(c.ours.Request())
		if !bytes.Equal(got, want) {
			t.Errorf("%s: clientv3 sends\n%v\nTxn builds %x", c.name, s.got, got)
		}
	}
}
