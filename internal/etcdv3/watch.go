package clientv3

import (
	"context"
	"io"

	pb "github.com/crongate/crongate/internal/etcdpb"
)

// WatchResponse is what a watch reports: events, or its creation (with
// WithCreatedNotify), or its end (Err).
type WatchResponse struct {
	Header          pb.ResponseHeader
	Events          []*Event
	CompactRevision int64
	Canceled        bool
	Created         bool
	cancelReason    string
	closeErr        error
}

// Event is a change of a key.
type Event = pb.Event

// WatchChan delivers a watch's responses; it is closed when the watch
// ends: its context ended, or after a response whose Err is not nil.
type WatchChan <-chan WatchResponse

// Err is why the watch ended, nil while it goes on.
func (wr *WatchResponse) Err() error {
	switch {
	case wr.closeErr != nil:
		return wr.closeErr
	case wr.CompactRevision != 0:
		return ErrCompacted
	case wr.Canceled:
		if wr.cancelReason != "" {
			return EtcdError{code: FailedPrecondition, desc: wr.cancelReason}
		}
		return ErrFutureRev
	}
	return nil
}

// Watch watches key (a range, with WithPrefix or WithRange) from now, or
// from WithRev's revision, on a stream of its own. Unlike the official
// client, a watch whose stream breaks is not started again elsewhere: it
// ends with an error, and the caller decides.
func (c *Client) Watch(ctx context.Context, key string, opts ...OpOption) WatchChan {
	var o op
	o.apply(key, opts)
	cr := &pb.WatchCreateRequest{Key: []byte(key), RangeEnd: o.end, StartRevision: o.rev, PrevKv: o.prevKV}
	if o.filterPut {
		cr.Filters = []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NOPUT}
	}
	msg, _ := pb.Marshal(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: cr}})
	ch := make(chan WatchResponse, 1)
	go c.watch(ctx, frame(msg), o.createdNotif, ch)
	return ch
}

func (c *Client) watch(ctx context.Context, create []byte, notify bool, ch chan<- WatchResponse) {
	defer close(ch)
	fail := func(err error) {
		if ctx.Err() == nil {
			select {
			case ch <- WatchResponse{closeErr: err}:
			case <-ctx.Done():
			}
		}
	}
	cn, cc, err := c.pick(ctx, "")
	if err != nil {
		fail(err)
		return
	}
	// The stream's request side stays open until the watch ends; then
	// the stream is reset.
	st, err := cc.open(ctx, "/etcdserverpb.Watch/Watch", c.headers(ctx, "/etcdserverpb.Watch/Watch"), create, false)
	if err != nil {
		fail(streamError(ctx, cn, err))
		return
	}
	defer st.close()
	hdr, err := st.awaitHeader()
	if err != nil {
		fail(streamError(ctx, cn, err))
		return
	}
	if err := checkHeaders(hdr, cn); err != nil {
		fail(err)
		return
	}
	r := &frameReader{r: st}
	for {
		data, err := r.next()
		if err != nil {
			if err == io.EOF {
				err = answerStatus(hdr, st.Trailer())
				if err == nil {
					err = unavailable("%s: the watch stream ended", cn.ep)
				}
			} else {
				err = streamError(ctx, cn, err)
			}
			fail(err)
			return
		}
		var m pb.WatchResponse
		if err := pb.Unmarshal(data, &m); err != nil {
			fail(unavailable("%s: %v", cn.ep, err))
			return
		}
		wr := WatchResponse{Events: m.Events, CompactRevision: m.CompactRevision, Canceled: m.Canceled,
			Created: m.Created, cancelReason: m.CancelReason}
		if m.Header != nil {
			wr.Header = *m.Header
		}
		if m.Created && !notify && len(m.Events) == 0 && !m.Canceled {
			continue
		}
		select {
		case ch <- wr:
		case <-ctx.Done():
			return
		}
		if wr.Err() != nil {
			return
		}
	}
}
