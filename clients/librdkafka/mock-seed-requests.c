/* The seed's scenario on librdkafka's mock cluster (3 brokers, in-process):
 * P partitions, R msg/s of 100 bytes for D seconds, then flush(). Prints the
 * ProduceRequests the mock cluster received, the statistics' produce_requests,
 * produce_partitions and batch_collector counters, and the delivery latency
 * percentiles (mock cluster, same process: indications only). It counts
 * requests; it is not a benchmark of speed.
 *
 * Build against a (patched or pristine) librdkafka 2.12.1 tree T:
 *   gcc -O1 -o mock-seed-requests mock-seed-requests.c -IT/src T/src/librdkafka.a \
 *       -lm -lssl -lcrypto -lz -ldl -lpthread -lrt
 * Usage: mock-seed-requests P R D [property=value...]
 *   e.g. mock-seed-requests 1000 20000 10 broker.linger.ms=500 broker.batch.max.bytes=10000000 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rdkafka.h"
#include "rdkafka_mock.h"

static char *last_stats;
static long *lat; static size_t nlat, caplat;
static long now_us(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1000000L + ts.tv_nsec / 1000; }
static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *op) { free(last_stats); last_stats = strdup(json); return 0; }
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op) {
        if (m->err) { fprintf(stderr, "DR error %s\n", rd_kafka_err2str(m->err)); return; }
        if (nlat == caplat) { caplat = caplat ? caplat * 2 : 1 << 16; lat = realloc(lat, caplat * sizeof(*lat)); }
        lat[nlat++] = now_us() - (long)(intptr_t)m->_private;
}
static long sum_field(const char *f) { char key[64]; long s = 0; const char *p; snprintf(key, sizeof(key), "\"%s\":", f);
        for (p = strstr(last_stats, key); p; p = strstr(p + 1, key)) s += strtol(p + strlen(key), NULL, 10); return s; }
static int cmp(const void *a, const void *b) { long x = *(long *)a, y = *(long *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
        int P = atoi(argv[1]), R = atoi(argv[2]), D = atoi(argv[3]), i;
        char errstr[256]; rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "test.mock.num.brokers", "3", errstr, sizeof(errstr));
        rd_kafka_conf_set(conf, "statistics.interval.ms", "200", errstr, sizeof(errstr));
        for (i = 4; i < argc; i++) { char *eq = strchr(argv[i], '='); *eq = 0;
                if (rd_kafka_conf_set(conf, argv[i], eq + 1, errstr, sizeof(errstr))) { fprintf(stderr, "%s\n", errstr); return 1; } }
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb); rd_kafka_conf_set_stats_cb(conf, stats_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(rk);
        rd_kafka_mock_topic_create(mc, "seed", P, 1);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "seed", NULL);
        const struct rd_kafka_metadata *md; rd_kafka_metadata(rk, 0, rkt, &md, 5000); rd_kafka_metadata_destroy(md);
        rd_kafka_mock_start_request_tracking(mc);
        long t0 = now_us(), n = 0, total = (long)R * D; char payload[100]; memset(payload, 'x', sizeof(payload));
        while (n < total) {
                long due = (now_us() - t0) * R / 1000000L;
                while (n < due && n < total) {
                        long ts = now_us();
                        rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION((int)(n % P)), RD_KAFKA_V_VALUE(payload, 100),
                                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE((void *)(intptr_t)ts), RD_KAFKA_V_END);
                        n++;
                }
                rd_kafka_poll(rk, 1);
        }
        rd_kafka_flush(rk, 30000);
        size_t cnt; rd_kafka_mock_request_t **reqs = rd_kafka_mock_get_requests(mc, &cnt); long produce = 0;
        for (size_t k = 0; k < cnt; k++) if (rd_kafka_mock_request_api_key(reqs[k]) == 0) produce++;
        rd_kafka_mock_request_destroy_array(reqs, cnt);
        free(last_stats); last_stats = NULL; while (!last_stats) rd_kafka_poll(rk, 50);
        qsort(lat, nlat, sizeof(*lat), cmp);
        printf("messages=%zu mock_produce_requests=%ld produce_requests=%ld produce_partitions=%ld bc_sends=%ld bc_requests=%ld "
               "trigger_linger=%ld trigger_flush=%ld msgs/req=%.1f p50=%.1fms p95=%.1fms p99=%.1fms max=%.1fms\n",
               nlat, produce, sum_field("produce_requests"), sum_field("produce_partitions"), sum_field("sends"), sum_field("requests"),
               sum_field("trigger_linger"), sum_field("trigger_flush"), produce ? (double)nlat / produce : 0,
               lat[nlat / 2] / 1000.0, lat[nlat * 95 / 100] / 1000.0, lat[nlat * 99 / 100] / 1000.0, lat[nlat - 1] / 1000.0);
        rd_kafka_topic_destroy(rkt); rd_kafka_destroy(rk); return 0;
}
