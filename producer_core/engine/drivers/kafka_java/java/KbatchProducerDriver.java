// kbatch's driver for the real Java producer (mode kafka-java). Protocol version 1, see
// producer_core/engine/drivers/kafka_java/protocol.py and docs/architecture/index.md, "The Java driver protocol".
//
// stdin (big-endian, java.io.DataInputStream): int length + UTF-8 header in
// java.util.Properties form (kbatch.* keys for the driver, every other key goes to
// KafkaProducer), then frames: 'P' ping; 'M' one message; 'E' end of messages.
// stdout: one JSON object per line: hello, pong, progress, request, delivery, result
// (with kbatch.trace=true also clock, drain_order, appends, node_busy, response and flush).
// Why the request interception: the client's metrics count every request (Metadata,
// ApiVersions, InitProducerId...) and only window-average records per request; wrapping the
// Sender's KafkaClient counts exactly the Produce requests it writes, with their partitions,
// records and bytes, and times their responses.
// Outcomes, as kbatch's engine counts them: acknowledged; sent_unacknowledged (acks=0: the
// callback comes when the request is written, there is no answer); unknown (a timeout or a
// lost connection after the message's batch was in a Produce request: it may be written);
// failed (everything else). Whether a batch was ever in a request is seen in the wrapped
// KafkaClient: per partition, the records of each batch met for the first time are added up,
// and a message is "sent" if its position in its partition is below that sum.

import java.io.BufferedInputStream;
import java.io.BufferedWriter;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.OutputStreamWriter;
import java.io.StringReader;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.ClientRequest;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.clients.KafkaClient;
import org.apache.kafka.clients.Metadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class KbatchProducerDriver {
    static final int PROTOCOL = 1;
    static final long LOWEST_US = 1, HIGHEST_US = 3_600_000_000L;
    static final int DIGITS = 3;

    private final BufferedWriter out =
        new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
    private final AtomicLong acked = new AtomicLong(), failed = new AtomicLong();
    private final AtomicLong unacked = new AtomicLong(), unknown = new AtomicLong();
    private final AtomicLong submitted = new AtomicLong();
    private final Map<String, Long> unknownReasons = new TreeMap<>();
    // per partition (topic index << 32 | partition): records of the batches seen in Produce
    // requests (sender thread), the last batches seen (to tell a retry from a new batch), and
    // how many messages were handed to send() (main thread)
    private final Map<Long, AtomicLong> sentRecords = new ConcurrentHashMap<>();
    private final Map<Long, ArrayDeque<Object>> seenBatches = new HashMap<>();
    private final Map<Long, long[]> positions = new HashMap<>();
    private final Map<String, Integer> topicIndex = new HashMap<>();
    static final int SEEN_BATCHES = 16;  // > max.in.flight batches of one partition
    private boolean acksZero;
    private volatile boolean answeredAcksZero;
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong lastAckNs = new AtomicLong();
    private final Map<String, Long> failedReasons = new TreeMap<>();
    private final Map<Integer, Long> requestsByNode = new TreeMap<>();
    private final Map<Integer, Long> sentAt = new ConcurrentHashMap<>();  // correlation id -> ns
    private final Histogram rtt = new Histogram(LOWEST_US, HIGHEST_US, DIGITS);
    private Histogram[] latency = new Histogram[0];
    private AtomicLongArray topicAcked = new AtomicLongArray(0), topicFailed = topicAcked;
    private AtomicLongArray topicUnacked = topicAcked, topicUnknown = topicAcked;
    private String[] topics = new String[0];
    private boolean deliveries;
    private String interception = "none";
    private String idempotence = "{\"unknown\":\"not read\"}";
    // kbatch.trace=true: each send()'s start and end, each Produce request's partitions,
    // records and Sender pass, each response's time (docs/guides/fidelity.md)
    private boolean trace;
    private final Map<Integer, Long> readyNs = new ConcurrentHashMap<>();  // node -> ns
    private final AtomicLong senderPasses = new AtomicLong();
    private volatile long passNs = -1;  // when the Sender's last poll returned: its pass began
    static final int TRACE_CHUNK = 4096;
    private long[] tracePre = new long[TRACE_CHUNK], tracePost = new long[TRACE_CHUNK];
    private long[] traceWait = new long[TRACE_CHUNK], traceMs = new long[TRACE_CHUNK];
    private Metric bufferPoolWait;  // bufferpool-wait-time-ns-total: send()'s waits for memory
    private int traced;
    private long traceFirst;

    synchronized void emit(String line, boolean flush) {
        try {
            out.write(line);
            out.write('\n');
            if (flush) out.flush();
        } catch (java.io.IOException e) {
            System.exit(4);  // kbatch went away
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : (s == null ? "null" : s).toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static long clampUs(long us) {
        return Math.max(LOWEST_US, Math.min(HIGHEST_US, us));
    }

    static String encode(Histogram h) {
        ByteBuffer buffer = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int length = h.encodeIntoCompressedByteBuffer(buffer);
        byte[] bytes = new byte[length];
        buffer.flip();
        buffer.get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    /** Counts each Produce request the Sender writes, and times its response. */
    final class Counting implements InvocationHandler {
        final KafkaClient inner;

        Counting(KafkaClient inner) { this.inner = inner; }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            if (method.getName().equals("send") && args.length == 2
                    && args[0] instanceof ClientRequest) {
                ClientRequest request = (ClientRequest) args[0];
                if (request.apiKey() == ApiKeys.PRODUCE) onProduce(request);
            } else if (trace && method.getName().equals("ready") && args.length == 2
                    && args[0] instanceof Node) {
                readyNs.put(((Node) args[0]).id(), System.nanoTime());
            }
            Object result;
            try {
                result = method.invoke(inner, args);
            } catch (InvocationTargetException e) {
                if (acksZero && method.getName().equals("poll")) answeredAcksZero(e.getCause());
                throw e.getCause();
            }
            if (trace && Boolean.FALSE.equals(result) && method.getName().equals("ready")
                    && args.length == 2 && args[0] instanceof Node) {
                // the Sender found the node ready by the accumulator but could not send to
                // it now (a connection not up yet, in-flight requests, a request not fully
                // written): it drains nothing for that node in this pass
                emit("{\"type\":\"node_busy\",\"node\":" + ((Node) args[0]).id()
                     + ",\"pass\":" + senderPasses.get() + "}", false);
            }
            if (method.getName().equals("poll") && result instanceof List) {
                long now = System.nanoTime();
                if (trace) senderPasses.incrementAndGet();
                for (Object item : (List<?>) result) {
                    ClientResponse response = (ClientResponse) item;
                    int correlation = response.requestHeader().correlationId();
                    Long start = sentAt.remove(correlation);
                    if (start != null) {
                        synchronized (rtt) { rtt.recordValue(clampUs((now - start) / 1000)); }
                        if (trace) {
                            emit("{\"type\":\"response\",\"corr\":" + correlation + ",\"ns\":"
                                 + now + ",\"disconnected\":" + response.wasDisconnected()
                                 + "}", false);
                        }
                    }
                }
                // the Sender's ready check comes after this (and after the lines above)
                if (trace) passNs = System.nanoTime();
            }
            return result;
        }
    }

    /** With acks=0 the client expects no Produce response. A broker that answers anyway
     *  (Tansu does) makes NetworkClient.poll throw, and the completions of the requests
     *  written in that poll are lost: their callbacks wait for delivery.timeout.ms and
     *  flush() hangs. Say so once; kbatch stops the run with that reason. */
    void answeredAcksZero(Throwable cause) {
        if (answeredAcksZero) return;
        answeredAcksZero = true;
        emit("{\"type\":\"acks0_answered\",\"message\":" + quote(String.valueOf(cause))
             + "}", true);
    }

    void onProduce(ClientRequest request) {
        long now = System.nanoTime();
        int partitions = 0, records = 0, bytes = 0;
        StringBuilder perTopic = new StringBuilder("{");  // topic -> [records, bytes]
        StringBuilder parts = new StringBuilder("[");  // trace: [topic, partition, records, retry]
        try {
            Field field = request.requestBuilder().getClass().getDeclaredField("data");
            field.setAccessible(true);
            ProduceRequestData data = (ProduceRequestData) field.get(request.requestBuilder());
            for (ProduceRequestData.TopicProduceData topic : data.topicData()) {
                int topicRecords = 0, topicBytes = 0;
                Integer index = topicIndex.get(topic.name());
                for (ProduceRequestData.PartitionProduceData p : topic.partitionData()) {
                    partitions++;
                    BaseRecords base = p.records();
                    if (base == null) continue;
                    topicBytes += base.sizeInBytes();
                    if (base instanceof MemoryRecords) {
                        int batchRecords = 0;
                        for (RecordBatch batch : ((MemoryRecords) base).batches()) {
                            Integer count = batch.countOrNull();
                            batchRecords += count == null ? 0 : count;
                        }
                        topicRecords += batchRecords;
                        boolean first = index != null
                            && seen(key(index, p.index()), base, batchRecords);
                        if (trace) {
                            if (parts.length() > 1) parts.append(',');
                            parts.append('[').append(index == null ? -1 : index).append(',')
                                 .append(p.index()).append(',').append(batchRecords)
                                 .append(',').append(first ? 0 : 1).append(']');
                        }
                    }
                }
                records += topicRecords;
                bytes += topicBytes;
                if (perTopic.length() > 1) perTopic.append(',');
                perTopic.append(quote(topic.name())).append(":[").append(topicRecords)
                        .append(',').append(topicBytes).append(']');
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            partitions = -1;  // unknown: Python then reports totals only
        }
        perTopic.append('}');
        int node = Integer.parseInt(request.destination());
        if (request.expectResponse()) sentAt.put(request.correlationId(), now);
        requests.incrementAndGet();
        synchronized (requestsByNode) { requestsByNode.merge(node, 1L, Long::sum); }
        String detail = "";
        if (trace) {
            Long ready = readyNs.get(node);
            detail = ",\"corr\":" + request.correlationId() + ",\"created_ms\":"
                + request.createdTimeMs() + ",\"ready_ns\":" + (ready == null ? -1 : ready)
                + ",\"pass\":" + senderPasses.get() + ",\"pass_ns\":" + passNs
                + ",\"parts\":" + parts.append(']');
        }
        emit("{\"type\":\"request\",\"ns\":" + now + ",\"broker\":" + node + ",\"partitions\":"
             + partitions + ",\"records\":" + records + ",\"bytes\":" + bytes + ",\"topics\":"
             + perTopic + detail + "}", false);
    }

    static long key(int topic, int partition) {
        return ((long) topic << 32) | (partition & 0xffffffffL);
    }

    /** A partition's batch is in a Produce request: its records count as sent, once.
     *  Returns false for a retry of a batch already counted. */
    boolean seen(long partition, Object records, int count) {
        synchronized (seenBatches) {
            ArrayDeque<Object> recent = seenBatches.computeIfAbsent(partition,
                                                                     k -> new ArrayDeque<>());
            for (Object r : recent) {
                if (r == records) return false;  // a retry of a batch already counted
            }
            recent.addLast(records);
            if (recent.size() > SEEN_BATCHES) recent.removeFirst();
        }
        sentRecords.computeIfAbsent(partition, k -> new AtomicLong()).addAndGet(count);
        return true;
    }

    /** Swap the Sender's KafkaClient for a counting proxy (before the first send). */
    void intercept(KafkaProducer<byte[], byte[]> producer) {
        try {
            Field senderField = KafkaProducer.class.getDeclaredField("sender");
            senderField.setAccessible(true);
            Object sender = senderField.get(producer);
            Field clientField = sender.getClass().getDeclaredField("client");
            clientField.setAccessible(true);
            KafkaClient inner = (KafkaClient) clientField.get(sender);
            KafkaClient proxy = (KafkaClient) Proxy.newProxyInstance(
                KafkaClient.class.getClassLoader(), new Class<?>[] {KafkaClient.class},
                new Counting(inner));
            clientField.set(sender, proxy);
            interception = "sender-client";
        } catch (ReflectiveOperationException | RuntimeException e) {
            interception = "failed: " + e;
        }
    }

    final class Delivered implements Callback {
        final int topic;
        final long intendedNs, id, partition, position;
        final boolean record;

        Delivered(int topic, long intendedNs, long id, boolean record, long partition,
                  long position) {
            this.topic = topic; this.intendedNs = intendedNs; this.id = id; this.record = record;
            this.partition = partition; this.position = position;
        }

        @Override
        public void onCompletion(RecordMetadata metadata, Exception exception) {
            long now = System.nanoTime();
            if (completions) emit("{\"type\":\"done\"}", true);  // closed loop (issue 44)
            lastAckNs.accumulateAndGet(now, Math::max);
            if (exception != null) {
                AtomicLong sent = sentRecords.get(partition);
                if (mayBeWritten(exception) && sent != null && position < sent.get()) {
                    settleUnknown(topic, exception.getClass().getSimpleName());
                } else {
                    fail(topic, exception);
                }
                return;
            }
            if (acksZero) {  // written, never answered: no latency, no offset
                unacked.incrementAndGet();
                topicUnacked.incrementAndGet(topic);
                return;
            }
            acked.incrementAndGet();
            topicAcked.incrementAndGet(topic);
            if (record) {
                Histogram h = latency[topic];
                synchronized (h) { h.recordValue(clampUs((now - intendedNs) / 1000)); }
            }
            if (deliveries) {
                emit("{\"type\":\"delivery\",\"topic\":" + topic + ",\"partition\":"
                     + metadata.partition() + ",\"offset\":" + metadata.offset() + ",\"id\":"
                     + id + "}", false);
            }
        }
    }

    /** Errors after which a message that was in a request may be in the topic. */
    static boolean mayBeWritten(Exception exception) {
        return exception instanceof TimeoutException || exception instanceof NetworkException
            || (exception.getClass() == KafkaException.class);  // close(0): forced
    }

    void settleUnknown(int topic, String reason) {
        unknown.incrementAndGet();
        topicUnknown.incrementAndGet(topic);
        synchronized (unknownReasons) { unknownReasons.merge(reason, 1L, Long::sum); }
    }

    void fail(int topic, Exception exception) {
        failed.incrementAndGet();
        topicFailed.incrementAndGet(topic);
        String reason = exception.getClass().getSimpleName();
        synchronized (failedReasons) { failedReasons.merge(reason, 1L, Long::sum); }
    }

    static byte[] readBytes(DataInputStream in, int length) throws java.io.IOException {
        byte[] bytes = new byte[length];
        in.readFully(bytes);
        return bytes;
    }

    int run() throws Exception {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        emit("{\"type\":\"hello\",\"protocol\":" + PROTOCOL + ",\"client_version\":"
             + quote(AppInfoParser.getVersion()) + "}", true);
        Properties header = new Properties();
        header.load(new StringReader(new String(readBytes(in, in.readInt()),
                                                StandardCharsets.UTF_8)));
        int protocol = Integer.parseInt(header.getProperty("kbatch.protocol", "0"));
        if (protocol != PROTOCOL) {
            System.err.println("kbatch protocol " + protocol + " is not this driver's "
                               + PROTOCOL);
            return 5;
        }
        topics = header.getProperty("kbatch.topics", "").split(",");
        latency = new Histogram[topics.length];
        topicAcked = new AtomicLongArray(topics.length);
        topicFailed = new AtomicLongArray(topics.length);
        topicUnacked = new AtomicLongArray(topics.length);
        topicUnknown = new AtomicLongArray(topics.length);
        for (int i = 0; i < topics.length; i++) {
            latency[i] = new Histogram(LOWEST_US, HIGHEST_US, DIGITS);
            topicIndex.put(topics[i], i);
        }
        deliveries = Boolean.parseBoolean(header.getProperty("kbatch.deliveries", "false"));
        long progressMs = Long.parseLong(header.getProperty("kbatch.progress.ms", "1000"));
        trace = Boolean.parseBoolean(header.getProperty("kbatch.trace", "false"));
        Properties config = new Properties();
        for (String name : header.stringPropertyNames()) {
            if (!name.startsWith("kbatch.")) config.setProperty(name, header.getProperty(name));
        }
        acksZero = "0".equals(config.getProperty("acks", "").trim());
        KafkaProducer<byte[], byte[]> producer;
        try {
            producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                                           new ByteArraySerializer());
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            emit("{\"type\":\"config_error\",\"message\":" + quote(cause.getMessage()) + "}",
                 true);
            return 6;
        }
        if (Boolean.parseBoolean(header.getProperty("kbatch.intercept", "true"))) {
            intercept(producer);
        }
        emit(clientConfig(producer), true);  // issue 44: the values this client version used
        completions = Boolean.parseBoolean(header.getProperty("kbatch.completions", "false"));
        for (String topic : topics) {  // metadata now, so the first send() does not block
            try {
                producer.partitionsFor(topic);
            } catch (RuntimeException e) {
                System.err.println("partitionsFor(" + topic + "): " + e);
            }
        }
        if (trace) {
            traceDrainOrder(producer);
            for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
                if (e.getKey().group().equals("producer-metrics")
                        && e.getKey().name().equals("bufferpool-wait-time-ns-total")) {
                    bufferPoolWait = e.getValue();
                }
            }
        }
        Thread progress = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(progressMs);
                } catch (InterruptedException e) {
                    return;
                }
                emit("{\"type\":\"progress\",\"acked\":" + acked.get() + ",\"failed\":"
                     + failed.get() + ",\"requests\":" + requests.get() + "}", true);
            }
        }, "kbatch-progress");
        progress.setDaemon(true);
        progress.start();
        if (trace) traceClock();
        boolean ended = false;
        try {
            while (true) {
                int type;
                try {
                    type = in.readByte();
                } catch (EOFException e) {
                    break;
                }
                if (type == 'P') {
                    emit("{\"type\":\"pong\",\"ns\":" + System.nanoTime() + "}", true);
                } else if (type == 'M') {
                    send(in, producer);
                } else if (type == 'E') {
                    ended = true;
                    break;
                } else {
                    System.err.println("unknown frame type " + type);
                    return 5;
                }
            }
            if (!ended) {  // kbatch stopped the run: drop what is unsent
                producer.close(Duration.ZERO);
                return 3;
            }
            if (trace) {
                traceAppends();
                emit("{\"type\":\"flush\",\"ns\":" + System.nanoTime() + "}", true);
            }
            producer.flush();
            String nodes = nodeRequestTotals(producer);
            String metrics = producerMetrics(producer);
            progress.interrupt();
            idempotence = idempotence(producer);
            emit(result(nodes, metrics), true);
            producer.close();
            return 0;
        } finally {
            progress.interrupt();
        }
    }

    void send(DataInputStream in, KafkaProducer<byte[], byte[]> producer) throws Exception {
        int topic = in.readUnsignedShort();
        int partition = in.readInt();
        long intendedNs = in.readLong();
        boolean record = in.readByte() != 0;
        long id = in.readLong();
        long timestampMs = in.readLong();
        int keyLength = in.readInt();
        byte[] key = keyLength < 0 ? null : readBytes(in, keyLength);
        byte[] value = readBytes(in, in.readInt());
        int headerCount = in.readUnsignedShort();
        RecordHeaders headers = null;
        if (headerCount > 0) {
            headers = new RecordHeaders();
            for (int i = 0; i < headerCount; i++) {
                String name = new String(readBytes(in, in.readUnsignedShort()),
                                         StandardCharsets.UTF_8);
                headers.add(new RecordHeader(name, readBytes(in, in.readInt())));
            }
        }
        ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(
            topics[topic], partition < 0 ? null : partition, timestampMs, key, value, headers);
        long where = key(topic, partition);
        long position = positions.computeIfAbsent(where, k -> new long[1])[0]++;
        submitted.incrementAndGet();
        long before = trace ? System.nanoTime() : 0;
        long beforeMs = trace ? System.currentTimeMillis() : 0;  // as send() reads nowMs
        double waited = trace ? waitedNs() : 0;
        try {
            producer.send(rec, new Delivered(topic, intendedNs, id, record, where, position));
        } catch (RuntimeException e) {  // refused at once (not through the callback)
            fail(topic, e);
        }
        if (trace) {
            tracePost[traced] = System.nanoTime();
            tracePre[traced] = before;
            traceMs[traced] = beforeMs;
            traceWait[traced] = Math.round(waitedNs() - waited);
            if (++traced == TRACE_CHUNK) traceAppends();
        }
    }

    /** The producer's total time waiting for buffer.memory so far (its own metric). */
    double waitedNs() {
        if (bufferPoolWait == null) return 0;
        Object value = bufferPoolWait.metricValue();
        return value instanceof Number ? ((Number) value).doubleValue() : 0;
    }

    /** The traced send() calls so far, in message order: when each started (the batch's
     *  createdMs is read there; and the millisecond clock then, which a new batch's
     *  createdMs reads), how long it took (the record is in its batch at the end) and how
     *  long of that it waited for buffer.memory. */
    void traceAppends() {
        if (traced == 0) return;
        StringBuilder b = new StringBuilder("{\"type\":\"appends\",\"first\":")
            .append(traceFirst).append(",\"start_ns\":[");
        for (int i = 0; i < traced; i++) {
            if (i > 0) b.append(',');
            b.append(tracePre[i]);
        }
        b.append("],\"took_ns\":[");
        for (int i = 0; i < traced; i++) {
            if (i > 0) b.append(',');
            b.append(tracePost[i] - tracePre[i]);
        }
        b.append("],\"waited_ns\":[");
        for (int i = 0; i < traced; i++) {
            if (i > 0) b.append(',');
            b.append(traceWait[i]);
        }
        b.append("],\"start_ms\":[");
        for (int i = 0; i < traced; i++) {
            if (i > 0) b.append(',');
            b.append(traceMs[i]);
        }
        emit(b.append("]}").toString(), false);
        traceFirst += traced;
        traced = 0;
    }

    /** Each node's partitions in the order the Sender's drain walks them (the producer
     *  metadata's Cluster.partitionsForNode), as [topic index, partition] pairs. */
    void traceDrainOrder(KafkaProducer<byte[], byte[]> producer) {
        StringBuilder b = new StringBuilder("{\"type\":\"drain_order\",\"nodes\":{");
        try {
            Field field = KafkaProducer.class.getDeclaredField("metadata");
            field.setAccessible(true);
            Cluster cluster = ((Metadata) field.get(producer)).fetch();
            boolean firstNode = true;
            for (Node node : cluster.nodes()) {
                if (!firstNode) b.append(',');
                firstNode = false;
                b.append(quote(String.valueOf(node.id()))).append(":[");
                boolean first = true;
                for (PartitionInfo p : cluster.partitionsForNode(node.id())) {
                    Integer index = topicIndex.get(p.topic());
                    if (index == null) continue;
                    if (!first) b.append(',');
                    first = false;
                    b.append('[').append(index).append(',').append(p.partition()).append(']');
                }
                b.append(']');
            }
            b.append("}}");
        } catch (ReflectiveOperationException | RuntimeException e) {
            b = new StringBuilder("{\"type\":\"drain_order\",\"nodes\":{},\"error\":")
                .append(quote(e.toString())).append('}');
        }
        emit(b.toString(), true);
    }

    /** Where the producer's millisecond clock (System.currentTimeMillis, which stamps a
     *  batch's createdMs and the Sender's now) ticks on System.nanoTime: the nanoTime
     *  right after a tick, so a replay reads each trace time as the producer read it. */
    void traceClock() {
        long first = System.currentTimeMillis(), ms, ns;
        do {
            ms = System.currentTimeMillis();
            ns = System.nanoTime();
        } while (ms == first);
        emit("{\"type\":\"clock\",\"ms\":" + ms + ",\"ns\":" + ns + "}", true);
    }

    // ---- issue 44: client versions (effective config) and closed-loop completions ----
    static final List<String> REPORTED_CONFIG = List.of(
        "linger.ms", "batch.size", "acks", "enable.idempotence",
        "max.in.flight.requests.per.connection", "delivery.timeout.ms", "request.timeout.ms",
        "retries", "retry.backoff.ms", "max.request.size", "buffer.memory", "max.block.ms",
        "compression.type", "partitioner.class", "partitioner.ignore.keys",
        "partitioner.adaptive.partitioning.enable");
    /** kbatch drives a closed loop: every completion is reported at once ("done"). */
    private volatile boolean completions;

    /** The producer's effective ProducerConfig values (its defaults where kbatch set
     *  nothing), read from its private producerConfig, as the request counting reads the
     *  Sender; an "unknown" entry if that fails. */
    static String clientConfig(KafkaProducer<byte[], byte[]> producer) {
        StringBuilder b = new StringBuilder("{\"type\":\"client_config\",\"values\":{");
        try {
            Field field = KafkaProducer.class.getDeclaredField("producerConfig");
            field.setAccessible(true);
            Object config = field.get(producer);
            Map<?, ?> values = (Map<?, ?>) config.getClass().getMethod("values").invoke(config);
            boolean first = true;
            for (String name : REPORTED_CONFIG) {
                if (!values.containsKey(name)) continue;
                Object value = values.get(name);
                if (!first) b.append(',');
                first = false;
                b.append(quote(name)).append(':');
                if (value instanceof Number || value instanceof Boolean) b.append(value);
                else if (value instanceof Class) b.append(quote(((Class<?>) value).getName()));
                else b.append(value == null ? "null" : quote(String.valueOf(value)));
            }
            return b.append("}}").toString();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "{\"type\":\"client_config\",\"values\":{},\"unknown\":"
                + quote(e.toString()) + "}";
        }
    }

    static final List<String> PRODUCER_METRICS = List.of(
        "bufferpool-wait-time-ns-total", "buffer-exhausted-total", "record-retry-total",
        "record-error-total", "request-total", "batch-split-total");

    /** A few totals of the producer's own metrics ("producer-metrics"), by name. */
    static String producerMetrics(KafkaProducer<byte[], byte[]> producer) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            MetricName name = e.getKey();
            if (name.group().equals("producer-metrics")
                    && PRODUCER_METRICS.contains(name.name())) {
                Object value = e.getValue().metricValue();
                if (!(value instanceof Number)) continue;
                if (b.length() > 1) b.append(',');
                b.append(quote(name.name())).append(':').append(((Number) value).doubleValue());
            }
        }
        return b.append('}').toString();
    }

    static String nodeRequestTotals(KafkaProducer<byte[], byte[]> producer) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            MetricName name = e.getKey();
            if (name.group().equals("producer-node-metrics")
                    && name.name().equals("request-total")) {
                String node = name.tags().getOrDefault("node-id", "?").replace("node-", "");
                if (b.length() > 1) b.append(',');
                Object value = e.getValue().metricValue();
                long count = value instanceof Number
                    ? Math.round(((Number) value).doubleValue()) : -1;
                b.append(quote(node)).append(':').append(count);
            }
        }
        return b.append('}').toString();
    }

    /**
     * The producer's own idempotence, not the configured one: Java decides it from several
     * settings (acks, retries, max.in.flight, transactional.id), and only its
     * TransactionManager (null without idempotence) knows, with the producer id and epoch
     * it was given. Read by reflection, as the request counting does; "unknown" if that
     * fails, so kbatch falls back to the setting and says so.
     */
    static String idempotence(KafkaProducer<byte[], byte[]> producer) {
        try {
            Field tmField = KafkaProducer.class.getDeclaredField("transactionManager");
            tmField.setAccessible(true);
            Object tm = tmField.get(producer);
            if (tm == null) return "{\"enabled\":false}";
            Field idField = tm.getClass().getDeclaredField("producerIdAndEpoch");
            idField.setAccessible(true);
            Object idAndEpoch = idField.get(tm);
            StringBuilder b = new StringBuilder("{\"enabled\":true");
            if (idAndEpoch != null) {
                long id = idAndEpoch.getClass().getField("producerId").getLong(idAndEpoch);
                short epoch = idAndEpoch.getClass().getField("epoch").getShort(idAndEpoch);
                if (id >= 0) b.append(",\"producer_id\":").append(id)
                    .append(",\"producer_epoch\":").append(epoch);
            }
            return b.append('}').toString();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "{\"unknown\":" + quote(e.toString()) + "}";
        }
    }

    String result(String nodeTotals, String producerMetrics) {
        StringBuilder b = new StringBuilder("{\"type\":\"result\",\"acked\":" + acked.get()
            + ",\"failed\":" + failed.get() + ",\"unacked\":" + unacked.get()
            + ",\"unknown\":" + unknown.get() + ",\"submitted\":" + submitted.get()
            + ",\"requests\":" + requests.get()
            + ",\"last_ack_ns\":" + lastAckNs.get()
            + ",\"interception\":" + quote(interception)
            + ",\"idempotence\":" + idempotence + ",\"failed_reasons\":{");
        synchronized (failedReasons) {
            List<String> items = new ArrayList<>();
            failedReasons.forEach((k, v) -> items.add(quote(k) + ":" + v));
            b.append(String.join(",", items));
        }
        b.append("},\"unknown_reasons\":{");
        synchronized (unknownReasons) {
            List<String> items = new ArrayList<>();
            unknownReasons.forEach((k, v) -> items.add(quote(k) + ":" + v));
            b.append(String.join(",", items));
        }
        b.append("},\"requests_by_node\":{");
        synchronized (requestsByNode) {
            List<String> items = new ArrayList<>();
            requestsByNode.forEach((k, v) -> items.add(quote(String.valueOf(k)) + ":" + v));
            b.append(String.join(",", items));
        }
        b.append("},\"topic_acked\":").append(topicAcked.toString().replace(" ", ""));
        b.append(",\"topic_failed\":").append(topicFailed.toString().replace(" ", ""));
        b.append(",\"topic_unacked\":").append(topicUnacked.toString().replace(" ", ""));
        b.append(",\"topic_unknown\":").append(topicUnknown.toString().replace(" ", ""));
        b.append(",\"producer_metrics\":").append(producerMetrics);
        b.append(",\"node_request_total\":").append(nodeTotals).append(",\"latency_us\":[");
        for (int i = 0; i < latency.length; i++) {
            if (i > 0) b.append(',');
            synchronized (latency[i]) { b.append(quote(encode(latency[i]))); }
        }
        synchronized (rtt) { b.append("],\"rtt_us\":").append(quote(encode(rtt))); }
        return b.append('}').toString();
    }

    public static void main(String[] args) throws Exception {
        int code = new KbatchProducerDriver().run();
        System.out.flush();
        System.exit(code);
    }
}
