package main

// Produce requests counted on the wire: every connection a client dials is wrapped, its
// outgoing bytes are cut into Kafka request frames, and each Produce request (api key 0)
// is parsed for its partitions, records and bytes; the responses' correlation ids time
// each request's round trip. One code path for all three clients, and the count is what
// the broker receives, not what a client believes it sent.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type partProduce struct {
	topic     string
	partition int32
	records   int
	bytes     int
}

type produceRequest struct {
	ns         int64
	broker     int
	acks       int16
	unreadable bool
	records    int
	bytes      int
	parts      []partProduce
}

// dialer dials the brokers for a client and wraps every connection.
type dialer struct {
	d        *driver
	nodes    map[string]int // host:port -> node id
	ports    map[string]int // port -> node id (a client may dial another spelling of a host)
	topicIDs map[[16]byte]string
	net      net.Dialer
	warned   atomic.Bool
}

// newDialer reads the cluster's brokers and topic ids once, with a client of its own (not
// the measured one), so request lines carry node ids and Produce v13's topic ids map to
// names.
func newDialer(d *driver, bootstrap []string, topics []string) (*dialer, error) {
	out := &dialer{d: d, nodes: map[string]int{}, ports: map[string]int{},
		topicIDs: map[[16]byte]string{}, net: net.Dialer{Timeout: 10 * time.Second}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, b := range resp.Brokers {
		port := strconv.Itoa(int(b.Port))
		out.nodes[net.JoinHostPort(b.Host, port)] = int(b.NodeID)
		out.ports[port] = int(b.NodeID)
	}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out.topicIDs[t.TopicID] = *t.Topic
		}
	}
	return out, nil
}

func (w *dialer) node(addr string) int {
	if node, ok := w.nodes[addr]; ok {
		return node
	}
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if node, ok := w.ports[port]; ok {
			return node
		}
	}
	return -1
}

// DialContext dials one broker connection, wrapped.
func (w *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := w.net.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, w: w, broker: w.node(addr), sent: map[int32]int64{}}, nil
}

// Dial is golang.org/x/net/proxy.Dialer's method (sarama's Net.Proxy.Dialer).
func (w *dialer) Dial(network, addr string) (net.Conn, error) {
	return w.DialContext(context.Background(), network, addr)
}

type countingConn struct {
	net.Conn
	w      *dialer
	broker int

	wmu  sync.Mutex
	wbuf []byte

	rmu  sync.Mutex
	rbuf []byte // a response frame's first bytes, until its correlation id is read
	skip int    // bytes of the current response frame still to pass

	smu  sync.Mutex
	sent map[int32]int64 // correlation id -> ns, Produce requests awaiting a response
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n, err := c.Conn.Write(p)
	c.wbuf = append(c.wbuf, p[:n]...)
	for len(c.wbuf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.wbuf))
		if len(c.wbuf) < 4+size {
			break
		}
		c.request(c.wbuf[4 : 4+size])
		c.wbuf = c.wbuf[4+size:]
	}
	if len(c.wbuf) == 0 {
		c.wbuf = nil // let a large request's buffer go
	}
	return n, err
}

func (c *countingConn) request(frame []byte) {
	if len(frame) < 8 || binary.BigEndian.Uint16(frame) != 0 { // api key 0: Produce
		return
	}
	r, err := parseProduce(frame, c.w.topicIDs)
	if err != nil { // unreadable: still a Produce request, counted without contents
		if !c.w.warned.Swap(true) {
			fmt.Fprintf(os.Stderr, "Produce v%d unreadable: %v\n",
				binary.BigEndian.Uint16(frame[2:]), err)
		}
		r = &produceRequest{acks: r.acks, unreadable: true}
	}
	r.ns = nowNs()
	r.broker = c.broker
	if r.acks != 0 {
		c.smu.Lock()
		c.sent[int32(binary.BigEndian.Uint32(frame[4:]))] = r.ns
		c.smu.Unlock()
	}
	c.w.d.onRequest(r)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rmu.Lock()
	defer c.rmu.Unlock()
	data := p[:n]
	for len(data) > 0 {
		if c.skip > 0 {
			step := min(c.skip, len(data))
			c.skip -= step
			data = data[step:]
			continue
		}
		need := 8 - len(c.rbuf)
		step := min(need, len(data))
		c.rbuf = append(c.rbuf, data[:step]...)
		data = data[step:]
		if len(c.rbuf) == 8 {
			size := int(binary.BigEndian.Uint32(c.rbuf))
			correlation := int32(binary.BigEndian.Uint32(c.rbuf[4:]))
			c.skip = size - 4
			c.rbuf = c.rbuf[:0]
			c.smu.Lock()
			start, ok := c.sent[correlation]
			delete(c.sent, correlation)
			c.smu.Unlock()
			if ok {
				c.w.d.onResponse(start)
			}
		}
	}
	return n, err
}

// reader walks a request's bytes.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("short request")

// take returns the next n bytes; n -1 is a null field (nothing to take).
func (r *reader) take(n int) []byte {
	if n == -1 {
		return nil
	}
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) tags() {
	for i := r.uvarint(); i > 0 && r.err == nil; i-- {
		r.uvarint()
		r.take(r.uvarint())
	}
}

// length of a (compact) string, bytes or array; -1 is null.
func (r *reader) length(flexible bool, wide bool) int {
	if flexible {
		return r.uvarint() - 1
	}
	if wide {
		return int(r.int32())
	}
	return int(r.int16())
}

// parseProduce reads a Produce request frame (after its size): versions 3-8, flexible
// 9-12, and 13 with topic ids.
func parseProduce(frame []byte, topicIDs map[[16]byte]string) (*produceRequest, error) {
	r := &reader{b: frame}
	r.int16() // api key
	version := r.int16()
	r.int32()                      // correlation id
	r.take(r.length(false, false)) // client id (a plain nullable string in every header)
	flexible := version >= 9
	if flexible {
		r.tags()
	}
	req := &produceRequest{}
	r.take(r.length(flexible, false)) // transactional id
	req.acks = r.int16()
	r.int32() // timeout
	topics := r.length(flexible, true)
	for t := 0; t < topics && r.err == nil; t++ {
		var name string
		if version >= 13 {
			var id [16]byte
			copy(id[:], r.take(16))
			name = topicIDs[id]
		} else {
			name = string(r.take(r.length(flexible, false)))
		}
		partitions := r.length(flexible, true)
		for p := 0; p < partitions && r.err == nil; p++ {
			part := partProduce{topic: name, partition: r.int32()}
			records := r.take(r.length(flexible, true))
			part.bytes = len(records)
			part.records = countRecords(records)
			req.parts = append(req.parts, part)
			req.records += part.records
			req.bytes += part.bytes
			if flexible {
				r.tags()
			}
		}
		if flexible {
			r.tags()
		}
	}
	return req, r.err
}

// countRecords adds up the record counts of the record batches (magic 2) in a records
// field: the count is the int32 at byte 57 of each batch.
func countRecords(records []byte) int {
	total := 0
	for len(records) >= 61 {
		size := 12 + int(binary.BigEndian.Uint32(records[8:]))
		total += int(binary.BigEndian.Uint32(records[57:]))
		if size > len(records) {
			break
		}
		records = records[size:]
	}
	return total
}
