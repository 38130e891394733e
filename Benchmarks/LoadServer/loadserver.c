/*
 * loadserver.c — minimal "end session" HTTP/1.1 server for session-cleanup benchmarks.
 *
 *   cc -O2 -o loadserver loadserver.c
 *   loadserver [--host 127.0.0.1] [--port 0] [--latency-ms 50] [--tick-us 1000]
 *              [--ready-file PATH]
 *
 * - Single thread, epoll (level-triggered), non-blocking sockets, HTTP/1.1 keep-alive and
 *   pipelining.  Listen backlog 4096; RLIMIT_NOFILE is raised to its hard limit.
 * - Every request except GET /_stats is answered with 200 {"success": true} exactly
 *   --latency-ms after it was fully received.  Because the latency is the same for every
 *   request, deadlines are non-decreasing in arrival order: the pending replies form a FIFO
 *   that is *already sorted by deadline*.  So the "timer wheel" is a ring buffer plus one
 *   timerfd armed for the head entry — O(1) per request, no thread or timer per request,
 *   any number of pending requests (memory: 16 bytes each).
 * - The timer is armed at the head deadline rounded UP to the next --tick-us boundary
 *   (default 1000 µs) and then sends every reply that is due.  Replies thus go out
 *   latency + [0, tick) after the request, never early, in batches; batching cut the
 *   server's CPU time by about a third compared with one timer wake-up per deadline
 *   (fewer epoll/timerfd calls, and the client is woken once per batch).  --tick-us 0
 *   fires at the exact deadline.
 * - Counts requests and unique session keys (key = path segment of /user/<key>/endsession,
 *   else ?session=<key>, else the "session" string in a JSON body).  Unique keys are kept as
 *   64-bit FNV-1a hashes: collisions are negligible for benchmark sizes (~1e-9 at 1e5 keys).
 * - GET /_stats answers at once with
 *     {"requests": N, "unique_keys": N, "stats_requests": N, "connections": N,
 *      "open_connections": N, "pending": N, "max_pending": N, "max_late_us": N,
 *      "late_ms": {"<1": N, "<2": N, "<5": N, "<10": N, ">=10": N},
 *      "cpu_user_s": F, "cpu_sys_s": F}
 *   requests excludes /_stats; max_late_us / late_ms: how long after its deadline
 *   (receipt + latency) each reply was sent — the server-side check that replies take
 *   "latency, not more" (includes the up-to-one-tick rounding); cpu_*: getrusage(SELF).
 *   Exception: on a connection that still has replies pending, /_stats is queued behind
 *   them (with the normal latency) to keep responses in request order.
 * - --port 0 picks a free port; it is written (temp file + rename) to --ready-file once
 *   listening.  SIGTERM/SIGINT print the same JSON to stdout and exit 0.
 *
 * Limits: request heads up to 64 KiB, bodies up to 1 MiB (Content-Length only; chunked
 * request bodies get 501 + close).  "Expect: 100-continue" is honoured.  No TLS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD (64 * 1024)
#define MAX_BODY (1024 * 1024)
#define MAX_OUT (4 * 1024 * 1024) /* client not reading its replies: drop it */
#define READ_CHUNK (16 * 1024)

static const char REPLY_OK[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
    "{\"success\": true}";
static const char REPLY_OK_CLOSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
    "Connection: close\r\n\r\n{\"success\": true}";

/* ------------------------------------------------------------------ connections */

typedef struct {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_cap;
    uint32_t pending;     /* replies of this connection still in the queue */
    bool no_more_input;   /* saw "Connection: close" (or an error): parse nothing more */
    bool close_when_done; /* close once pending == 0 and out is flushed */
    bool want_out;        /* EPOLLOUT registered */
    bool sent_continue;   /* 100 Continue already sent for the request being received */
} conn_t;

static conn_t **conns;  /* indexed by fd */
static uint32_t *fdgen; /* bumped on every close: invalidates queue entries of a dead fd */
static int max_fds;
static int epfd, listen_fd, timer_fd, signal_fd;
static int reserve_fd = -1; /* spare fd, released to shed a connection on EMFILE */

/* ------------------------------------------------------------------ pending queue */

enum { F_CLOSE = 1, F_STATS = 2 };
typedef struct {
    uint64_t deadline_ns;
    int32_t fd;
    uint32_t gen : 30, flags : 2;
} pending_t;

static pending_t *q;
static size_t q_cap, q_head, q_len; /* ring buffer, q_cap a power of two */

/* ------------------------------------------------------------------ counters */

static uint64_t n_requests, n_stats, n_connections, n_open, max_pending, max_late_ns;
/* How late replies went out past their deadline: <1 ms, <2, <5, <10, >=10 ms. */
static uint64_t late_hist[5];
static uint64_t latency_ns = 50 * 1000000ull;
static uint64_t tick_ns = 1000000ull; /* timer granularity, see header */

/* unique keys: open addressing set of non-zero 64-bit hashes */
static uint64_t *keyset;
static size_t keyset_cap, n_keys;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n);
    if (!p) die("realloc");
    return p;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

static void keyset_insert(uint64_t h) {
    if ((n_keys + 1) * 2 > keyset_cap) { /* keep load factor <= 1/2 */
        size_t ncap = keyset_cap ? keyset_cap * 2 : 1024;
        uint64_t *n = calloc(ncap, sizeof *n);
        if (!n) die("calloc");
        for (size_t i = 0; i < keyset_cap; i++) {
            if (!keyset[i]) continue;
            size_t j = keyset[i] & (ncap - 1);
            while (n[j]) j = (j + 1) & (ncap - 1);
            n[j] = keyset[i];
        }
        free(keyset);
        keyset = n;
        keyset_cap = ncap;
    }
    size_t j = h & (keyset_cap - 1);
    while (keyset[j]) {
        if (keyset[j] == h) return;
        j = (j + 1) & (keyset_cap - 1);
    }
    keyset[j] = h;
    n_keys++;
}

static void arm_timer(void) {
    struct itimerspec its = {0};
    if (q_len) {
        uint64_t d = q[q_head].deadline_ns;
        if (tick_ns > 1) d = (d + tick_ns - 1) / tick_ns * tick_ns;
        its.it_value.tv_sec = (time_t)(d / 1000000000ull);
        its.it_value.tv_nsec = (long)(d % 1000000000ull);
    } /* else all zero: disarm */
    if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime");
}

static void enqueue(conn_t *c, unsigned flags) {
    if (q_len == q_cap) { /* grow and unwrap the ring */
        size_t ncap = q_cap ? q_cap * 2 : 4096;
        pending_t *n = xrealloc(NULL, ncap * sizeof *n);
        for (size_t i = 0; i < q_len; i++) n[i] = q[(q_head + i) & (q_cap - 1)];
        free(q);
        q = n;
        q_cap = ncap;
        q_head = 0;
    }
    pending_t *e = &q[(q_head + q_len) & (q_cap - 1)];
    e->deadline_ns = now_ns() + latency_ns;
    e->fd = c->fd;
    e->gen = fdgen[c->fd] & 0x3fffffff;
    e->flags = flags & 3;
    c->pending++;
    if (++q_len == 1) arm_timer(); /* later entries never have earlier deadlines */
    if (q_len > max_pending) max_pending = q_len;
}

/* ------------------------------------------------------------------ connection I/O */

static void conn_close(conn_t *c) {
    close(c->fd); /* also removes it from the epoll set */
    fdgen[c->fd]++;
    conns[c->fd] = NULL;
    free(c->in);
    free(c->out);
    free(c);
    n_open--;
}

static void set_want_out(conn_t *c, bool want) {
    if (c->want_out == want) return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.fd = c->fd};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl mod");
    c->want_out = want;
}

/* Write what we can; keep the rest. Returns false if the connection was closed. */
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
    if (c->out_len == 0 && c->close_when_done && c->pending == 0) {
        conn_close(c);
        return false;
    }
    return true;
}

/* Queue bytes for sending and try to send them now. Returns false if closed. */
static bool conn_send(conn_t *c, const char *buf, size_t len) {
    if (c->out_len + len > MAX_OUT) {
        conn_close(c);
        return false;
    }
    if (c->out_len + len > c->out_cap) {
        c->out_cap = (c->out_len + len) * 2;
        c->out = xrealloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
    return conn_flush(c);
}

static int stats_json(char *buf, size_t cap) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return snprintf(buf, cap,
                    "{\"requests\": %llu, \"unique_keys\": %llu, \"stats_requests\": %llu, "
                    "\"connections\": %llu, \"open_connections\": %llu, \"pending\": %llu, "
                    "\"max_pending\": %llu, \"max_late_us\": %llu, "
                    "\"late_ms\": {\"<1\": %llu, \"<2\": %llu, \"<5\": %llu, \"<10\": %llu, \">=10\": %llu}, "
                    "\"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f}",
                    (unsigned long long)n_requests, (unsigned long long)n_keys,
                    (unsigned long long)n_stats, (unsigned long long)n_connections,
                    (unsigned long long)n_open, (unsigned long long)q_len,
                    (unsigned long long)max_pending, (unsigned long long)(max_late_ns / 1000),
                    (unsigned long long)late_hist[0], (unsigned long long)late_hist[1],
                    (unsigned long long)late_hist[2], (unsigned long long)late_hist[3],
                    (unsigned long long)late_hist[4],
                    ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
                    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

static bool send_stats(conn_t *c, bool close_after) {
    char body[1024], msg[1280];
    int blen = stats_json(body, sizeof body);
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n%s\r\n%s",
                     blen, close_after ? "Connection: close\r\n" : "", body);
    return conn_send(c, msg, (size_t)n);
}

/* Error reply, then stop reading and close after it is flushed. */
static bool send_error_close(conn_t *c, const char *status) {
    char msg[256];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    c->no_more_input = true;
    c->close_when_done = true;
    return conn_send(c, msg, (size_t)n);
}

/* ------------------------------------------------------------------ request parsing */

/* Case-insensitive search for a header; returns a pointer to its value (trimmed start)
 * and its length, or NULL.  head = request head without the final CRLFCRLF. */
static const char *find_header(const char *head, size_t len, const char *name, size_t *vlen) {
    size_t nlen = strlen(name);
    const char *p = memchr(head, '\n', len); /* skip request line */
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

/* Find the session key of a request and count it. */
static void count_key(const char *target, size_t tlen, const char *body, size_t blen) {
    const char *qm = memchr(target, '?', tlen);
    size_t plen = qm ? (size_t)(qm - target) : tlen;
    if (plen > 6 && memcmp(target, "/user/", 6) == 0) {
        const char *k = target + 6;
        const char *slash = memchr(k, '/', plen - 6);
        size_t klen = slash ? (size_t)(slash - k) : plen - 6;
        if (klen) {
            keyset_insert(fnv1a(k, klen));
            return;
        }
    }
    if (qm) {
        const char *p = qm + 1, *end = target + tlen;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            const char *pe = amp ? amp : end;
            if (pe - p > 8 && memcmp(p, "session=", 8) == 0) {
                keyset_insert(fnv1a(p + 8, (size_t)(pe - p - 8)));
                return;
            }
            p = pe + 1;
        }
    }
    /* crude JSON: "session" <ws> : <ws> "value" (no escapes — benchmark keys are plain) */
    const char *s = blen ? memmem(body, blen, "\"session\"", 9) : NULL;
    if (s) {
        const char *p = s + 9, *end = body + blen;
        while (p < end && (*p == ' ' || *p == ':' || *p == '\t')) p++;
        if (p < end && *p == '"') {
            const char *e = memchr(p + 1, '"', (size_t)(end - p - 1));
            if (e) keyset_insert(fnv1a(p + 1, (size_t)(e - p - 1)));
        }
    }
}

/* Parse and dispatch every complete request in c->in. Returns false if c was closed. */
static bool process_input(conn_t *c) {
    size_t off = 0;
    bool alive = true;
    while (!c->no_more_input) {
        const char *start = c->in + off;
        size_t avail = c->in_len - off;
        const char *hend = avail >= 4 ? memmem(start, avail, "\r\n\r\n", 4) : NULL;
        if (!hend) {
            if (avail >= MAX_HEAD) alive = send_error_close(c, "431 Request Header Fields Too Large");
            break;
        }
        size_t head_len = (size_t)(hend - start) + 4, vlen;
        const char *v;
        if ((v = find_header(start, head_len - 4, "transfer-encoding", &vlen)) &&
            value_has(v, vlen, "chunked")) {
            alive = send_error_close(c, "501 Not Implemented");
            break;
        }
        size_t clen = 0;
        if ((v = find_header(start, head_len - 4, "content-length", &vlen))) {
            char tmp[24] = {0};
            memcpy(tmp, v, vlen < 23 ? vlen : 23);
            char *e;
            unsigned long long x = strtoull(tmp, &e, 10);
            if (e == tmp || x > MAX_BODY) {
                alive = send_error_close(c, x > MAX_BODY ? "413 Content Too Large" : "400 Bad Request");
                break;
            }
            clen = (size_t)x;
        }
        if (avail < head_len + clen) { /* body incomplete */
            if (!c->sent_continue && (v = find_header(start, head_len - 4, "expect", &vlen)) &&
                value_has(v, vlen, "100-continue")) {
                c->sent_continue = true;
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                if (!(alive = conn_send(c, cont, sizeof cont - 1))) return false;
            }
            break;
        }
        c->sent_continue = false;

        /* request line: METHOD SP TARGET SP VERSION */
        const char *sp1 = memchr(start, ' ', head_len);
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', head_len - (size_t)(sp1 + 1 - start)) : NULL;
        if (!sp1 || !sp2) {
            alive = send_error_close(c, "400 Bad Request");
            break;
        }
        const char *target = sp1 + 1;
        size_t tlen = (size_t)(sp2 - target);
        bool http10 = strncmp(sp2 + 1, "HTTP/1.0", 8) == 0;
        v = find_header(start, head_len - 4, "connection", &vlen);
        bool close_req = http10 ? !(v && value_has(v, vlen, "keep-alive"))
                                : (v && value_has(v, vlen, "close"));
        if (close_req) c->no_more_input = true; /* ignore anything pipelined after it */

        if (tlen >= 7 && memcmp(target, "/_stats", 7) == 0 && (tlen == 7 || target[7] == '?')) {
            n_stats++;
            if (c->pending == 0 && c->out_len == 0) {
                if (close_req) c->close_when_done = true;
                if (!(alive = send_stats(c, close_req))) return false;
            } else {
                enqueue(c, F_STATS | (close_req ? F_CLOSE : 0));
            }
        } else {
            n_requests++;
            count_key(target, tlen, start + head_len, clen);
            enqueue(c, close_req ? F_CLOSE : 0);
        }
        off += head_len + clen;
    }
    if (!alive) return false;
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
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
            if (c->no_more_input) c->in_len = 0; /* discard */
            if (!process_input(c)) return;
            if ((size_t)n < READ_CHUNK) return; /* drained (most likely); epoll will tell */
        } else if (n == 0) {
            /* Peer closed. Pending replies can no longer be delivered: drop them. */
            conn_close(c);
            return;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        } else {
            conn_close(c);
            return;
        }
    }
}

static void on_accept(void) {
    /* Bounded, so that a connection storm cannot hold back due replies (see main loop). */
    for (int i = 0; i < 256; i++) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if ((errno == EMFILE || errno == ENFILE) && reserve_fd >= 0) {
                /* Out of fds: accept and drop one so the listen queue does not spin us. */
                close(reserve_fd);
                int t = accept(listen_fd, NULL, NULL);
                if (t >= 0) close(t);
                reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                fprintf(stderr, "loadserver: out of file descriptors, dropped a connection\n");
                continue;
            }
            return; /* EAGAIN: backlog drained */
        }
        if (fd >= max_fds) { /* cannot happen with the limit we set, but be safe */
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = calloc(1, sizeof *c);
        if (!c) die("calloc");
        c->fd = fd;
        conns[fd] = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl add");
        n_connections++;
        n_open++;
    }
}

/* Send every reply whose deadline has passed; re-arm the timer if anything was sent. */
static void deliver_due(void) {
    if (!q_len) return;
    uint64_t now = now_ns();
    if (q[q_head].deadline_ns > now) return;
    while (q_len && q[q_head].deadline_ns <= now) {
        pending_t e = q[q_head];
        q_head = (q_head + 1) & (q_cap - 1);
        q_len--;
        uint64_t late = now - e.deadline_ns;
        if (late > max_late_ns) max_late_ns = late;
        late_hist[late < 1000000 ? 0 : late < 2000000 ? 1 : late < 5000000 ? 2 : late < 10000000 ? 3 : 4]++;
        conn_t *c = conns[e.fd];
        if (!c || (fdgen[e.fd] & 0x3fffffff) != e.gen) continue; /* connection gone */
        c->pending--;
        if (e.flags & F_CLOSE) c->close_when_done = true;
        if (e.flags & F_STATS)
            send_stats(c, e.flags & F_CLOSE);
        else if (e.flags & F_CLOSE)
            conn_send(c, REPLY_OK_CLOSE, sizeof REPLY_OK_CLOSE - 1);
        else
            conn_send(c, REPLY_OK, sizeof REPLY_OK - 1);
    }
    arm_timer();
}

static void on_timer(void) {
    uint64_t expirations;
    if (read(timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd");
    deliver_due();
}

/* ------------------------------------------------------------------ setup */

static void write_ready_file(const char *path, int port) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) die(tmp);
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0) die(tmp);
    if (rename(tmp, path) < 0) die("rename ready file");
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
        fprintf(stderr, "loadserver: --host must be a numeric IPv4/IPv6 address\n");
        exit(2);
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, slen) < 0) die("bind");
    if (listen(fd, 4096) < 0) die("listen");
    if (getsockname(fd, (struct sockaddr *)&ss, &slen) < 0) die("getsockname");
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
    fprintf(f, "usage: loadserver [--host 127.0.0.1] [--port 0] [--latency-ms 50] "
               "[--tick-us 1000] [--ready-file PATH]\n");
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *ready_file = NULL;
    int port = 0;
    static const struct option opts[] = {
        {"host", required_argument, 0, 'h'},       {"port", required_argument, 0, 'p'},
        {"latency-ms", required_argument, 0, 'l'}, {"ready-file", required_argument, 0, 'r'},
        {"tick-us", required_argument, 0, 't'},    {"help", no_argument, 0, 'H'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'l': latency_ns = (uint64_t)strtoull(optarg, NULL, 10) * 1000000ull; break;
        case 'r': ready_file = optarg; break;
        case 't': tick_ns = (uint64_t)strtoull(optarg, NULL, 10) * 1000ull; break;
        case 'H': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }

    /* As many fds as we are allowed: one per concurrent client connection. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &rl) < 0) perror("setrlimit (continuing)");
            getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    max_fds = rl.rlim_cur > (1u << 20) ? (1 << 20) : (int)rl.rlim_cur;
    conns = calloc((size_t)max_fds, sizeof *conns);
    fdgen = calloc((size_t)max_fds, sizeof *fdgen);
    if (!conns || !fdgen) die("calloc");

    /* Signals arrive through a signalfd so the loop stays single-threaded and simple. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (signal_fd < 0 || timer_fd < 0 || epfd < 0) die("signalfd/timerfd/epoll");
    reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    listen_fd = make_listener(host, port);
    int fds[] = {listen_fd, timer_fd, signal_fd};
    for (int i = 0; i < 3; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0) die("epoll_ctl");
    }
    port = bound_port(listen_fd);
    if (ready_file) write_ready_file(ready_file, port);
    fprintf(stderr, "loadserver: listening on %s port %d, latency %llu ms, tick %llu us, max fds %d\n",
            host, port, (unsigned long long)(latency_ns / 1000000),
            (unsigned long long)(tick_ns / 1000), max_fds);

    /* Small batches, and due replies are sent after each batch: otherwise a burst of
     * accepts/closes (tens of µs each) delays the timer by tens of ms under load. */
    struct epoll_event evs[128];
    for (;;) {
        int n = epoll_wait(epfd, evs, 128, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == listen_fd) {
                on_accept();
            } else if (fd == timer_fd) {
                on_timer();
            } else if (fd == signal_fd) {
                char buf[1024];
                stats_json(buf, sizeof buf);
                printf("%s\n", buf);
                fflush(stdout);
                return 0;
            } else {
                conn_t *c = conns[fd];
                if (!c) continue; /* closed earlier in this batch */
                if (evs[i].events & EPOLLOUT) {
                    if (!conn_flush(c)) continue;
                }
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
            }
        }
        deliver_due();
    }
}
