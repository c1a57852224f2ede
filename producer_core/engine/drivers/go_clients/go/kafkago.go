package main

// segmentio/kafka-go: one asynchronous kafka.Writer, its defaults unless a setting says
// otherwise. kafka-go batches per partition (BatchTimeout, BatchSize, BatchBytes) and has
// no idempotent producer: enable.idempotence=true is refused, and results say it was off.

import (
	"context"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

type kafkaGo struct {
	d       *driver
	w       *kafkago.Writer
	pending sync.WaitGroup
}

// manualBalancer sends each message to the partition kbatch's workload chose.
type manualBalancer struct{}

func (manualBalancer) Balance(msg kafkago.Message, partitions ...int) int {
	return int(msg.WriterData.(*message).partition)
}

func newKafkaGo(d *driver, settings map[string]string, bootstrap []string,
	dial *dialer) (producer, error) {
	s := &settingsOf{client: "kafka-go", values: settings}
	transport := &kafkago.Transport{Dial: dial.DialContext}
	w := &kafkago.Writer{Addr: kafkago.TCP(bootstrap...), Transport: transport, Async: true}
	if d.generating == nil { // kbatch's workload chose each partition
		w.Balancer = manualBalancer{}
	}
	if v, ok := s.millis("linger.ms"); ok {
		w.BatchTimeout = v
	}
	if v, ok := s.integer("batch.size"); ok {
		w.BatchBytes = int64(v)
	}
	if v, ok := s.acks(); ok {
		w.RequiredAcks = map[int]kafkago.RequiredAcks{
			0: kafkago.RequireNone, 1: kafkago.RequireOne, -1: kafkago.RequireAll}[v]
	}
	if v, ok := s.boolean("enable.idempotence"); ok && v && s.err == nil {
		s.err = &configError{"kafka-go has no idempotent producer (enable.idempotence=true)"}
	}
	if v, ok := s.choice("compression.type", "none", "gzip", "snappy", "lz4", "zstd"); ok {
		w.Compression = map[string]kafkago.Compression{"none": 0, "gzip": kafkago.Gzip,
			"snappy": kafkago.Snappy, "lz4": kafkago.Lz4, "zstd": kafkago.Zstd}[v]
	}
	if v, ok := s.integer("retries"); ok {
		w.MaxAttempts = v + 1
	}
	if v, ok := s.millis("retry.backoff.ms"); ok {
		w.WriteBackoffMin = v
	}
	if v, ok := s.take("client.id"); ok {
		transport.ClientID = v
	}
	if s.err != nil {
		return nil, s.err
	}
	out := &kafkaGo{d: d, w: w}
	w.Completion = func(messages []kafkago.Message, err error) {
		for i := range messages {
			msg := &messages[i]
			offset := msg.Offset
			if err != nil {
				offset = -1
			}
			d.settle(msg.WriterData.(*message), int32(msg.Partition), offset, err)
			out.pending.Done()
		}
	}
	return out, nil
}

func (k *kafkaGo) send(m *message) {
	msg := kafkago.Message{Topic: k.d.topics[m.topic], Key: m.key, Value: m.value,
		Time: m.timestamp, WriterData: m}
	for _, h := range m.headers {
		msg.Headers = append(msg.Headers, kafkago.Header{Key: string(h[0]), Value: h[1]})
	}
	k.pending.Add(1)
	if err := k.w.WriteMessages(context.Background(), msg); err != nil {
		k.d.settle(m, m.partition, -1, err) // refused at once, not through Completion
		k.pending.Done()
	}
}

// flush waits for every outcome: kafka-go's asynchronous writer has no flush of its own.
func (k *kafkaGo) flush() { k.pending.Wait() }

func (k *kafkaGo) close() { _ = k.w.Close() }

func (k *kafkaGo) idempotence() map[string]any {
	return map[string]any{"enabled": false, "why": "kafka-go has no idempotent producer"}
}
