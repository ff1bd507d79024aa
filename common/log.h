/*
 * common/log.h — the one logger: JSON lines on stderr (or a chosen fd).
 *
 *   nw_log_info("server", "listening", NW_LS("addr", addr), NW_LI("threads", n));
 *   -> {"ts":"2026-11-30T03:40:00.123Z","level":"info","comp":"server","msg":"listening",
 *       "addr":"0.0.0.0:8443","threads":2}
 *
 * The level is checked before any argument is formatted. `msg` is a constant;
 * data goes into fields. Each line is emitted with a single write(2), so lines
 * from different threads never interleave. Fields whose key names a secret
 * (token, secret, password, authorization, signature, credential, key material
 * such as "secretAccessKey") are written as "[redacted]".
 *
 * Thread: any. Configuration (nw_log_set_*) belongs to main, before threads start.
 */
#ifndef NW_COMMON_LOG_H
#define NW_COMMON_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    NW_LOG_DEBUG = 0,
    NW_LOG_INFO,
    NW_LOG_WARN,
    NW_LOG_ERROR,
    NW_LOG_OFF
} nw_log_level_t;

typedef struct {
    const char *k;
    char t; /* 's' string, 'i' integer, 'f' double, 'b' bool, 0 = end marker */
    union {
        const char *s;
        long long i;
        double d;
    } v;
} nw_log_field_t;

#define NW_LS(key, val) ((nw_log_field_t){(key), 's', {.s = (val)}})
#define NW_LI(key, val) ((nw_log_field_t){(key), 'i', {.i = (long long)(val)}})
#define NW_LF(key, val) ((nw_log_field_t){(key), 'f', {.d = (double)(val)}})
#define NW_LB(key, val) ((nw_log_field_t){(key), 'b', {.i = (val) ? 1 : 0}})

/** Current minimum level (atomic read). */
extern _Atomic int nw_log__level;

/** Set the minimum level that is written. */
void nw_log_set_level(nw_log_level_t level);

/** Parse "debug", "info", "warn", "error", "off"; returns -1 if unknown. */
int nw_log_level_parse(const char *s);

/** Write to fd instead of stderr (tests). */
void nw_log_set_fd(int fd);

/** True when a message at this level would be written. */
#define nw_log_enabled(level)                                                                      \
    ((int)(level) >= atomic_load_explicit(&nw_log__level, memory_order_relaxed))

/** Internal: format and write one line. Fields end at the first with t == 0. */
void nw_log__emit(nw_log_level_t level, const char *comp, const char *msg,
                  const nw_log_field_t *fields, unsigned nfields);

#define nw_log(level, comp, msg, ...)                                                              \
    do {                                                                                           \
        if (nw_log_enabled(level)) {                                                               \
            const nw_log_field_t nw_log_f_[] = {{0, 0, {0}}, ##__VA_ARGS__};                       \
            nw_log__emit((level), (comp), (msg), nw_log_f_ + 1,                                    \
                         (unsigned)(sizeof nw_log_f_ / sizeof nw_log_f_[0]) - 1);                  \
        }                                                                                          \
    } while (0)

#define nw_log_debug(comp, msg, ...) nw_log(NW_LOG_DEBUG, comp, msg, ##__VA_ARGS__)
#define nw_log_info(comp, msg, ...) nw_log(NW_LOG_INFO, comp, msg, ##__VA_ARGS__)
#define nw_log_warn(comp, msg, ...) nw_log(NW_LOG_WARN, comp, msg, ##__VA_ARGS__)
#define nw_log_error(comp, msg, ...) nw_log(NW_LOG_ERROR, comp, msg, ##__VA_ARGS__)

/* Rate-limited: at most one line per `secs` seconds from this call site; the
 * number of lines suppressed since the last one is added as field "suppressed". */
#define nw_log_every(secs, level, comp, msg, ...)                                                  \
    do {                                                                                           \
        static _Atomic int64_t nw_log_last_;                                                       \
        static _Atomic long long nw_log_supp_;                                                     \
        if (nw_log_enabled(level)) {                                                               \
            if (nw_log__ratelimit(&nw_log_last_, (secs))) {                                        \
                const nw_log_field_t nw_log_f_[] = {                                               \
                    NW_LI("suppressed", atomic_exchange(&nw_log_supp_, 0)), ##__VA_ARGS__};        \
                nw_log__emit((level), (comp), (msg), nw_log_f_,                                    \
                             (unsigned)(sizeof nw_log_f_ / sizeof nw_log_f_[0]));                  \
            } else {                                                                               \
                atomic_fetch_add(&nw_log_supp_, 1);                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/** Internal: true if a line may be written now (updates *last). */
bool nw_log__ratelimit(_Atomic int64_t *last, int secs);

/** True if a field with this key must never be logged in clear. */
bool nw_log_key_is_secret(const char *key);

#endif
