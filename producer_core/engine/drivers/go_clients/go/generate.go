package main

// The driver's own generator (optional header keys kbatch.generate.*): the program makes
// N keyless values of S bytes itself and hands them to the client as fast as the client
// takes them, so a benchmark measures the client's own ceiling, as librdkafka's
// rdkafka_performance and Kafka's ProducerPerformance measure theirs, without kbatch's
// Python generator feeding it message by message. Per-message accounting is left out:
// no intended times, no latency histograms, no delivery lines; only the outcome counts
// (acknowledged, failed, unknown), the Produce requests counted on the wire, and the
// span from the first produce to the last acknowledgement (first_send_ns, last_ack_ns).
// Records go to partitions by the client's own default partitioner (keyless): franz-go's
// sticky UniformBytesPartitioner, sarama's random HashPartitioner, kafka-go's RoundRobin.

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// defaultPartitioner names each client's default partitioner for keyless records.
var defaultPartitioner = map[string]string{
	"franz-go": "UniformBytesPartitioner (sticky)",
	"sarama":   "HashPartitioner (random for keyless)",
	"kafka-go": "RoundRobin",
}

// generateSpec is what kbatch.generate.* asked for.
type generateSpec struct {
	messages int64
	size     int
	ids      bool // each value starts with its index (8 bytes, big-endian), for read-back
}

// generateSpecOf reads the kbatch.generate.* keys: nil without kbatch.generate.messages.
func generateSpecOf(header map[string]string, topics int) (*generateSpec, error) {
	raw, ok := header["kbatch.generate.messages"]
	if !ok {
		for k := range header {
			if strings.HasPrefix(k, "kbatch.generate.") {
				return nil, &configError{k + " needs kbatch.generate.messages"}
			}
		}
		return nil, nil
	}
	messages, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || messages < 1 {
		return nil, &configError{fmt.Sprintf(
			"kbatch.generate.messages must be a whole number of at least 1 (got %q)", raw)}
	}
	spec := &generateSpec{messages: messages, size: 100}
	if raw, ok := header["kbatch.generate.size"]; ok {
		size, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || size < 0 {
			return nil, &configError{fmt.Sprintf(
				"kbatch.generate.size must be a whole number of bytes, 0 or more (got %q)", raw)}
		}
		spec.size = size
	}
	switch raw := strings.TrimSpace(header["kbatch.generate.ids"]); raw {
	case "", "false":
	case "true":
		if spec.size < 8 {
			return nil, &configError{"kbatch.generate.ids needs kbatch.generate.size of 8 or more"}
		}
		spec.ids = true
	default:
		return nil, &configError{fmt.Sprintf(
			"kbatch.generate.ids must be true or false (got %q)", raw)}
	}
	if topics != 1 {
		return nil, &configError{fmt.Sprintf(
			"kbatch.generate.messages produces to one topic (kbatch.topics names %d)", topics)}
	}
	return spec, nil
}

// generate hands spec.messages values to the client, as fast as it takes them. Without
// ids every message shares one value (as ProducerPerformance shares one payload array).
func (d *driver) generate(p producer, spec *generateSpec) {
	shared := &message{topic: 0, partition: -1, value: make([]byte, spec.size)}
	for i := range shared.value {
		shared.value[i] = byte('a' + i%26)
	}
	d.firstSendNs.Store(nowNs())
	for i := int64(0); i < spec.messages; i++ {
		m := shared
		if spec.ids {
			value := make([]byte, spec.size)
			copy(value, shared.value)
			binary.BigEndian.PutUint64(value, uint64(i))
			m = &message{topic: 0, partition: -1, id: i, value: value}
		}
		d.submitted.Add(1)
		p.send(m)
	}
}

// settleGenerated counts one generated message's outcome: counts only. An error after
// which the message may be in the topic (a timeout, a lost connection) is unknown, any
// other failed: positions are not tracked in this mode.
func (d *driver) settleGenerated(err error) {
	if err == nil {
		if d.acksZero {
			d.unacked.Add(1)
		} else {
			d.acked.Add(1)
		}
		return
	}
	reason, mayBeWritten := reasonOf(err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedReasons[reason]+d.unknownReasons[reason] == 0 {
		fmt.Fprintf(os.Stderr, "%s: %v\n", reason, err)
	}
	if mayBeWritten {
		d.unknown.Add(1)
		d.unknownReasons[reason]++
	} else {
		d.failed.Add(1)
		d.failedReasons[reason]++
	}
}
