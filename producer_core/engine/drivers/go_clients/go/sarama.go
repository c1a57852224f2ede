package main

// IBM/sarama: one AsyncProducer, its defaults unless a setting says otherwise. Sarama
// batches per broker (Producer.Flush.*), so linger.ms is Flush.Frequency and batch.size is
// Flush.Bytes (a per-broker threshold, not Java's per-partition batch).

import (
	"sync"

	"github.com/IBM/sarama"
)

type saramaProducer struct {
	d       *driver
	p       sarama.AsyncProducer
	idem    bool
	pending sync.WaitGroup
	done    sync.WaitGroup
}

func newSarama(d *driver, settings map[string]string, bootstrap []string,
	dial *dialer) (producer, error) {
	s := &settingsOf{client: "sarama", values: settings}
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	if d.generating == nil { // kbatch's workload chose each partition
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
	}
	cfg.Net.Proxy.Enable = true
	cfg.Net.Proxy.Dialer = dial
	if v, ok := s.millis("linger.ms"); ok {
		cfg.Producer.Flush.Frequency = v
	}
	if v, ok := s.integer("batch.size"); ok {
		cfg.Producer.Flush.Bytes = v
	}
	if v, ok := s.acks(); ok {
		cfg.Producer.RequiredAcks = map[int]sarama.RequiredAcks{
			0: sarama.NoResponse, 1: sarama.WaitForLocal, -1: sarama.WaitForAll}[v]
	}
	inFlight, inFlightSet := s.integer("max.in.flight.requests.per.connection")
	if v, ok := s.boolean("enable.idempotence"); ok {
		cfg.Producer.Idempotent = v
		if v && !inFlightSet {
			cfg.Net.MaxOpenRequests = 1 // sarama's idempotent producer requires it
		}
	}
	if inFlightSet {
		cfg.Net.MaxOpenRequests = inFlight
	}
	if v, ok := s.choice("compression.type", "none", "gzip", "snappy", "lz4", "zstd"); ok {
		cfg.Producer.Compression = map[string]sarama.CompressionCodec{
			"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
			"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
			"zstd": sarama.CompressionZSTD}[v]
	}
	if v, ok := s.millis("request.timeout.ms"); ok {
		cfg.Producer.Timeout = v
	}
	if v, ok := s.integer("retries"); ok {
		cfg.Producer.Retry.Max = v
	}
	if v, ok := s.millis("retry.backoff.ms"); ok {
		cfg.Producer.Retry.Backoff = v
	}
	if v, ok := s.integer("max.request.size"); ok {
		cfg.Producer.MaxMessageBytes = v
	}
	if v, ok := s.take("client.id"); ok {
		cfg.ClientID = v
	}
	if s.err != nil {
		return nil, s.err
	}
	if err := cfg.Validate(); err != nil {
		return nil, &configError{"sarama: " + err.Error()}
	}
	p, err := sarama.NewAsyncProducer(bootstrap, cfg)
	if err != nil {
		if _, isConfig := errorsAs[sarama.ConfigurationError](err); isConfig {
			return nil, &configError{"sarama: " + err.Error()}
		}
		return nil, err
	}
	out := &saramaProducer{d: d, p: p, idem: cfg.Producer.Idempotent}
	out.done.Add(2)
	go func() {
		defer out.done.Done()
		for msg := range p.Successes() {
			d.settle(msg.Metadata.(*message), msg.Partition, msg.Offset, nil)
			out.pending.Done()
		}
	}()
	go func() {
		defer out.done.Done()
		for e := range p.Errors() {
			d.settle(e.Msg.Metadata.(*message), e.Msg.Partition, -1, e.Err)
			out.pending.Done()
		}
	}()
	return out, nil
}

func (s *saramaProducer) send(m *message) {
	msg := &sarama.ProducerMessage{Topic: s.d.topics[m.topic], Partition: m.partition,
		Value: sarama.ByteEncoder(m.value), Timestamp: m.timestamp, Metadata: m}
	if m.key != nil {
		msg.Key = sarama.ByteEncoder(m.key)
	}
	for _, h := range m.headers {
		msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: h[0], Value: h[1]})
	}
	s.pending.Add(1)
	s.p.Input() <- msg
}

// flush waits for every outcome: sarama has no flush of its own.
func (s *saramaProducer) flush() { s.pending.Wait() }

func (s *saramaProducer) close() {
	_ = s.p.Close()
	s.done.Wait()
}

func (s *saramaProducer) idempotence() map[string]any {
	return map[string]any{"enabled": s.idem}
}
