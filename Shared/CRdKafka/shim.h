#ifndef CHATSUITE_CRDKAFKA_SHIM_H
#define CHATSUITE_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/// Swift cannot call C variadic functions, so `rd_kafka_producev` is wrapped here with a fixed
/// argument list. `headers` ownership passes to librdkafka only when this returns NO_ERROR.
static inline rd_kafka_resp_err_t chatsuite_produce(rd_kafka_t *rk,
                                                    const char *topic,
                                                    int32_t partition,
                                                    const void *key, size_t key_len,
                                                    const void *value, size_t value_len,
                                                    rd_kafka_headers_t *headers,
                                                    void *opaque) {
    return rd_kafka_producev(rk,
                             RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_KEY(key, key_len),
                             RD_KAFKA_V_VALUE((void *)value, value_len),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_HEADERS(headers),
                             RD_KAFKA_V_OPAQUE(opaque),
                             RD_KAFKA_V_END);
}

#endif
