package etcdpb

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Marshal encodes a request: the bytes the protobuf runtime writes for
// it (TestCodecMatchesProtobuf). ok is false for a type that is not one.
func Marshal(v any) (b []byte, ok bool) {
	switch m := v.(type) {
	case *RangeRequest:
		b = appendRange(nil, m)
	case *TxnRequest:
		b = appendTxn(nil, m)
	case *LeaseGrantRequest:
		b = appendVarint(appendVarint(nil, 1, uint64(m.TTL)), 2, uint64(m.ID))
	case *LeaseRevokeRequest:
		b = appendVarint(nil, 1, uint64(m.ID))
	case *LeaseKeepAliveRequest:
		b = appendVarint(nil, 1, uint64(m.ID))
	case *StatusRequest:
		b = []byte{}
	case *WatchRequest:
		b = appendWatch(nil, m)
	case *AuthenticateRequest:
		b = appendBytes(appendBytes(nil, 1, []byte(m.Name)), 2, []byte(m.Password))
	case *PutRequest:
		b = appendPut(nil, m)
	case *DeleteRangeRequest:
		b = appendDelete(nil, m)
	default:
		return nil, false
	}
	return b, true
}

// Unmarshal decodes an answer into v, as the protobuf runtime does, field
// for field: unknown fields and fields of an unexpected wire type are
// skipped, a field seen twice merges (messages) or wins (scalars),
// strings must be UTF-8. Bytes are copied: data may be reused after.
func Unmarshal(data []byte, v any) error {
	var dec func(*decoder, []byte)
	switch m := v.(type) {
	case *RangeResponse:
		dec = func(d *decoder, b []byte) { d.rangeResp(b, m) }
	case *TxnResponse:
		dec = func(d *decoder, b []byte) { d.txnResp(b, m) }
	case *LeaseGrantResponse:
		dec = func(d *decoder, b []byte) { d.leaseGrantResp(b, m) }
	case *LeaseRevokeResponse:
		dec = func(d *decoder, b []byte) { d.headerOnly(b, &m.Header) }
	case *LeaseKeepAliveResponse:
		dec = func(d *decoder, b []byte) { d.keepAliveResp(b, m) }
	case *StatusResponse:
		dec = func(d *decoder, b []byte) { d.statusResp(b, m) }
	case *WatchResponse:
		dec = func(d *decoder, b []byte) { d.watchResp(b, m) }
	case *AuthenticateResponse:
		dec = func(d *decoder, b []byte) { d.authResp(b, m) }
	case *PutResponse:
		dec = func(d *decoder, b []byte) { d.putResp(b, m) }
	case *DeleteRangeResponse:
		dec = func(d *decoder, b []byte) { d.deleteResp(b, m) }
	default:
		return fmt.Errorf("etcdpb: cannot decode a %T", v)
	}
	d := &decoder{}
	dec(d, data)
	if d.err != nil {
		return fmt.Errorf("cannot decode the answer: %v", d.err)
	}
	return nil
}

// Encoding. Zero scalars and empty byte strings are left out, as proto3
// does; a oneof member is written whatever its value, as protobuf does.

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, num, 1)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendField(b, num, v)
}

// appendField writes a length-delimited field even when it is empty (a
// oneof member, an element of a repeated message field).
func appendField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendRange(b []byte, m *RangeRequest) []byte {
	b = appendBytes(b, 1, m.Key)
	b = appendBytes(b, 2, m.RangeEnd)
	b = appendVarint(b, 3, uint64(m.Limit))
	b = appendVarint(b, 4, uint64(m.Revision))
	b = appendVarint(b, 5, uint64(m.SortOrder))
	b = appendVarint(b, 6, uint64(m.SortTarget))
	b = appendBool(b, 7, m.Serializable)
	b = appendBool(b, 8, m.KeysOnly)
	b = appendBool(b, 9, m.CountOnly)
	b = appendVarint(b, 10, uint64(m.MinModRevision))
	b = appendVarint(b, 11, uint64(m.MaxModRevision))
	b = appendVarint(b, 12, uint64(m.MinCreateRevision))
	return appendVarint(b, 13, uint64(m.MaxCreateRevision))
}

func appendPut(b []byte, m *PutRequest) []byte {
	b = appendBytes(b, 1, m.Key)
	b = appendBytes(b, 2, m.Value)
	b = appendVarint(b, 3, uint64(m.Lease))
	b = appendBool(b, 4, m.PrevKv)
	b = appendBool(b, 5, m.IgnoreValue)
	return appendBool(b, 6, m.IgnoreLease)
}

func appendDelete(b []byte, m *DeleteRangeRequest) []byte {
	b = appendBytes(b, 1, m.Key)
	b = appendBytes(b, 2, m.RangeEnd)
	return appendBool(b, 3, m.PrevKv)
}

func appendCompare(b []byte, m *Compare) []byte {
	b = appendVarint(b, 1, uint64(m.Result))
	b = appendVarint(b, 2, uint64(m.Target))
	b = appendBytes(b, 3, m.Key)
	// The protobuf runtime writes a oneof after the other fields.
	b = appendBytes(b, 64, m.RangeEnd)
	oneof := func(num protowire.Number, v int64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), uint64(v))
	}
	switch u := m.TargetUnion.(type) {
	case *Compare_Version:
		b = oneof(4, u.Version)
	case *Compare_CreateRevision:
		b = oneof(5, u.CreateRevision)
	case *Compare_ModRevision:
		b = oneof(6, u.ModRevision)
	case *Compare_Value:
		b = appendField(b, 7, u.Value)
	case *Compare_Lease:
		b = oneof(8, u.Lease)
	}
	return b
}

func appendRequestOp(b []byte, m *RequestOp) []byte {
	switch r := m.Request.(type) {
	case *RequestOp_RequestRange:
		b = appendMessage(b, 1, r.RequestRange != nil, func(b []byte) []byte { return appendRange(b, r.RequestRange) })
	case *RequestOp_RequestPut:
		b = appendMessage(b, 2, r.RequestPut != nil, func(b []byte) []byte { return appendPut(b, r.RequestPut) })
	case *RequestOp_RequestDeleteRange:
		b = appendMessage(b, 3, r.RequestDeleteRange != nil, func(b []byte) []byte { return appendDelete(b, r.RequestDeleteRange) })
	case *RequestOp_RequestTxn:
		b = appendMessage(b, 4, r.RequestTxn != nil, func(b []byte) []byte { return appendTxn(b, r.RequestTxn) })
	}
	return b
}

// appendMessage writes a message field: its body, encoded by body, after
// its tag and length. A nil message (present false) is written as an
// empty one, as protobuf writes a oneof member or repeated element.
func appendMessage(b []byte, num protowire.Number, present bool, body func([]byte) []byte) []byte {
	var inner []byte
	if present {
		inner = body(nil)
	}
	return appendField(b, num, inner)
}

func appendTxn(b []byte, m *TxnRequest) []byte {
	for _, c := range m.Compare {
		b = appendMessage(b, 1, c != nil, func(b []byte) []byte { return appendCompare(b, c) })
	}
	for _, op := range m.Success {
		b = appendMessage(b, 2, op != nil, func(b []byte) []byte { return appendRequestOp(b, op) })
	}
	for _, op := range m.Failure {
		b = appendMessage(b, 3, op != nil, func(b []byte) []byte { return appendRequestOp(b, op) })
	}
	return b
}

func appendWatch(b []byte, m *WatchRequest) []byte {
	switch r := m.RequestUnion.(type) {
	case *WatchRequest_CreateRequest:
		b = appendMessage(b, 1, r.CreateRequest != nil, func(b []byte) []byte {
			c := r.CreateRequest
			b = appendBytes(b, 1, c.Key)
			b = appendBytes(b, 2, c.RangeEnd)
			b = appendVarint(b, 3, uint64(c.StartRevision))
			b = appendBool(b, 4, c.ProgressNotify)
			if len(c.Filters) > 0 { // packed
				var p []byte
				for _, f := range c.Filters {
					p = protowire.AppendVarint(p, uint64(f))
				}
				b = appendField(b, 5, p)
			}
			b = appendBool(b, 6, c.PrevKv)
			b = appendVarint(b, 7, uint64(c.WatchId))
			return appendBool(b, 8, c.Fragment)
		})
	case *WatchRequest_CancelRequest:
		b = appendMessage(b, 2, r.CancelRequest != nil, func(b []byte) []byte {
			return appendVarint(b, 1, uint64(r.CancelRequest.WatchId))
		})
	case *WatchRequest_ProgressRequest:
		b = appendField(b, 3, nil)
	}
	return b
}

// Decoding.

// maxDepth bounds the nesting of transactions in an answer, as the
// protobuf runtime's recursion limit does.
const maxDepth = 10000

var (
	errDepth = errors.New("exceeded maximum recursion depth")
	errUTF8  = errors.New("string field contains invalid UTF-8")
)

// decoder holds the first error of a decoding, and the nesting depth.
type decoder struct {
	err   error
	depth int
}

// fields calls f for each field of the message in b, with the field's
// number, wire type and value (for varints, the value in v; for
// length-delimited fields, the bytes in p). A field f does not take (it
// returns false: an unknown number, or an unexpected wire type) is
// skipped.
func (d *decoder) fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool) {
	if d.depth++; d.depth > maxDepth {
		d.fail(errDepth)
		return
	}
	defer func() { d.depth-- }()
	for len(b) > 0 && d.err == nil {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			d.fail(protowire.ParseError(n))
			return
		}
		if num > protowire.MaxValidNumber {
			d.fail(errors.New("invalid field number"))
			return
		}
		b = b[n:]
		var v uint64
		var p []byte
		m := -1
		switch typ {
		case protowire.VarintType:
			v, m = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			p, m = protowire.ConsumeBytes(b)
		}
		if m >= 0 && f(num, typ, v, p) {
			b = b[m:]
			continue
		}
		// Not taken: skipped whole, as an unknown field.
		m = protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			d.fail(protowire.ParseError(m))
			return
		}
		b = b[m:]
	}
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func clone(p []byte) []byte { return append([]byte{}, p...) }

func (d *decoder) str(p []byte) string {
	if !utf8.Valid(p) {
		d.fail(errUTF8)
	}
	return string(p)
}

func (d *decoder) header(p []byte, h **ResponseHeader) {
	if *h == nil {
		*h = &ResponseHeader{}
	}
	m := *h
	d.fields(p, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) bool {
		if typ != protowire.VarintType {
			return false
		}
		switch num {
		case 1:
			m.ClusterId = v
		case 2:
			m.MemberId = v
		case 3:
			m.Revision = int64(v)
		case 4:
			m.RaftTerm = v
		default:
			return false
		}
		return true
	})
}

func (d *decoder) headerOnly(b []byte, h **ResponseHeader) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) bool {
		if num == 1 && typ == protowire.BytesType {
			d.header(p, h)
			return true
		}
		return false
	})
}

func (d *decoder) kv(p []byte, kv **KeyValue) {
	if *kv == nil {
		*kv = &KeyValue{}
	}
	m := *kv
	d.fields(p, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			m.Key = clone(p)
		case num == 5 && typ == protowire.BytesType:
			m.Value = clone(p)
		case typ != protowire.VarintType:
			return false
		case num == 2:
			m.CreateRevision = int64(v)
		case num == 3:
			m.ModRevision = int64(v)
		case num == 4:
			m.Version = int64(v)
		case num == 6:
			m.Lease = int64(v)
		default:
			return false
		}
		return true
	})
}

// kvs appends a KeyValue decoded from p.
func (d *decoder) kvs(p []byte, list *[]*KeyValue) {
	var kv *KeyValue
	d.kv(p, &kv)
	*list = append(*list, kv)
}

func (d *decoder) rangeResp(b []byte, m *RangeResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.BytesType:
			d.kvs(p, &m.Kvs)
		case num == 3 && typ == protowire.VarintType:
			m.More = v != 0
		case num == 4 && typ == protowire.VarintType:
			m.Count = int64(v)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) putResp(b []byte, m *PutResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.BytesType:
			d.kv(p, &m.PrevKv)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) deleteResp(b []byte, m *DeleteRangeResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.VarintType:
			m.Deleted = int64(v)
		case num == 3 && typ == protowire.BytesType:
			d.kvs(p, &m.PrevKvs)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) txnResp(b []byte, m *TxnResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.VarintType:
			m.Succeeded = v != 0
		case num == 3 && typ == protowire.BytesType:
			op := &ResponseOp{}
			d.responseOp(p, op)
			m.Responses = append(m.Responses, op)
		default:
			return false
		}
		return true
	})
}

// responseOp decodes a ResponseOp: a oneof of four messages. A member seen
// again merges into the one there; another member replaces it.
func (d *decoder) responseOp(b []byte, m *ResponseOp) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) bool {
		if typ != protowire.BytesType {
			return false
		}
		switch num {
		case 1:
			r, ok := m.Response.(*ResponseOp_ResponseRange)
			if !ok || r.ResponseRange == nil {
				r = &ResponseOp_ResponseRange{ResponseRange: &RangeResponse{}}
				m.Response = r
			}
			d.rangeResp(p, r.ResponseRange)
		case 2:
			r, ok := m.Response.(*ResponseOp_ResponsePut)
			if !ok || r.ResponsePut == nil {
				r = &ResponseOp_ResponsePut{ResponsePut: &PutResponse{}}
				m.Response = r
			}
			d.putResp(p, r.ResponsePut)
		case 3:
			r, ok := m.Response.(*ResponseOp_ResponseDeleteRange)
			if !ok || r.ResponseDeleteRange == nil {
				r = &ResponseOp_ResponseDeleteRange{ResponseDeleteRange: &DeleteRangeResponse{}}
				m.Response = r
			}
			d.deleteResp(p, r.ResponseDeleteRange)
		case 4:
			r, ok := m.Response.(*ResponseOp_ResponseTxn)
			if !ok || r.ResponseTxn == nil {
				r = &ResponseOp_ResponseTxn{ResponseTxn: &TxnResponse{}}
				m.Response = r
			}
			d.txnResp(p, r.ResponseTxn)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) leaseGrantResp(b []byte, m *LeaseGrantResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.VarintType:
			m.ID = int64(v)
		case num == 3 && typ == protowire.VarintType:
			m.TTL = int64(v)
		case num == 4 && typ == protowire.BytesType:
			m.Error = d.str(p)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) keepAliveResp(b []byte, m *LeaseKeepAliveResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.VarintType:
			m.ID = int64(v)
		case num == 3 && typ == protowire.VarintType:
			m.TTL = int64(v)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) statusResp(b []byte, m *StatusResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		if typ == protowire.BytesType {
			switch num {
			case 1:
				d.header(p, &m.Header)
			case 2:
				m.Version = d.str(p)
			case 8:
				m.Errors = append(m.Errors, d.str(p))
			case 11:
				m.StorageVersion = d.str(p)
			case 13:
				if m.DowngradeInfo == nil {
					m.DowngradeInfo = &DowngradeInfo{}
				}
				di := m.DowngradeInfo
				d.fields(p, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
					switch {
					case num == 1 && typ == protowire.VarintType:
						di.Enabled = v != 0
					case num == 2 && typ == protowire.BytesType:
						di.TargetVersion = d.str(p)
					default:
						return false
					}
					return true
				})
			default:
				return false
			}
			return true
		}
		switch num {
		case 3:
			m.DbSize = int64(v)
		case 4:
			m.Leader = v
		case 5:
			m.RaftIndex = v
		case 6:
			m.RaftTerm = v
		case 7:
			m.RaftAppliedIndex = v
		case 9:
			m.DbSizeInUse = int64(v)
		case 10:
			m.IsLearner = v != 0
		case 12:
			m.DbSizeQuota = int64(v)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) watchResp(b []byte, m *WatchResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
		if typ == protowire.BytesType {
			switch num {
			case 1:
				d.header(p, &m.Header)
			case 6:
				m.CancelReason = d.str(p)
			case 11:
				ev := &Event{}
				d.fields(p, func(num protowire.Number, typ protowire.Type, v uint64, p []byte) bool {
					switch {
					case num == 1 && typ == protowire.VarintType:
						ev.Type = Event_EventType(int32(v))
					case num == 2 && typ == protowire.BytesType:
						d.kv(p, &ev.Kv)
					case num == 3 && typ == protowire.BytesType:
						d.kv(p, &ev.PrevKv)
					default:
						return false
					}
					return true
				})
				m.Events = append(m.Events, ev)
			default:
				return false
			}
			return true
		}
		switch num {
		case 2:
			m.WatchId = int64(v)
		case 3:
			m.Created = v != 0
		case 4:
			m.Canceled = v != 0
		case 5:
			m.CompactRevision = int64(v)
		case 7:
			m.Fragment = v != 0
		default:
			return false
		}
		return true
	})
}

func (d *decoder) authResp(b []byte, m *AuthenticateResponse) {
	d.fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, p []byte) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			d.header(p, &m.Header)
		case num == 2 && typ == protowire.BytesType:
			m.Token = d.str(p)
		default:
			return false
		}
		return true
	})
}
