// kbatch's driver for Go's Kafka producers (modes franz-go, sarama, kafka-go). It speaks
// kbatch's client-driver pipe protocol, version 1 (docs/architecture/client-drivers.md,
// producer_core/engine/drivers/client_pipe), exactly as the Java driver does:
//
// stdin (big-endian): int32 length + UTF-8 header in java.util.Properties form (kbatch.*
// keys for the driver, every other key a Kafka producer setting by its Kafka name), then
// frames: 'P' ping; 'M' one message; 'E' end of messages (flush, report, exit 0). End of
// input without 'E': the run was stopped, drop what is unsent, exit 3.
// stdout: one JSON object per line: hello, pong, progress, request, delivery,
// config_error, result.
//
// The client is the program's one argument. Produce requests are counted on the wire: every
// connection the client dials is wrapped (wire.go) and each Produce request it writes is
// parsed for its partitions, records and bytes, so the count is the broker's, whichever
// client wrote it.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	protocolVersion = 1
	lowestUs        = 1
	highestUs       = 3_600_000_000
	digits          = 3
)

// clientModules are the Go modules whose version a client reports in hello.
var clientModules = map[string]string{
	"franz-go": "github.com/twmb/franz-go",
	"sarama":   "github.com/IBM/sarama",
	"kafka-go": "github.com/segmentio/kafka-go",
}

var base = time.Now()

// nowNs is the driver's monotonic clock, the clock of 'M' frames' intended times.
func nowNs() int64 { return int64(time.Since(base)) }

// message is one 'M' frame.
type message struct {
	topic      int
	partition  int32
	intendedNs int64
	record     bool
	id         int64
	timestamp  time.Time
	key        []byte
	value      []byte
	headers    [][2][]byte
	position   int64 // the message's position among those sent to its partition
}

// producer is one client's producer behind the protocol.
type producer interface {
	// send hands one message to the client; it may block (the client's back-pressure).
	send(m *message)
	// flush waits until every message sent has its outcome.
	flush()
	// close releases the client after flush.
	close()
	// idempotence is what the client ran with, as a JSON object.
	idempotence() map[string]any
}

// driver holds the outcomes, histograms and output shared by every client.
type driver struct {
	out      *bufio.Writer
	outMu    sync.Mutex
	topics   []string
	byName   map[string]int
	client   string
	acksZero bool
	deliver  bool
	// generating: the driver's own generator (generate.go) makes the messages; outcomes
	// are counted only, and the client partitions by its own default.
	generating *generateSpec

	acked, failed, unacked, unknown, submitted atomic.Int64
	lastAckNs, firstSendNs                     atomic.Int64
	requests                                   atomic.Int64

	mu             sync.Mutex
	failedReasons  map[string]int64
	unknownReasons map[string]int64
	byNode         map[int]int64
	topicAcked     []int64
	topicFailed    []int64
	topicUnacked   []int64
	topicUnknown   []int64
	latency        []*hdr.Histogram
	rtt            *hdr.Histogram
	written        map[int64]int64 // partition key -> records seen in Produce requests
	positions      map[int64]int64 // partition key -> messages handed to the client
	counters       map[string]int64
}

func newDriver() *driver {
	return &driver{
		out:            bufio.NewWriterSize(os.Stdout, 1<<16),
		byName:         map[string]int{},
		failedReasons:  map[string]int64{},
		unknownReasons: map[string]int64{},
		byNode:         map[int]int64{},
		rtt:            hdr.New(lowestUs, highestUs, digits),
		written:        map[int64]int64{},
		positions:      map[int64]int64{},
		counters:       map[string]int64{},
	}
}

func (d *driver) emit(item map[string]any, flush bool) {
	line, err := json.Marshal(item)
	if err != nil {
		line = []byte(fmt.Sprintf(`{"type":"error","message":%q}`, err.Error()))
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	d.out.Write(line)
	d.out.WriteByte('\n')
	if flush {
		if d.out.Flush() != nil {
			os.Exit(4) // kbatch went away
		}
	}
}

func partitionKey(topic int, partition int32) int64 {
	return int64(topic)<<32 | int64(uint32(partition))
}

func clampUs(us int64) int64 {
	return max(lowestUs, min(highestUs, us))
}

// settle records one message's outcome: err nil is acknowledged (or, with acks=0,
// written and unacknowledged); an error after which the message may be in the topic (a
// timeout or a lost connection once its partition's records were in a Produce request) is
// unknown; any other error is failed.
func (d *driver) settle(m *message, partition int32, offset int64, err error) {
	now := nowNs()
	for {
		last := d.lastAckNs.Load()
		if now <= last || d.lastAckNs.CompareAndSwap(last, now) {
			break
		}
	}
	if d.generating != nil {
		d.settleGenerated(err)
		return
	}
	if err != nil {
		reason, mayBeWritten := reasonOf(err)
		d.mu.Lock()
		if d.failedReasons[reason]+d.unknownReasons[reason] == 0 { // the full text, once
			fmt.Fprintf(os.Stderr, "%s: %v\n", reason, err)
		}
		if mayBeWritten && m.position < d.written[partitionKey(m.topic, m.partition)] {
			d.unknown.Add(1)
			d.topicUnknown[m.topic]++
			d.unknownReasons[reason]++
		} else {
			d.failed.Add(1)
			d.topicFailed[m.topic]++
			d.failedReasons[reason]++
		}
		d.mu.Unlock()
		return
	}
	if d.acksZero {
		d.unacked.Add(1)
		d.mu.Lock()
		d.topicUnacked[m.topic]++
		d.mu.Unlock()
		return
	}
	d.acked.Add(1)
	d.mu.Lock()
	d.topicAcked[m.topic]++
	if m.record {
		d.latency[m.topic].RecordValue(clampUs((now - m.intendedNs) / 1000))
	}
	d.mu.Unlock()
	if d.deliver {
		d.emit(map[string]any{"type": "delivery", "topic": m.topic, "partition": partition,
			"offset": offset, "id": m.id}, false)
	}
}

// onRequest is called by the wire counter for every Produce request written.
func (d *driver) onRequest(r *produceRequest) {
	d.requests.Add(1)
	topics := map[string][2]int64{}
	d.mu.Lock()
	d.byNode[r.broker]++
	for _, p := range r.parts {
		if index, ok := d.byName[p.topic]; ok {
			d.written[partitionKey(index, p.partition)] += int64(p.records)
		}
		t := topics[p.topic]
		topics[p.topic] = [2]int64{t[0] + int64(p.records), t[1] + int64(p.bytes)}
	}
	d.mu.Unlock()
	partitions := len(r.parts)
	if r.unreadable {
		partitions = -1 // kbatch then reports totals only
	}
	d.emit(map[string]any{"type": "request", "ns": r.ns, "broker": r.broker,
		"partitions": partitions, "records": r.records, "bytes": r.bytes,
		"topics": topics}, false)
}

func (d *driver) onResponse(sentNs int64) {
	d.mu.Lock()
	d.rtt.RecordValue(clampUs((nowNs() - sentNs) / 1000))
	d.mu.Unlock()
}

func encode(h *hdr.Histogram) string {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return ""
	}
	return string(b)
}

func clientVersion(client string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == clientModules[client] {
			return dep.Version
		}
	}
	return "unknown"
}

// configError is a setting the client lacks or a value it cannot take.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func readBytes(in *bufio.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(in, b)
	return b, err
}

// parseProperties reads java.util.Properties text as kbatch writes it (key=value lines,
// backslash escapes).
func parseProperties(text string) map[string]string {
	props := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var key, value strings.Builder
		target := &key
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c == '\\' && i+1 < len(line) {
				i++
				switch line[i] {
				case 'n':
					target.WriteByte('\n')
				case 'r':
					target.WriteByte('\r')
				case 't':
					target.WriteByte('\t')
				case 'u':
					if i+4 < len(line) {
						if r, err := strconv.ParseUint(line[i+1:i+5], 16, 32); err == nil {
							target.WriteRune(rune(r))
							i += 4
							continue
						}
					}
					target.WriteByte('u')
				default:
					target.WriteByte(line[i])
				}
				continue
			}
			if target == &key && (c == '=' || c == ':') {
				target = &value
				continue
			}
			target.WriteByte(c)
		}
		props[key.String()] = value.String()
	}
	return props
}

func (d *driver) readMessage(in *bufio.Reader) (*message, error) {
	var fixed [2 + 4 + 8 + 1 + 8 + 8 + 4]byte
	if _, err := io.ReadFull(in, fixed[:]); err != nil {
		return nil, err
	}
	be := binary.BigEndian
	m := &message{
		topic:      int(be.Uint16(fixed[0:])),
		partition:  int32(be.Uint32(fixed[2:])),
		intendedNs: int64(be.Uint64(fixed[6:])),
		record:     fixed[14] != 0,
		id:         int64(be.Uint64(fixed[15:])),
		timestamp:  time.UnixMilli(int64(be.Uint64(fixed[23:]))),
	}
	keyLength := int32(be.Uint32(fixed[31:]))
	var err error
	if keyLength >= 0 {
		if m.key, err = readBytes(in, int(keyLength)); err != nil {
			return nil, err
		}
	}
	var length [4]byte
	if _, err = io.ReadFull(in, length[:]); err != nil {
		return nil, err
	}
	if m.value, err = readBytes(in, int(be.Uint32(length[:]))); err != nil {
		return nil, err
	}
	var count [2]byte
	if _, err = io.ReadFull(in, count[:]); err != nil {
		return nil, err
	}
	for i := 0; i < int(be.Uint16(count[:])); i++ {
		if _, err = io.ReadFull(in, count[:]); err != nil {
			return nil, err
		}
		name, err := readBytes(in, int(be.Uint16(count[:])))
		if err != nil {
			return nil, err
		}
		if _, err = io.ReadFull(in, length[:]); err != nil {
			return nil, err
		}
		value, err := readBytes(in, int(be.Uint32(length[:])))
		if err != nil {
			return nil, err
		}
		m.headers = append(m.headers, [2][]byte{name, value})
	}
	return m, nil
}

func (d *driver) result(p producer) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	latency := make([]string, len(d.latency))
	for i, h := range d.latency {
		latency[i] = encode(h)
	}
	byNode := map[string]int64{}
	for node, n := range d.byNode {
		byNode[strconv.Itoa(node)] = n
	}
	var generated map[string]any
	if spec := d.generating; spec != nil { // counts only: all of it is the one topic's
		d.topicAcked[0], d.topicFailed[0] = d.acked.Load(), d.failed.Load()
		d.topicUnacked[0], d.topicUnknown[0] = d.unacked.Load(), d.unknown.Load()
		generated = map[string]any{"messages": spec.messages, "size": spec.size,
			"ids": spec.ids, "partitioner": defaultPartitioner[d.client],
			"first_send_ns": d.firstSendNs.Load()}
	}
	out := map[string]any{
		"type": "result", "acked": d.acked.Load(), "failed": d.failed.Load(),
		"unacked": d.unacked.Load(), "unknown": d.unknown.Load(),
		"submitted": d.submitted.Load(), "requests": d.requests.Load(),
		"last_ack_ns": d.lastAckNs.Load(), "interception": "wire",
		"idempotence": p.idempotence(), "failed_reasons": d.failedReasons,
		"unknown_reasons": d.unknownReasons, "requests_by_node": byNode,
		"topic_acked": d.topicAcked, "topic_failed": d.topicFailed,
		"topic_unacked": d.topicUnacked, "topic_unknown": d.topicUnknown,
		"producer_metrics": d.counters, "latency_us": latency, "rtt_us": encode(d.rtt),
	}
	if generated != nil {
		out["generated"] = generated
	}
	return out
}

// newProducer builds the named client's producer from Kafka-named settings; every setting
// it takes is deleted from settings, and what is left is refused by the caller.
func newProducer(client string, d *driver, settings map[string]string, bootstrap []string,
	dial *dialer) (producer, error) {
	switch client {
	case "franz-go":
		return newFranz(d, settings, bootstrap, dial)
	case "sarama":
		return newSarama(d, settings, bootstrap, dial)
	case "kafka-go":
		return newKafkaGo(d, settings, bootstrap, dial)
	}
	return nil, fmt.Errorf("unknown client %q", client)
}

func run(client string) int {
	d := newDriver()
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	d.emit(map[string]any{"type": "hello", "protocol": protocolVersion, "client": client,
		"client_version": clientVersion(client)}, true)
	var length [4]byte
	if _, err := io.ReadFull(in, length[:]); err != nil {
		return 3
	}
	text, err := readBytes(in, int(binary.BigEndian.Uint32(length[:])))
	if err != nil {
		return 3
	}
	header := parseProperties(string(text))
	if header["kbatch.protocol"] != strconv.Itoa(protocolVersion) {
		fmt.Fprintf(os.Stderr, "kbatch protocol %s is not this driver's %d\n",
			header["kbatch.protocol"], protocolVersion)
		return 5
	}
	d.topics = strings.Split(header["kbatch.topics"], ",")
	n := len(d.topics)
	d.topicAcked, d.topicFailed = make([]int64, n), make([]int64, n)
	d.topicUnacked, d.topicUnknown = make([]int64, n), make([]int64, n)
	d.latency = make([]*hdr.Histogram, n)
	for i, name := range d.topics {
		d.latency[i] = hdr.New(lowestUs, highestUs, digits)
		d.byName[name] = i
	}
	d.client = client
	d.deliver = header["kbatch.deliveries"] == "true"
	spec, specErr := generateSpecOf(header, n)
	if specErr != nil {
		d.emit(map[string]any{"type": "config_error", "message": specErr.Error()}, true)
		return 6
	}
	d.generating = spec
	if spec != nil {
		d.deliver = false // counts only
	}
	progressMs, _ := strconv.Atoi(header["kbatch.progress.ms"])
	if progressMs <= 0 {
		progressMs = 1000
	}
	settings := map[string]string{}
	for k, v := range header {
		if !strings.HasPrefix(k, "kbatch.") {
			settings[k] = v
		}
	}
	bootstrap := strings.Split(settings["bootstrap.servers"], ",")
	delete(settings, "bootstrap.servers")
	d.acksZero = strings.TrimSpace(settings["acks"]) == "0"
	dial, err := newDialer(d, bootstrap, d.topics)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metadata:", err)
		return 7
	}
	p, err := newProducer(client, d, settings, bootstrap, dial)
	if err == nil && len(settings) > 0 {
		names := make([]string, 0, len(settings))
		for k := range settings {
			names = append(names, k)
		}
		sort.Strings(names)
		err = &configError{fmt.Sprintf("%s has no setting for %s", client,
			strings.Join(names, ", "))}
	}
	if err != nil {
		d.emit(map[string]any{"type": "config_error", "message": err.Error()}, true)
		return 6
	}
	stop := make(chan struct{})
	go func() {
		ticker := time.NewTicker(time.Duration(progressMs) * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				d.emit(map[string]any{"type": "progress", "acked": d.acked.Load(),
					"failed": d.failed.Load(), "requests": d.requests.Load()}, true)
			}
		}
	}()
	defer close(stop)
	var generated chan struct{} // closed once every generated message is handed over
	if spec != nil {
		generated = make(chan struct{})
		go func() {
			defer close(generated)
			d.generate(p, spec)
		}()
	}
	for {
		kind, err := in.ReadByte()
		if err != nil { // kbatch stopped the run: drop what is unsent
			return 3
		}
		switch kind {
		case 'P':
			d.emit(map[string]any{"type": "pong", "ns": nowNs()}, true)
		case 'M':
			if spec != nil {
				fmt.Fprintln(os.Stderr, "an 'M' frame while the driver generates its own messages")
				return 5
			}
			m, err := d.readMessage(in)
			if err != nil {
				return 3
			}
			where := partitionKey(m.topic, m.partition)
			d.mu.Lock()
			m.position = d.positions[where]
			d.positions[where]++
			d.mu.Unlock()
			d.submitted.Add(1)
			p.send(m)
		case 'E':
			if generated != nil {
				<-generated
			}
			p.flush()
			d.emit(d.result(p), true)
			p.close()
			return 0
		default:
			fmt.Fprintf(os.Stderr, "unknown frame type %d\n", kind)
			return 5
		}
	}
}

func main() {
	if len(os.Args) != 2 || clientModules[os.Args[1]] == "" {
		fmt.Fprintln(os.Stderr, "usage: kbatch-go-driver franz-go|sarama|kafka-go")
		os.Exit(2)
	}
	code := run(os.Args[1])
	os.Stdout.Sync()
	os.Exit(code)
}

// errorsAs is errors.As for a target type, as a value.
func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
