package main

// franz-go (github.com/twmb/franz-go/pkg/kgo): one kgo.Client, its defaults unless a
// setting says otherwise. Its OnBrokerWrite hook counts Produce requests too, kept beside
// the wire count as a cross-check (producer_metrics.hook_produce_requests).

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

type franz struct {
	d     *driver
	cl    *kgo.Client
	idem  bool
	hooks *franzHooks
}

type franzHooks struct{ produce atomic.Int64 }

// OnBrokerWrite is kgo.HookBrokerWrite: key 0 is Produce.
func (h *franzHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration,
	err error) {
	if key == 0 && err == nil {
		h.produce.Add(1)
	}
}

func newFranz(d *driver, settings map[string]string, bootstrap []string,
	dial *dialer) (producer, error) {
	s := &settingsOf{client: "franz-go", values: settings}
	hooks := &franzHooks{}
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap...),
		kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			return dial.DialContext(ctx, network, host)
		}),
		kgo.WithHooks(hooks),
		kgo.MaxVersions(apiVersionsV4()),
	}
	if d.generating == nil { // kbatch's workload chose each partition
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if os.Getenv("KBATCH_GO_DEBUG") != "" { // the client's own log, for diagnosis
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	if v, ok := s.millis("linger.ms"); ok {
		opts = append(opts, kgo.ProducerLinger(v))
	}
	if v, ok := s.integer("batch.size"); ok {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(v)))
	}
	if v, ok := s.acks(); ok {
		opts = append(opts, kgo.RequiredAcks(map[int]kgo.Acks{
			0: kgo.NoAck(), 1: kgo.LeaderAck(), -1: kgo.AllISRAcks()}[v]))
	}
	idem := true
	if v, ok := s.boolean("enable.idempotence"); ok && !v {
		opts = append(opts, kgo.DisableIdempotentWrite())
		idem = false
	}
	if v, ok := s.choice("compression.type", "none", "gzip", "snappy", "lz4", "zstd"); ok {
		opts = append(opts, kgo.ProducerBatchCompression(map[string]kgo.CompressionCodec{
			"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(),
			"zstd": kgo.ZstdCompression()}[v]))
	}
	if v, ok := s.integer("max.in.flight.requests.per.connection"); ok {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(v))
	}
	if v, ok := s.millis("request.timeout.ms"); ok {
		opts = append(opts, kgo.ProduceRequestTimeout(v))
	}
	if v, ok := s.millis("delivery.timeout.ms"); ok {
		opts = append(opts, kgo.RecordDeliveryTimeout(v))
	}
	if v, ok := s.integer("retries"); ok {
		opts = append(opts, kgo.RecordRetries(v))
	}
	if v, ok := s.millis("retry.backoff.ms"); ok {
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return v }))
	}
	if v, ok := s.integer("max.request.size"); ok {
		opts = append(opts, kgo.BrokerMaxWriteBytes(int32(v)))
	}
	if v, ok := s.integer("buffer.memory"); ok {
		opts = append(opts, kgo.MaxBufferedBytes(v))
	}
	if v, ok := s.take("client.id"); ok {
		opts = append(opts, kgo.ClientID(v))
	}
	if s.err != nil {
		return nil, s.err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, &configError{"franz-go: " + err.Error()}
	}
	return &franz{d: d, cl: cl, idem: idem, hooks: hooks}, nil
}

func (f *franz) send(m *message) {
	rec := &kgo.Record{Topic: f.d.topics[m.topic], Partition: m.partition, Key: m.key,
		Value: m.value, Timestamp: m.timestamp}
	for _, h := range m.headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: string(h[0]), Value: h[1]})
	}
	f.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		f.d.settle(m, r.Partition, r.Offset, err)
	})
}

func (f *franz) flush() {
	_ = f.cl.Flush(context.Background())
	f.d.mu.Lock()
	f.d.counters["hook_produce_requests"] = f.hooks.produce.Load()
	f.d.mu.Unlock()
}

func (f *franz) close() { f.cl.Close() }

func (f *franz) idempotence() map[string]any {
	if !f.idem {
		return map[string]any{"enabled": false}
	}
	out := map[string]any{"enabled": true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if id, epoch, err := f.cl.ProducerID(ctx); err == nil && id >= 0 {
		out["producer_id"], out["producer_epoch"] = id, epoch
	}
	return out
}

// apiVersionsV4 is franz-go's own version table with ApiVersions capped at v4: v5 names the
// cluster and node it expects (KIP-1242), and the embedded Tansu broker closes the
// connection on those fields. Nothing a producer batches or sends depends on it.
func apiVersionsV4() *kversion.Versions {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(18, 4)
	return versions
}
