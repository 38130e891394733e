/*
 * boundedserver.c — an "end session" HTTP/1.1 server of bounded capacity, for the fleet and
 * struggling-server benchmarks (Benchmarks/fleet/fleet_bench.py).
 *
 *   cc -O2 -pthread -o boundedserver boundedserver.c
 *   boundedserver [--host 127.0.0.1] [--port 0] [--ready-file PATH]
 *                 [--workers 16] [--backlog 64] [--max-connections 1024]
 *                 [--service-ms 10] [--mode sleep|cpu] [--queue Q] [--retry-after 1]
 *                 [--keepalive-ms 5000] [--keys-file PATH]
 *
 * The model is that of a thread-pool application server (Tomcat's maxThreads / acceptCount /
 * maxConnections, gunicorn's workers / backlog / worker_connections):
 *
 * - One I/O thread (epoll) accepts connections while fewer than --max-connections are open;
 *   at the limit it stops accepting, so further connections wait in the kernel's accept queue,
 *   whose length is --backlog (listen(2)); beyond that the kernel drops SYNs (the
 *   ListenOverflows / ListenDrops counters) and clients retransmit them after 1, 3, 7 ... s.
 * - Each complete request goes to a FIFO served by --workers threads: requests served at once.
 *   A worker spends --service-ms on it, asleep (--mode sleep) or burning its own thread's CPU
 *   (--mode cpu, measured with CLOCK_THREAD_CPUTIME_ID), and then "ends the session": the key
 *   counts as completed from that moment, whether or not the client is still there to read
 *   the reply (a client that gave up does not stop the work, as with most servers).
 * - --queue Q (off by default): a request that arrives while Q requests already wait for a
 *   worker is answered at once with 503 and "Retry-After: --retry-after" (keep-alive).
 * - HTTP/1.1 keep-alive: one request per connection at a time (a pipelined request waits in
 *   the buffer until the reply before it is sent). An idle connection is closed after
 *   --keepalive-ms. "Connection: close" and HTTP/1.0 without keep-alive are honoured.
 * - Every request except GET /_stats and GET /_keys is answered 200 {"success": true}. Its
 *   session key is the path segment of /user/<key>/..., else ?session=<key>, else the
 *   "session" string of a JSON body, else a form body's token=<key>; keys are kept as 64-bit
 *   FNV-1a hashes (never their text).
 *
 * GET /_stats answers at once with one JSON object:
 *   requests (end-session requests, /_stats and /_keys excluded), keyless, unique_keys,
 *   duplicates (requests - unique_keys), resends (requests for a key already completed when
 *   they arrived), completed (requests a worker finished), completed_keys (keys completed at
 *   least once), replies_dropped (finished requests whose client had gone), rejected_503,
 *   in_service, queued, max_in_service, max_queued (requests waiting for a worker, at most),
 *   connections (accepted), open_connections, max_open_connections, keepalive_closes,
 *   listener_paused (times the connection limit stopped accepting), max_accept_queue (the
 *   listen socket's accept queue, sampled every 2 ms and on every wake-up), first_request_s,
 *   last_first_completion_s (CLOCK_MONOTONIC seconds: when the last key to be completed was
 *   completed), cpu_user_s, cpu_sys_s, and "netns": the kernel's TCP counters of this network
 *   namespace since the server started (TcpExt ListenOverflows, ListenDrops, TCPSynRetrans,
 *   TCPTimeouts, TCPAbortOnData, TCPAbortOnClose, TCPReqQFullDrop; Tcp AttemptFails,
 *   EstabResets, OutRsts). Those count every socket of the namespace: the server's own only
 *   when it runs in a namespace of its own (with its clients, on its loopback).
 * GET /_keys answers text, one line per key: "HASH REQUESTS COMPLETIONS FIRST_COMPLETION_S"
 * (FIRST_COMPLETION_S: CLOCK_MONOTONIC seconds, 0 if never completed).
 *
 * --port 0 picks a free port, written (temp file + rename) to --ready-file once listening.
 * SIGTERM/SIGINT print the /_stats JSON to stdout, write /_keys's lines to --keys-file (mode
 * 0600) if given, and exit 0.
 *
 * Limits: request heads up to 64 KiB, bodies up to 1 MiB (Content-Length; chunked bodies get
 * 501 + close). No TLS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD (64 * 1024)
#define MAX_BODY (1024 * 1024)
#define READ_CHUNK (16 * 1024)
#define TICK_NS (2 * 1000000ull) /* housekeeping: accept-queue sampling, keep-alive expiry */

static const char REPLY_OK[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
    "{\"success\": true}";
static const char REPLY_OK_CLOSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
    "Connection: close\r\n\r\n{\"success\": true}";

/* ------------------------------------------------------------------ settings */

static int n_workers = 16, backlog = 64, max_connections = 1024;
static uint64_t service_ns = 10 * 1000000ull, keepalive_ns = 5000 * 1000000ull;
static bool mode_cpu = false;
static long queue_limit = -1; /* -1: no limit, never 503 */
static int retry_after_s = 1;

/* ------------------------------------------------------------------ connections (I/O thread only) */

typedef struct {
    int fd;
    uint32_t gen;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_cap;
    bool busy;          /* a request of this connection is queued or in service */
    bool close_after;   /* close once the reply in progress is flushed */
    bool want_out;      /* EPOLLOUT registered */
    uint64_t idle_since;
} conn_t;

static conn_t **conns; /* indexed by fd */
static uint32_t *fdgen;
static int max_fds, epfd, listen_fd, timer_fd, signal_fd, done_fd;
static bool listener_armed;

/* ------------------------------------------------------------------ the request queue and keys
 * Guarded by `lock`: the job ring, the done list, in_service, and the key table with every
 * counter a worker updates. The I/O thread's own counters are not shared. */

typedef struct {
    int fd;
    uint32_t gen;
    uint64_t key; /* 0: keyless */
    bool close_after;
} job_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_ready = PTHREAD_COND_INITIALIZER;
static job_t *jobs;
static size_t jobs_cap, jobs_head, jobs_len;
static job_t *done;
static size_t done_cap, done_len;
static uint64_t in_service, max_in_service, max_queued;
static uint64_t n_completed, n_completed_keys, last_first_completion_ns;

typedef struct {
    uint64_t hash;
    uint32_t requests, completions;
    uint64_t first_completion_ns;
} key_t_;

static key_t_ *keys;
static size_t keys_cap, n_keys;

/* I/O thread counters */
static uint64_t n_requests, n_keyless, n_resends, n_503, n_connections, n_open, max_open;
static uint64_t n_keepalive_closes, n_listener_paused, max_accept_queue, n_dropped_replies;
static uint64_t first_request_ns;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n);
    if (!p) die("realloc");
    return p;
}

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* The entry for `hash`, inserted if new (caller holds `lock`). */
static key_t_ *key_entry(uint64_t hash) {
    if ((n_keys + 1) * 2 > keys_cap) { /* load factor <= 1/2 */
        size_t ncap = keys_cap ? keys_cap * 2 : 4096;
        key_t_ *n = calloc(ncap, sizeof *n);
        if (!n) die("calloc");
        for (size_t i = 0; i < keys_cap; i++) {
            if (!keys[i].hash) continue;
            size_t j = keys[i].hash & (ncap - 1);
            while (n[j].hash) j = (j + 1) & (ncap - 1);
            n[j] = keys[i];
        }
        free(keys);
        keys = n;
        keys_cap = ncap;
    }
    size_t j = hash & (keys_cap - 1);
    while (keys[j].hash && keys[j].hash != hash) j = (j + 1) & (keys_cap - 1);
    if (!keys[j].hash) {
        keys[j].hash = hash;
        n_keys++;
    }
    return &keys[j];
}

/* ------------------------------------------------------------------ kernel counters */

/* /proc/net/netstat and /proc/net/snmp: "Prefix: name name ..." then "Prefix: value value ...".
 * These are the counters of the reading thread's network namespace. */
static const char *const NETNS_NAMES[] = {
    "TcpExt:ListenOverflows", "TcpExt:ListenDrops",   "TcpExt:TCPSynRetrans", "TcpExt:TCPTimeouts",
    "TcpExt:TCPAbortOnData",  "TcpExt:TCPAbortOnClose", "TcpExt:TCPReqQFullDrop", "Tcp:AttemptFails",
    "Tcp:EstabResets",        "Tcp:OutRsts"};
#define N_NETNS (sizeof NETNS_NAMES / sizeof NETNS_NAMES[0])
static long long netns_start[N_NETNS];

static void read_counters_file(const char *path, long long *out) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *names = NULL, *values = NULL;
    size_t ncap = 0, vcap = 0;
    while (getline(&names, &ncap, f) > 0 && getline(&values, &vcap, f) > 0) {
        char *sp_n, *sp_v;
        char *prefix = strtok_r(names, " \n", &sp_n);
        char *vprefix = strtok_r(values, " \n", &sp_v);
        if (!prefix || !vprefix || strcmp(prefix, vprefix) != 0) continue;
        char *name, *value;
        while ((name = strtok_r(NULL, " \n", &sp_n)) && (value = strtok_r(NULL, " \n", &sp_v))) {
            char full[128];
            snprintf(full, sizeof full, "%s%s", prefix, name);
            for (size_t i = 0; i < N_NETNS; i++)
                if (strcmp(full, NETNS_NAMES[i]) == 0) out[i] = atoll(value);
        }
    }
    free(names);
    free(values);
    fclose(f);
}

static void read_netns(long long *out) {
    for (size_t i = 0; i < N_NETNS; i++) out[i] = -1;
    read_counters_file("/proc/net/netstat", out);
    read_counters_file("/proc/net/snmp", out);
}

/* ------------------------------------------------------------------ stats */

static void sample_accept_queue(void) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    /* On a listening socket tcpi_unacked is the accept queue's current length. */
    if (getsockopt(listen_fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_unacked > max_accept_queue)
        max_accept_queue = ti.tcpi_unacked;
}

static int stats_json(char *buf, size_t cap) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long long netns[N_NETNS];
    read_netns(netns);
    pthread_mutex_lock(&lock);
    uint64_t queued = jobs_len, serving = in_service, mis = max_in_service, mq = max_queued;
    uint64_t completed = n_completed, completed_keys = n_completed_keys, unique = n_keys;
    uint64_t last_first = last_first_completion_ns;
    pthread_mutex_unlock(&lock);
    int n = snprintf(
        buf, cap,
        "{\"requests\": %llu, \"keyless\": %llu, \"unique_keys\": %llu, \"duplicates\": %llu, "
        "\"resends\": %llu, \"completed\": %llu, \"completed_keys\": %llu, \"replies_dropped\": %llu, "
        "\"rejected_503\": %llu, \"in_service\": %llu, \"queued\": %llu, \"max_in_service\": %llu, "
        "\"max_queued\": %llu, \"connections\": %llu, \"open_connections\": %llu, "
        "\"max_open_connections\": %llu, \"keepalive_closes\": %llu, \"listener_paused\": %llu, "
        "\"max_accept_queue\": %llu, \"first_request_s\": %.6f, \"last_first_completion_s\": %.6f, "
        "\"workers\": %d, \"backlog\": %d, \"max_connections\": %d, \"service_ms\": %.3f, "
        "\"mode\": \"%s\", \"queue_limit\": %ld, \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"netns\": {",
        (unsigned long long)n_requests, (unsigned long long)n_keyless, (unsigned long long)unique,
        (unsigned long long)(n_requests - n_keyless - unique), (unsigned long long)n_resends,
        (unsigned long long)completed, (unsigned long long)completed_keys,
        (unsigned long long)n_dropped_replies, (unsigned long long)n_503, (unsigned long long)serving,
        (unsigned long long)queued, (unsigned long long)mis, (unsigned long long)mq,
        (unsigned long long)n_connections, (unsigned long long)n_open, (unsigned long long)max_open,
        (unsigned long long)n_keepalive_closes, (unsigned long long)n_listener_paused,
        (unsigned long long)max_accept_queue, first_request_ns / 1e9, last_first / 1e9, n_workers, backlog,
        max_connections, service_ns / 1e6, mode_cpu ? "cpu" : "sleep", queue_limit,
        ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    for (size_t i = 0; i < N_NETNS && n > 0 && (size_t)n < cap; i++) {
        const char *name = strchr(NETNS_NAMES[i], ':') + 1;
        long long v = netns[i] < 0 || netns_start[i] < 0 ? -1 : netns[i] - netns_start[i];
        n += snprintf(buf + n, cap - (size_t)n, "%s\"%s\": %lld", i ? ", " : "", name, v);
    }
    if (n > 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "}}");
    return n;
}

/* "HASH REQUESTS COMPLETIONS FIRST_COMPLETION_S\n" per key; caller frees. */
static char *keys_text(size_t *len) {
    pthread_mutex_lock(&lock);
    size_t cap = n_keys * 64 + 1, n = 0;
    char *text = malloc(cap);
    if (!text) die("malloc");
    for (size_t i = 0; i < keys_cap; i++) {
        if (!keys[i].hash) continue;
        n += (size_t)snprintf(text + n, cap - n, "%016llx %u %u %.6f\n", (unsigned long long)keys[i].hash,
                              keys[i].requests, keys[i].completions, keys[i].first_completion_ns / 1e9);
    }
    pthread_mutex_unlock(&lock);
    *len = n;
    return text;
}

/* ------------------------------------------------------------------ workers */

static void serve(void) {
    if (!mode_cpu) {
        struct timespec ts = {.tv_sec = (time_t)(service_ns / 1000000000ull),
                              .tv_nsec = (long)(service_ns % 1000000000ull)};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
        return;
    }
    uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + service_ns;
    volatile uint64_t x = 0;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
        for (int i = 0; i < 2000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static void *worker_main(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (jobs_len == 0) pthread_cond_wait(&work_ready, &lock);
        job_t job = jobs[jobs_head];
        jobs_head = (jobs_head + 1) & (jobs_cap - 1);
        jobs_len--;
        if (++in_service > max_in_service) max_in_service = in_service;
        pthread_mutex_unlock(&lock);

        serve();

        uint64_t t = now_ns();
        pthread_mutex_lock(&lock);
        n_completed++;
        if (job.key) {
            key_t_ *k = key_entry(job.key);
            if (k->completions++ == 0) {
                k->first_completion_ns = t;
                n_completed_keys++;
                last_first_completion_ns = t;
            }
        }
        if (done_len == done_cap) {
            done_cap = done_cap ? done_cap * 2 : 256;
            done = xrealloc(done, done_cap * sizeof *done);
        }
        done[done_len++] = job;
        in_service--;
        pthread_mutex_unlock(&lock);
        uint64_t one = 1;
        if (write(done_fd, &one, sizeof one) < 0 && errno != EAGAIN) die("write eventfd");
    }
    return NULL;
}

/* Queues a request, or returns false when the queue limit says 503. */
static bool submit(conn_t *c, uint64_t key, bool close_after) {
    pthread_mutex_lock(&lock);
    /* Waiting for a worker = accepted and unfinished beyond the workers. */
    uint64_t busy = in_service + jobs_len;
    uint64_t waiting = busy >= (uint64_t)n_workers ? busy - (uint64_t)n_workers : 0;
    if (queue_limit >= 0 && busy >= (uint64_t)n_workers && waiting >= (uint64_t)queue_limit) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    if (key) {
        key_t_ *k = key_entry(key);
        if (k->completions) n_resends++;
        k->requests++;
    }
    if (jobs_len == jobs_cap) { /* grow and unwrap the ring */
        size_t ncap = jobs_cap ? jobs_cap * 2 : 1024;
        job_t *n = xrealloc(NULL, ncap * sizeof *n);
        for (size_t i = 0; i < jobs_len; i++) n[i] = jobs[(jobs_head + i) & (jobs_cap - 1)];
        free(jobs);
        jobs = n;
        jobs_cap = ncap;
        jobs_head = 0;
    }
    jobs[(jobs_head + jobs_len) & (jobs_cap - 1)] = (job_t){c->fd, c->gen, key, close_after};
    jobs_len++;
    if (busy + 1 > (uint64_t)n_workers && busy + 1 - (uint64_t)n_workers > max_queued)
        max_queued = busy + 1 - (uint64_t)n_workers;
    pthread_cond_signal(&work_ready);
    pthread_mutex_unlock(&lock);
    return true;
}

/* ------------------------------------------------------------------ connection I/O */

static void arm_listener(bool on) {
    if (listener_armed == on) return;
    if (on) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = listen_fd};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev) < 0) die("epoll_ctl listener");
    } else {
        if (epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd, NULL) < 0) die("epoll_ctl listener");
        n_listener_paused++;
    }
    listener_armed = on;
}

static void conn_close(conn_t *c) {
    close(c->fd);
    fdgen[c->fd]++;
    conns[c->fd] = NULL;
    free(c->in);
    free(c->out);
    free(c);
    n_open--;
    if (n_open < (uint64_t)max_connections) arm_listener(true);
}

static void set_want_out(conn_t *c, bool want) {
    if (c->want_out == want) return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.fd = c->fd};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl mod");
    c->want_out = want;
}

/* Writes what it can. Returns false if the connection was closed. */
static bool conn_flush(conn_t *c) {
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t n = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            conn_close(c);
            return false;
        }
    }
    memmove(c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
    set_want_out(c, c->out_len > 0);
    if (c->out_len == 0 && c->close_after && !c->busy) {
        conn_close(c);
        return false;
    }
    return true;
}

static bool conn_send(conn_t *c, const char *buf, size_t len) {
    if (c->out_len + len > c->out_cap) {
        c->out_cap = (c->out_len + len) * 2;
        c->out = xrealloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
    return conn_flush(c);
}

static bool send_status(conn_t *c, const char *status, const char *extra, const char *type, const char *body,
                        size_t blen, bool close_after) {
    char head[512];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %s\r\n%sContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", status,
                     extra, type, blen, close_after ? "Connection: close\r\n" : "");
    if (close_after) c->close_after = true;
    size_t total = (size_t)n + blen;
    char *msg = malloc(total);
    if (!msg) die("malloc");
    memcpy(msg, head, (size_t)n);
    memcpy(msg + n, body, blen);
    bool alive = conn_send(c, msg, total);
    free(msg);
    return alive;
}

static const char *find_header(const char *head, size_t len, const char *name, size_t *vlen) {
    size_t nlen = strlen(name);
    const char *p = memchr(head, '\n', len); /* skip the request line */
    const char *end = head + len;
    while (p && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if ((size_t)(eol - p) > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

static bool value_has(const char *v, size_t vlen, const char *token) {
    size_t tl = strlen(token);
    for (size_t i = 0; i + tl <= vlen; i++)
        if (strncasecmp(v + i, token, tl) == 0) return true;
    return false;
}

/* The hash of a request's session key, or 0. */
static uint64_t request_key(const char *target, size_t tlen, const char *body, size_t blen) {
    const char *qm = memchr(target, '?', tlen);
    size_t plen = qm ? (size_t)(qm - target) : tlen;
    if (plen > 6 && memcmp(target, "/user/", 6) == 0) {
        const char *k = target + 6;
        const char *slash = memchr(k, '/', plen - 6);
        size_t klen = slash ? (size_t)(slash - k) : plen - 6;
        if (klen) return fnv1a(k, klen);
    }
    if (qm) {
        const char *p = qm + 1, *end = target + tlen;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            const char *pe = amp ? amp : end;
            if (pe - p > 8 && memcmp(p, "session=", 8) == 0) return fnv1a(p + 8, (size_t)(pe - p - 8));
            p = pe + 1;
        }
    }
    const char *s = blen ? memmem(body, blen, "\"session\"", 9) : NULL;
    if (s) { /* crude JSON: "session" <ws> : <ws> "value" (benchmark keys need no escapes) */
        const char *p = s + 9, *end = body + blen;
        while (p < end && (*p == ' ' || *p == ':' || *p == '\t')) p++;
        if (p < end && *p == '"') {
            const char *e = memchr(p + 1, '"', (size_t)(end - p - 1));
            if (e) return fnv1a(p + 1, (size_t)(e - p - 1));
        }
    }
    for (const char *p = body, *end = body + blen; p && p + 6 <= end;) { /* form: token=<key> */
        if ((p == body || p[-1] == '&') && memcmp(p, "token=", 6) == 0) {
            const char *v = p + 6, *amp = memchr(v, '&', (size_t)(end - v));
            return fnv1a(v, (size_t)((amp ? amp : end) - v));
        }
        const char *amp = memchr(p, '&', (size_t)(end - p));
        p = amp ? amp + 1 : NULL;
    }
    return 0;
}

/* Parses the next complete request if the connection is free; returns false if closed. */
static bool process_input(conn_t *c) {
    while (!c->busy && !c->close_after) {
        const char *start = c->in;
        size_t avail = c->in_len;
        const char *hend = avail >= 4 ? memmem(start, avail, "\r\n\r\n", 4) : NULL;
        if (!hend) {
            if (avail >= MAX_HEAD)
                return send_status(c, "431 Request Header Fields Too Large", "", "text/plain", "", 0, true);
            return true;
        }
        size_t head_len = (size_t)(hend - start) + 4, vlen;
        const char *v;
        if ((v = find_header(start, head_len - 4, "transfer-encoding", &vlen)) && value_has(v, vlen, "chunked"))
            return send_status(c, "501 Not Implemented", "", "text/plain", "", 0, true);
        size_t clen = 0;
        if ((v = find_header(start, head_len - 4, "content-length", &vlen))) {
            char tmp[24] = {0};
            memcpy(tmp, v, vlen < 23 ? vlen : 23);
            char *e;
            unsigned long long x = strtoull(tmp, &e, 10);
            if (e == tmp || x > MAX_BODY) return send_status(c, "400 Bad Request", "", "text/plain", "", 0, true);
            clen = (size_t)x;
        }
        if (avail < head_len + clen) {
            if ((v = find_header(start, head_len - 4, "expect", &vlen)) && value_has(v, vlen, "100-continue") &&
                avail == head_len) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                return conn_send(c, cont, sizeof cont - 1);
            }
            return true;
        }
        const char *sp1 = memchr(start, ' ', head_len);
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', head_len - (size_t)(sp1 + 1 - start)) : NULL;
        if (!sp1 || !sp2) return send_status(c, "400 Bad Request", "", "text/plain", "", 0, true);
        const char *target = sp1 + 1;
        size_t tlen = (size_t)(sp2 - target);
        bool http10 = strncmp(sp2 + 1, "HTTP/1.0", 8) == 0;
        v = find_header(start, head_len - 4, "connection", &vlen);
        bool close_req = http10 ? !(v && value_has(v, vlen, "keep-alive")) : (v && value_has(v, vlen, "close"));
        uint64_t key = request_key(target, tlen, start + head_len, clen);
        bool stats = tlen >= 7 && memcmp(target, "/_stats", 7) == 0 && (tlen == 7 || target[7] == '?');
        bool keylist = tlen >= 6 && memcmp(target, "/_keys", 6) == 0 && (tlen == 6 || target[6] == '?');

        memmove(c->in, c->in + head_len + clen, c->in_len - head_len - clen);
        c->in_len -= head_len + clen;
        if (stats) {
            char body[4096];
            int n = stats_json(body, sizeof body);
            if (!send_status(c, "200 OK", "", "application/json", body, (size_t)n, close_req)) return false;
            continue;
        }
        if (keylist) {
            size_t n;
            char *text = keys_text(&n);
            bool alive = send_status(c, "200 OK", "", "text/plain", text, n, close_req);
            free(text);
            if (!alive) return false;
            continue;
        }
        n_requests++;
        if (!key) n_keyless++;
        if (!first_request_ns) first_request_ns = now_ns();
        if (!submit(c, key, close_req)) {
            n_503++;
            char extra[64];
            snprintf(extra, sizeof extra, "Retry-After: %d\r\n", retry_after_s);
            static const char busy[] = "{\"success\": false, \"error\": \"busy\"}";
            if (!send_status(c, "503 Service Unavailable", extra, "application/json", busy, sizeof busy - 1, close_req))
                return false;
            continue;
        }
        c->busy = true;
    }
    return true;
}

static void on_readable(conn_t *c) {
    for (;;) {
        if (c->in_cap - c->in_len < READ_CHUNK) {
            c->in_cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK * 2;
            c->in = xrealloc(c->in, c->in_cap);
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            if (c->close_after) c->in_len = 0;
            if (!process_input(c)) return;
            if ((size_t)n < READ_CHUNK) return;
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            /* Peer gone (or an error): a request in service still runs; its reply is dropped. */
            conn_close(c);
            return;
        } else if (errno != EINTR) {
            return;
        }
    }
}

static void on_accept(void) {
    for (int i = 0; i < 64 && n_open < (uint64_t)max_connections; i++) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE) {
                fprintf(stderr, "boundedserver: out of file descriptors at %llu open\n", (unsigned long long)n_open);
                arm_listener(false);
            }
            return;
        }
        if (fd >= max_fds) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = calloc(1, sizeof *c);
        if (!c) die("calloc");
        c->fd = fd;
        c->gen = fdgen[fd];
        c->idle_since = now_ns();
        conns[fd] = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl add");
        n_connections++;
        if (++n_open > max_open) max_open = n_open;
    }
    if (n_open >= (uint64_t)max_connections) arm_listener(false);
}

/* Sends the replies of finished requests. */
static void on_done(void) {
    uint64_t count;
    if (read(done_fd, &count, sizeof count) < 0 && errno != EAGAIN) die("read eventfd");
    pthread_mutex_lock(&lock);
    size_t n = done_len;
    job_t *batch = malloc((n ? n : 1) * sizeof *batch);
    if (!batch) die("malloc");
    memcpy(batch, done, n * sizeof *batch);
    done_len = 0;
    pthread_mutex_unlock(&lock);
    uint64_t t = now_ns();
    for (size_t i = 0; i < n; i++) {
        conn_t *c = conns[batch[i].fd];
        if (!c || c->gen != batch[i].gen) {
            n_dropped_replies++;
            continue;
        }
        c->busy = false;
        c->idle_since = t;
        if (batch[i].close_after) c->close_after = true;
        bool alive = batch[i].close_after ? conn_send(c, REPLY_OK_CLOSE, sizeof REPLY_OK_CLOSE - 1)
                                          : conn_send(c, REPLY_OK, sizeof REPLY_OK - 1);
        if (alive && c->in_len) process_input(c);
    }
    free(batch);
}

static void on_tick(void) {
    uint64_t expirations;
    if (read(timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd");
    sample_accept_queue();
    static uint64_t last_sweep;
    uint64_t t = now_ns();
    if (t - last_sweep < 100 * 1000000ull) return;
    last_sweep = t;
    for (int fd = 0; fd < max_fds; fd++) {
        conn_t *c = conns[fd];
        if (c && !c->busy && c->out_len == 0 && c->in_len == 0 && t - c->idle_since > keepalive_ns) {
            n_keepalive_closes++;
            conn_close(c);
        }
    }
}

/* ------------------------------------------------------------------ setup */

static void write_file_atomically(const char *path, const char *text, size_t len, mode_t mode) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) die(tmp);
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die(tmp);
        off += (size_t)n;
    }
    if (close(fd) < 0) die(tmp);
    if (rename(tmp, path) < 0) die("rename");
}

static int make_listener(const char *host, int port) {
    struct sockaddr_storage ss = {0};
    socklen_t slen;
    int family;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        family = s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        slen = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        family = s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        slen = sizeof *s6;
    } else {
        fprintf(stderr, "boundedserver: --host must be a numeric IPv4/IPv6 address\n");
        exit(2);
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, slen) < 0) die("bind");
    if (listen(fd, backlog) < 0) die("listen");
    return fd;
}

static int bound_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t slen = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &slen);
    return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void usage(FILE *f) {
    fprintf(f, "usage: boundedserver [--host 127.0.0.1] [--port 0] [--ready-file PATH] [--workers 16]\n"
               "                     [--backlog 64] [--max-connections 1024] [--service-ms 10]\n"
               "                     [--mode sleep|cpu] [--queue Q] [--retry-after 1] [--keepalive-ms 5000]\n"
               "                     [--keys-file PATH]\n");
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *ready_file = NULL, *keys_file = NULL;
    int port = 0;
    static const struct option opts[] = {
        {"host", required_argument, 0, 'h'},         {"port", required_argument, 0, 'p'},
        {"ready-file", required_argument, 0, 'r'},   {"workers", required_argument, 0, 'w'},
        {"backlog", required_argument, 0, 'b'},      {"max-connections", required_argument, 0, 'c'},
        {"service-ms", required_argument, 0, 's'},   {"mode", required_argument, 0, 'm'},
        {"queue", required_argument, 0, 'q'},        {"retry-after", required_argument, 0, 'a'},
        {"keepalive-ms", required_argument, 0, 'k'}, {"keys-file", required_argument, 0, 'K'},
        {"help", no_argument, 0, 'H'},               {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'r': ready_file = optarg; break;
        case 'w': n_workers = atoi(optarg); break;
        case 'b': backlog = atoi(optarg); break;
        case 'c': max_connections = atoi(optarg); break;
        case 's': service_ns = (uint64_t)(strtod(optarg, NULL) * 1e6); break;
        case 'm':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "sleep") != 0) {
                usage(stderr);
                return 2;
            }
            mode_cpu = strcmp(optarg, "cpu") == 0;
            break;
        case 'q': queue_limit = atol(optarg); break;
        case 'a': retry_after_s = atoi(optarg); break;
        case 'k': keepalive_ns = (uint64_t)strtoull(optarg, NULL, 10) * 1000000ull; break;
        case 'K': keys_file = optarg; break;
        case 'H': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (n_workers < 1 || backlog < 0 || max_connections < 1) {
        usage(stderr);
        return 2;
    }

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) perror("setrlimit (continuing)");
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    max_fds = rl.rlim_cur > (1u << 20) ? (1 << 20) : (int)rl.rlim_cur;
    if (max_connections + 16 > max_fds) {
        fprintf(stderr, "boundedserver: --max-connections %d exceeds the file descriptor limit %d\n",
                max_connections, max_fds);
        return 2;
    }
    conns = calloc((size_t)max_fds, sizeof *conns);
    fdgen = calloc((size_t)max_fds, sizeof *fdgen);
    if (!conns || !fdgen) die("calloc");

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* before the workers start: they inherit it */
    signal(SIGPIPE, SIG_IGN);
    signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (signal_fd < 0 || timer_fd < 0 || done_fd < 0 || epfd < 0) die("signalfd/timerfd/eventfd/epoll");
    read_netns(netns_start);

    for (int i = 0; i < n_workers; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        if (pthread_create(&t, &attr, worker_main, NULL) != 0) die("pthread_create");
        pthread_attr_destroy(&attr);
    }

    listen_fd = make_listener(host, port);
    int fds[] = {timer_fd, signal_fd, done_fd};
    for (int i = 0; i < 3; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0) die("epoll_ctl");
    }
    arm_listener(true);
    struct itimerspec its = {.it_interval = {0, (long)TICK_NS}, .it_value = {0, (long)TICK_NS}};
    if (timerfd_settime(timer_fd, 0, &its, NULL) < 0) die("timerfd_settime");
    port = bound_port(listen_fd);
    if (ready_file) {
        char text[32];
        int n = snprintf(text, sizeof text, "%d\n", port);
        write_file_atomically(ready_file, text, (size_t)n, 0644);
    }
    fprintf(stderr,
            "boundedserver: %s port %d, %d workers x %.1f ms (%s), backlog %d, max %d connections, queue %ld, "
            "keep-alive %llu ms\n",
            host, port, n_workers, service_ns / 1e6, mode_cpu ? "cpu" : "sleep", backlog, max_connections,
            queue_limit, (unsigned long long)(keepalive_ns / 1000000));

    struct epoll_event evs[128];
    for (;;) {
        int n = epoll_wait(epfd, evs, 128, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        sample_accept_queue();
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == listen_fd) {
                if (listener_armed) on_accept();
            } else if (fd == timer_fd) {
                on_tick();
            } else if (fd == done_fd) {
                on_done();
            } else if (fd == signal_fd) {
                char buf[4096];
                stats_json(buf, sizeof buf);
                printf("%s\n", buf);
                fflush(stdout);
                if (keys_file) {
                    size_t len;
                    char *text = keys_text(&len);
                    write_file_atomically(keys_file, text, len, 0600);
                    free(text);
                }
                return 0;
            } else {
                conn_t *c = conns[fd];
                if (!c) continue;
                if (evs[i].events & EPOLLOUT) {
                    if (!conn_flush(c)) continue;
                }
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
            }
        }
    }
}
