// Package etcdpb holds the messages of etcd's v3 API that withlock-etcd
// and cron-gate-etcd exchange with a cluster, as plain Go structs, and
// their protobuf encoding, written out by hand (codec.go).
//
// Why not etcd's generated packages: linking them (with gRPC and the
// protobuf runtime) cost every call of a short-lived binary about 8 ms of
// start-up — package inits that register descriptors, and the pages of a
// binary four times larger — more than the lock's requests themselves.
// The names, fields and field numbers are etcd's (api/etcdserverpb
// rpc.proto, api/mvccpb kv.proto); the encoding is byte for byte the
// protobuf runtime's (TestCodecMatchesProtobuf compares them).
package etcdpb

// ResponseHeader is the header of every answer.
type ResponseHeader struct {
	ClusterId uint64
	MemberId  uint64
	Revision  int64
	RaftTerm  uint64
}

// KeyValue is a key as etcd stores it (mvccpb.KeyValue).
type KeyValue struct {
	Key            []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
	Value          []byte
	Lease          int64
}

// Event_EventType is what an event did to its key.
type Event_EventType int32

const (
	PUT    Event_EventType = 0
	DELETE Event_EventType = 1
)

// Event is a change a watch reports (mvccpb.Event).
type Event struct {
	Type   Event_EventType
	Kv     *KeyValue
	PrevKv *KeyValue
}

type RangeRequest struct {
	Key               []byte
	RangeEnd          []byte
	Limit             int64
	Revision          int64
	SortOrder         int32
	SortTarget        int32
	Serializable      bool
	KeysOnly          bool
	CountOnly         bool
	MinModRevision    int64
	MaxModRevision    int64
	MinCreateRevision int64
	MaxCreateRevision int64
}

type RangeResponse struct {
	Header *ResponseHeader
	Kvs    []*KeyValue
	More   bool
	Count  int64
}

type PutRequest struct {
	Key         []byte
	Value       []byte
	Lease       int64
	PrevKv      bool
	IgnoreValue bool
	IgnoreLease bool
}

type PutResponse struct {
	Header *ResponseHeader
	PrevKv *KeyValue
}

type DeleteRangeRequest struct {
	Key      []byte
	RangeEnd []byte
	PrevKv   bool
}

type DeleteRangeResponse struct {
	Header  *ResponseHeader
	Deleted int64
	PrevKvs []*KeyValue
}

// RequestOp is one request of a transaction: one of RequestOp_Request*.
type RequestOp struct {
	Request isRequestOp_Request
}

type isRequestOp_Request interface{ isRequestOp_Request() }

type RequestOp_RequestRange struct{ RequestRange *RangeRequest }
type RequestOp_RequestPut struct{ RequestPut *PutRequest }
type RequestOp_RequestDeleteRange struct{ RequestDeleteRange *DeleteRangeRequest }
type RequestOp_RequestTxn struct{ RequestTxn *TxnRequest }

func (*RequestOp_RequestRange) isRequestOp_Request()       {}
func (*RequestOp_RequestPut) isRequestOp_Request()         {}
func (*RequestOp_RequestDeleteRange) isRequestOp_Request() {}
func (*RequestOp_RequestTxn) isRequestOp_Request()         {}

// ResponseOp is one answer of a transaction: one of ResponseOp_Response*.
type ResponseOp struct {
	Response isResponseOp_Response
}

type isResponseOp_Response interface{ isResponseOp_Response() }

type ResponseOp_ResponseRange struct{ ResponseRange *RangeResponse }
type ResponseOp_ResponsePut struct{ ResponsePut *PutResponse }
type ResponseOp_ResponseDeleteRange struct{ ResponseDeleteRange *DeleteRangeResponse }
type ResponseOp_ResponseTxn struct{ ResponseTxn *TxnResponse }

func (*ResponseOp_ResponseRange) isResponseOp_Response()       {}
func (*ResponseOp_ResponsePut) isResponseOp_Response()         {}
func (*ResponseOp_ResponseDeleteRange) isResponseOp_Response() {}
func (*ResponseOp_ResponseTxn) isResponseOp_Response()         {}

// GetResponseRange is the answer's range, nil if it is not one.
func (m *ResponseOp) GetResponseRange() *RangeResponse {
	if r, ok := m.Response.(*ResponseOp_ResponseRange); ok {
		return r.ResponseRange
	}
	return nil
}

// GetResponseTxn is the answer's nested transaction, nil if it is not one.
func (m *ResponseOp) GetResponseTxn() *TxnResponse {
	if r, ok := m.Response.(*ResponseOp_ResponseTxn); ok {
		return r.ResponseTxn
	}
	return nil
}

type Compare_CompareResult int32

const (
	Compare_EQUAL     Compare_CompareResult = 0
	Compare_GREATER   Compare_CompareResult = 1
	Compare_LESS      Compare_CompareResult = 2
	Compare_NOT_EQUAL Compare_CompareResult = 3
)

type Compare_CompareTarget int32

const (
	Compare_VERSION Compare_CompareTarget = 0
	Compare_CREATE  Compare_CompareTarget = 1
	Compare_MOD     Compare_CompareTarget = 2
	Compare_VALUE   Compare_CompareTarget = 3
	Compare_LEASE   Compare_CompareTarget = 4
)

// Compare is a comparison of a transaction.
type Compare struct {
	Result      Compare_CompareResult
	Target      Compare_CompareTarget
	Key         []byte
	TargetUnion isCompare_TargetUnion
	RangeEnd    []byte
}

type isCompare_TargetUnion interface{ isCompare_TargetUnion() }

type Compare_Version struct{ Version int64 }
type Compare_CreateRevision struct{ CreateRevision int64 }
type Compare_ModRevision struct{ ModRevision int64 }
type Compare_Value struct{ Value []byte }
type Compare_Lease struct{ Lease int64 }

func (*Compare_Version) isCompare_TargetUnion()        {}
func (*Compare_CreateRevision) isCompare_TargetUnion() {}
func (*Compare_ModRevision) isCompare_TargetUnion()    {}
func (*Compare_Value) isCompare_TargetUnion()          {}
func (*Compare_Lease) isCompare_TargetUnion()          {}

type TxnRequest struct {
	Compare []*Compare
	Success []*RequestOp
	Failure []*RequestOp
}

type TxnResponse struct {
	Header    *ResponseHeader
	Succeeded bool
	Responses []*ResponseOp
}

type LeaseGrantRequest struct {
	TTL int64
	ID  int64
}

type LeaseGrantResponse struct {
	Header *ResponseHeader
	ID     int64
	TTL    int64
	Error  string
}

type LeaseRevokeRequest struct{ ID int64 }

type LeaseRevokeResponse struct{ Header *ResponseHeader }

type LeaseKeepAliveRequest struct{ ID int64 }

type LeaseKeepAliveResponse struct {
	Header *ResponseHeader
	ID     int64
	TTL    int64
}

type StatusRequest struct{}

type DowngradeInfo struct {
	Enabled       bool
	TargetVersion string
}

type StatusResponse struct {
	Header           *ResponseHeader
	Version          string
	DbSize           int64
	Leader           uint64
	RaftIndex        uint64
	RaftTerm         uint64
	RaftAppliedIndex uint64
	Errors           []string
	DbSizeInUse      int64
	IsLearner        bool
	StorageVersion   string
	DbSizeQuota      int64
	DowngradeInfo    *DowngradeInfo
}

type WatchCreateRequest_FilterType int32

const (
	WatchCreateRequest_NOPUT    WatchCreateRequest_FilterType = 0
	WatchCreateRequest_NODELETE WatchCreateRequest_FilterType = 1
)

type WatchCreateRequest struct {
	Key            []byte
	RangeEnd       []byte
	StartRevision  int64
	ProgressNotify bool
	Filters        []WatchCreateRequest_FilterType
	PrevKv         bool
	WatchId        int64
	Fragment       bool
}

type WatchCancelRequest struct{ WatchId int64 }

type WatchProgressRequest struct{}

// WatchRequest is one of WatchRequest_*.
type WatchRequest struct {
	RequestUnion isWatchRequest_RequestUnion
}

type isWatchRequest_RequestUnion interface{ isWatchRequest_RequestUnion() }

type WatchRequest_CreateRequest struct{ CreateRequest *WatchCreateRequest }
type WatchRequest_CancelRequest struct{ CancelRequest *WatchCancelRequest }
type WatchRequest_ProgressRequest struct{ ProgressRequest *WatchProgressRequest }

func (*WatchRequest_CreateRequest) isWatchRequest_RequestUnion()   {}
func (*WatchRequest_CancelRequest) isWatchRequest_RequestUnion()   {}
func (*WatchRequest_ProgressRequest) isWatchRequest_RequestUnion() {}

type WatchResponse struct {
	Header          *ResponseHeader
	WatchId         int64
	Created         bool
	Canceled        bool
	CompactRevision int64
	CancelReason    string
	Fragment        bool
	Events          []*Event
}

type AuthenticateRequest struct {
	Name     string
	Password string
}

type AuthenticateResponse struct {
	Header *ResponseHeader
	Token  string
}

// Getters that, like protobuf's, accept a nil message.

func (m *RangeResponse) GetKvs() []*KeyValue {
	if m == nil {
		return nil
	}
	return m.Kvs
}
