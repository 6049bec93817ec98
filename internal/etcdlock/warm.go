//go:build linux

package etcdlock

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// warmCodec makes the protobuf runtime build its tables for every message
// a call sends or reads, in the background (New starts it). The runtime
// builds a type's tables the first time it encodes or decodes one — about
// a tenth of a short call's CPU, measured with perf — and would otherwise
// do it on the call's path, between sending a request and reading its
// answer; here it is done while the call waits for the network.
func warmCodec() {
	kv := &mvccpb.KeyValue{Key: []byte("k"), Value: []byte("v"), CreateRevision: 1, Lease: 1}
	hdr := &etcdserverpb.ResponseHeader{Revision: 1}
	put := &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestPut{RequestPut: &etcdserverpb.PutRequest{Key: []byte("k"), Lease: 1}}}
	get := &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestRange{RequestRange: &etcdserverpb.RangeRequest{Key: []byte("k")}}}
	cmp := &etcdserverpb.Compare{Key: []byte("k"), TargetUnion: &etcdserverpb.Compare_CreateRevision{}}
	inner := &etcdserverpb.TxnRequest{Compare: []*etcdserverpb.Compare{cmp}, Success: []*etcdserverpb.RequestOp{put}, Failure: []*etcdserverpb.RequestOp{get}}
	txn := &etcdserverpb.TxnRequest{Compare: []*etcdserverpb.Compare{cmp}, Success: []*etcdserverpb.RequestOp{put,
		{Request: &etcdserverpb.RequestOp_RequestTxn{RequestTxn: inner}}}, Failure: []*etcdserverpb.RequestOp{get}}
	rng := &etcdserverpb.ResponseOp{Response: &etcdserverpb.ResponseOp_ResponseRange{ResponseRange: &etcdserverpb.RangeResponse{Header: hdr, Kvs: []*mvccpb.KeyValue{kv}}}}
	innerResp := &etcdserverpb.TxnResponse{Header: hdr, Responses: []*etcdserverpb.ResponseOp{rng}}
	txnResp := &etcdserverpb.TxnResponse{Header: hdr, Succeeded: true, Responses: []*etcdserverpb.ResponseOp{
		{Response: &etcdserverpb.ResponseOp_ResponsePut{ResponsePut: &etcdserverpb.PutResponse{Header: hdr}}},
		{Response: &etcdserverpb.ResponseOp_ResponseTxn{ResponseTxn: innerResp}}, rng}}
	for _, m := range []proto.Message{
		&etcdserverpb.LeaseGrantRequest{TTL: 1}, &etcdserverpb.LeaseGrantResponse{Header: hdr, ID: 1},
		txn, txnResp,
		&etcdserverpb.LeaseRevokeRequest{ID: 1}, &etcdserverpb.LeaseRevokeResponse{Header: hdr},
		&etcdserverpb.LeaseKeepAliveRequest{ID: 1}, &etcdserverpb.LeaseKeepAliveResponse{Header: hdr, ID: 1},
		&etcdserverpb.StatusRequest{}, &etcdserverpb.StatusResponse{Header: hdr, Version: "3"},
		&etcdserverpb.WatchRequest{RequestUnion: &etcdserverpb.WatchRequest_CreateRequest{CreateRequest: &etcdserverpb.WatchCreateRequest{Key: []byte("k")}}},
		&etcdserverpb.WatchResponse{Header: hdr, Events: []*mvccpb.Event{{Kv: kv}}},
	} {
		b, err := proto.Marshal(m)
		if err == nil {
			proto.Unmarshal(b, m.ProtoReflect().New().Interface())
		}
	}
}
