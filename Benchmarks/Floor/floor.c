/*
 * floor — the least a libcurl client can do for a stop run: the benchmark's C floor.
 *
 *   floor --urls FILE [--parallel N] [--cafile PEM] [--http 1.1|2] [--maxconnects N] [--pipewait 0|1]
 *         [--user-agent TEXT]
 *
 * The same design as the daemon's engine, without a daemon around it: one thread, one epoll
 * loop driving libcurl's multi interface through its socket and timer callbacks, N transfers in
 * flight (default 256), a pool of N easy handles whose options are set once (a new transfer
 * only changes the URL), CURLSHs sharing TLS sessions and DNS — one per group of 8 origins, as
 * many as a share's session cache holds in libcurl 7.88 — the private CA alone (--cafile, no
 * CA directory, which also lets libcurl cache the parsed CA between connections), and
 * replacements started only after every completion of a wake-up has returned its connection.
 * It GETs each line of FILE once, in order, keeps at most 64 KiB of each reply, and prints one
 * JSON line: calls, 2xx replies, failures, connections opened (CURLINFO_NUM_CONNECTS), HTTP/2
 * replies.
 * Exit 0 when every call got a 2xx reply.
 *
 * --pipewait 1: each transfer waits for a connection it may multiplex on (CURLOPT_PIPEWAIT).
 *
 * --user-agent TEXT: every request carries `User-Agent: TEXT` (a header list made once, set on
 * each handle once), as the daemon's and curl's requests carry theirs; without it, none.
 *
 * Connections: no total limit; up to --maxconnects kept idle (default 4 × N, libcurl's own
 * default for a multi handle); per host as many as there are transfers for it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY (64 * 1024)
/* Origins per share: libcurl 7.88's share caches 8 TLS sessions (one per host and port). */
#define SHARE_ORIGINS 8

struct handle {
    CURL *easy;
    CURLSH *share;
    size_t body_length;
    char body[256];
};

static CURLM *multi;
static int epfd;
/* When libcurl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT), in µs; -1: never. */
static long long timer_due_us = -1;
static char **urls;
/* url_share[i]: the share for urls[i]'s origin (numbered in the order first met); NULL when
 * there are at most 8 origins and every transfer uses the one share (nothing kept per URL, so
 * the memory and instruction figures of a 1-origin run are those of a single share). */
static CURLSH **url_share;
static CURLSH *only_share;
static size_t url_count, next_url;
static size_t calls, ok, failed, connects, http2;
static struct handle **idle;
static size_t idle_count;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static size_t on_body(char *data, size_t size, size_t count, void *userp) {
    struct handle *h = userp;
    size_t length = size * count;
    if (h->body_length + length > MAX_BODY) return 0;
    size_t keep = sizeof h->body - h->body_length;
    if (keep > length) keep = length;
    memcpy(h->body + h->body_length, data, keep);
    h->body_length += length;
    return length;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
    (void)easy;
    (void)userp;
    struct epoll_event event = {.data.fd = fd};
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    if (what & CURL_POLL_IN) event.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) event.events |= EPOLLOUT;
    /* libcurl's socketp says whether it was added before. */
    if (socketp == NULL) {
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) < 0 && errno != EEXIST) die("epoll_ctl ADD");
        curl_multi_assign(multi, fd, (void *)1);
    } else if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event) < 0) {
        die("epoll_ctl MOD");
    }
    return 0;
}

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int on_timer(CURLM *m, long ms, void *userp) {
    (void)m;
    (void)userp;
    timer_due_us = ms < 0 ? -1 : now_us() + (long long)ms * 1000;
    return 0;
}

static void start_next(void) {
    while (idle_count > 0 && next_url < url_count) {
        struct handle *h = idle[--idle_count];
        h->body_length = 0;
        CURLSH *share = url_share != NULL ? url_share[next_url] : only_share;
        if (h->share != share) {
            h->share = share;
            curl_easy_setopt(h->easy, CURLOPT_SHARE, share);
        }
        curl_easy_setopt(h->easy, CURLOPT_URL, urls[next_url++]);
        if (curl_multi_add_handle(multi, h->easy) != CURLM_OK) die("curl_multi_add_handle");
    }
}

static void collect(void) {
    CURLMsg *msg;
    int queued;
    while ((msg = curl_multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        struct handle *h = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        long status = 0, n = 0, version = 0;
        curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h->easy, CURLINFO_NUM_CONNECTS, &n);
        curl_easy_getinfo(h->easy, CURLINFO_HTTP_VERSION, &version);
        calls++;
        connects += (size_t)n;
        if (version == CURL_HTTP_VERSION_2_0) http2++;
        if (msg->data.result == CURLE_OK && status >= 200 && status < 300) {
            ok++;
        } else {
            failed++;
            if (failed <= 5)
                fprintf(stderr, "floor: %s, HTTP %ld\n", curl_easy_strerror(msg->data.result), status);
        }
        curl_multi_remove_handle(multi, h->easy);
        idle[idle_count++] = h;
    }
    /* Only now: every finished transfer of this wake-up has given its connection back. */
    start_next();
}

/* The measured part (callgrind: --toggle-collect=floor_run). */
void floor_run(void);
void floor_run(void) {
    int running = 0;
    start_next();
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    collect();
    struct epoll_event events[512];
    while (calls < url_count) {
        /* Rounded up: waking before the timer is due would only spin. */
        long long wait = timer_due_us < 0 ? 1000000 : timer_due_us - now_us();
        int n = epoll_wait(epfd, events, 512, wait <= 0 ? 0 : (int)((wait + 999) / 1000));
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            int mask = 0;
            if (events[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
            if (events[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
            if (events[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
            curl_multi_socket_action(multi, events[i].data.fd, mask, &running);
        }
        if (timer_due_us >= 0 && now_us() >= timer_due_us) {
            timer_due_us = -1;
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        collect();
    }
}

static CURLSH *new_share(void) {
    CURLSH *share = curl_share_init();
    if (share == NULL) die("curl_share_init");
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    return share;
}

/* The number of urls[i]'s origin (scheme://host:port, up to the path), in the order first met:
 * an open-addressing table of 2^16 slots. */
static size_t origin_count;
static size_t origin_number(size_t i) {
    enum { SLOTS = 1 << 16 };
    static struct { const char *origin; size_t length, number; } table[SLOTS];
    const char *scheme_end = strstr(urls[i], "://");
    const char *start = scheme_end ? scheme_end + 3 : urls[i];
    size_t length = (size_t)(start - urls[i]) + strcspn(start, "/?#");
    uint32_t hash = 2166136261u;
    for (size_t k = 0; k < length; k++) hash = (hash ^ (unsigned char)urls[i][k]) * 16777619u;
    size_t slot = hash & (SLOTS - 1);
    while (table[slot].origin != NULL &&
           (table[slot].length != length || memcmp(table[slot].origin, urls[i], length) != 0))
        slot = (slot + 1) & (SLOTS - 1);
    if (table[slot].origin == NULL) {
        if (origin_count == SLOTS / 2) die("more than 32,768 origins");
        table[slot].origin = urls[i];
        table[slot].length = length;
        table[slot].number = origin_count++;
    }
    return table[slot].number;
}

/* Gives each URL the share of its origin's group of SHARE_ORIGINS. */
static void assign_shares(void) {
    for (size_t i = 0; i < url_count; i++) origin_number(i);
    if (origin_count <= SHARE_ORIGINS) {
        only_share = new_share();
        return;
    }
    size_t groups = (origin_count + SHARE_ORIGINS - 1) / SHARE_ORIGINS;
    CURLSH **shares = calloc(groups, sizeof *shares);
    url_share = calloc(url_count, sizeof *url_share);
    if (shares == NULL || url_share == NULL) die("calloc");
    for (size_t g = 0; g < groups; g++) shares[g] = new_share();
    for (size_t i = 0; i < url_count; i++) url_share[i] = shares[origin_number(i) / SHARE_ORIGINS];
}

static void read_urls(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) die(path);
    size_t capacity = 1024;
    urls = malloc(capacity * sizeof *urls);
    char *line = NULL;
    size_t length = 0;
    ssize_t got;
    while ((got = getline(&line, &length, f)) > 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        if (got == 0) continue;
        if (url_count == capacity) urls = realloc(urls, (capacity *= 2) * sizeof *urls);
        if (urls == NULL) die("realloc");
        urls[url_count++] = strdup(line);
    }
    free(line);
    fclose(f);
}

int main(int argc, char **argv) {
    const char *url_file = NULL, *cafile = NULL, *http = "1.1", *user_agent = NULL;
    long parallel = 256, maxconnects = -1, pipewait = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--urls") == 0 && i + 1 < argc) url_file = argv[++i];
        else if (strcmp(argv[i], "--parallel") == 0 && i + 1 < argc) parallel = atol(argv[++i]);
        else if (strcmp(argv[i], "--cafile") == 0 && i + 1 < argc) cafile = argv[++i];
        else if (strcmp(argv[i], "--http") == 0 && i + 1 < argc) http = argv[++i];
        else if (strcmp(argv[i], "--maxconnects") == 0 && i + 1 < argc) maxconnects = atol(argv[++i]);
        else if (strcmp(argv[i], "--pipewait") == 0 && i + 1 < argc) pipewait = atol(argv[++i]);
        else if (strcmp(argv[i], "--user-agent") == 0 && i + 1 < argc) user_agent = argv[++i];
        else {
            fprintf(stderr, "usage: floor --urls FILE [--parallel N] [--cafile PEM] [--http 1.1|2] "
                            "[--maxconnects N] [--pipewait 0|1] [--user-agent TEXT]\n");
            return 2;
        }
    }
    if (url_file == NULL || parallel < 1) return 2;
    read_urls(url_file);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) die("curl_global_init");
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, maxconnects > 0 ? maxconnects : 4 * parallel);
    assign_shares();
    long version = strcmp(http, "2") == 0 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1;
    struct curl_slist *headers = NULL;
    if (user_agent != NULL) {
        char line[256];
        snprintf(line, sizeof line, "User-Agent: %s", user_agent);
        if ((headers = curl_slist_append(NULL, line)) == NULL) die("curl_slist_append");
    }

    idle = calloc((size_t)parallel, sizeof *idle);
    for (long i = 0; i < parallel; i++) {
        struct handle *h = calloc(1, sizeof *h);
        h->easy = curl_easy_init();
        if (h == NULL || h->easy == NULL) die("curl_easy_init");
        curl_easy_setopt(h->easy, CURLOPT_PRIVATE, (char *)h);
        curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h->easy, CURLOPT_WRITEDATA, h);
        curl_easy_setopt(h->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h->easy, CURLOPT_PROXY, "");
        curl_easy_setopt(h->easy, CURLOPT_HTTP_VERSION, version);
        curl_easy_setopt(h->easy, CURLOPT_TIMEOUT_MS, 60000L);
        curl_easy_setopt(h->easy, CURLOPT_PIPEWAIT, pipewait);
        if (headers != NULL) curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, headers);
        if (cafile != NULL) {
            /* The private CA alone, as the daemon sets it (CAFile=): without a CA directory
             * (Debian's libcurl has /etc/ssl/certs built in) libcurl also keeps the parsed CA
             * for the next connection instead of reading the file for each. */
            curl_easy_setopt(h->easy, CURLOPT_CAINFO, cafile);
            curl_easy_setopt(h->easy, CURLOPT_CAPATH, NULL);
        }
        idle[idle_count++] = h;
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    floor_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("{\"calls\": %zu, \"ok\": %zu, \"failed\": %zu, \"connects\": %zu, \"http2\": %zu, \"wall_s\": %.4f}\n",
           calls, ok, failed, connects, http2, wall);
    return failed == 0 ? 0 : 1;
}
