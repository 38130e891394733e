#include "ccurl_api.h"
#include "ccurl_sockets.h"
#include "ccurl_sockets_callbacks.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A released transfer keeps a body buffer up to this size, to avoid reallocating it for the
 * next small reply; a larger one is freed (after it was wiped, like every reply). */
#define RETAINED_BODY_BYTES (16 * 1024)

struct ccurl_transfer {
    CURL *easy;
    uint64_t tag;
    struct curl_slist *headers;
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    size_t max_body;
    size_t header_bytes;
    long long retry_after;
    int abort_reason;
    int connected;
    /* The socket libcurl opened for the current request, or CURL_SOCKET_BAD (on_socket). */
    curl_socket_t new_socket;
    /* Options of the current request that ccurl_transfer_release must clear. */
    int has_body;
    int has_method;
    /* The ccurl_sockets its connections report to (ccurl_transfer_report_sockets), or NULL. */
    ccurl_sockets *sockets;
    /* The CURLSH set by install or ccurl_transfer_use_share (NULL: none, or not since a reset). */
    CURLSH *share;
    char error[CURL_ERROR_SIZE];
};

/* Replies and header lines may carry secrets: memory that held them is zeroed before it is
 * reused or freed. explicit_bzero is not optimised away. */
static void wipe(void *bytes, size_t length) {
    if (bytes != NULL && length > 0) explicit_bzero(bytes, length);
}

static void (*reply_free_observer)(const uint8_t *bytes, size_t used);
static void (*body_piece_observer)(size_t length);

void ccurl_set_body_piece_observer(void (*observer)(size_t length)) { body_piece_observer = observer; }

void ccurl_set_reply_free_observer(void (*observer)(const uint8_t *bytes, size_t used)) {
    reply_free_observer = observer;
}

/* Frees a reply buffer whose first `used` bytes held reply data (wiped already). */
static void free_reply(uint8_t *body, size_t used) {
    if (body != NULL && reply_free_observer != NULL) reply_free_observer(body, used);
    free(body);
}

static void free_headers(struct curl_slist *headers) {
    for (struct curl_slist *item = headers; item != NULL; item = item->next)
        if (item->data != NULL) wipe(item->data, strlen(item->data));
    ccurl_api.slist_free_all(headers);
}

/* Keeps at most max_body bytes; on the first byte beyond it, aborts the transfer. Aborting
 * (rather than reading on and discarding) keeps a huge reply from spending the stop budget
 * and bandwidth; the status is already known when the body starts. */
static size_t on_body(char *data, size_t size, size_t count, void *userp) {
    ccurl_transfer *t = userp;
    size_t length = size * count;
    if (body_piece_observer != NULL) body_piece_observer(length);
    size_t room = t->max_body - t->body_length;
    size_t take = length < room ? length : room;
    if (take > 0) {
        size_t needed = t->body_length + take;
        if (needed > t->body_capacity) {
            /* Replies are mostly a few dozen bytes: start small, double from there. */
            size_t capacity = t->body_capacity < 256 ? 256 : t->body_capacity * 2;
            if (capacity < needed) capacity = needed;
            if (capacity > t->max_body) capacity = t->max_body;
            /* Not realloc: it would free the old buffer without wiping it. */
            uint8_t *grown = malloc(capacity);
            if (grown == NULL) {
                t->abort_reason = CCURL_ABORT_NO_MEMORY;
                return 0;
            }
            if (t->body != NULL) {
                memcpy(grown, t->body, t->body_length);
                wipe(t->body, t->body_length);
                free_reply(t->body, t->body_length);
            }
            t->body = grown;
            t->body_capacity = capacity;
        }
        memcpy(t->body + t->body_length, data, take);
        t->body_length += take;
    }
    if (take < length) {
        t->abort_reason = CCURL_ABORT_BODY_CAP;
        return 0;
    }
    return length;
}

static long long parse_retry_after(const char *value, size_t length) {
    char text[64];
    while (length > 0 && (*value == ' ' || *value == '\t')) {
        value++;
        length--;
    }
    while (length > 0 && (value[length - 1] == '\r' || value[length - 1] == '\n' ||
                          value[length - 1] == ' ' || value[length - 1] == '\t'))
        length--;
    if (length == 0 || length >= sizeof text) return -1;
    memcpy(text, value, length);
    text[length] = '\0';
    if (text[0] >= '0' && text[0] <= '9') {
        char *end = NULL;
        long long seconds = strtoll(text, &end, 10);
        return (end != NULL && *end == '\0' && seconds >= 0) ? seconds : -1;
    }
    time_t when = ccurl_api.getdate(text, NULL);
    if (when == (time_t)-1) return -1;
    time_t now = time(NULL);
    return when > now ? (long long)(when - now) : 0;
}

static size_t on_header(char *data, size_t size, size_t count, void *userp) {
    ccurl_transfer *t = userp;
    size_t length = size * count;
    t->header_bytes += length;
    if (t->header_bytes > CCURL_MAX_HEADER_BYTES) {
        t->abort_reason = CCURL_ABORT_HEADER_CAP;
        return 0;
    }
    static const char status_prefix[] = "HTTP/";
    static const char retry_name[] = "retry-after:";
    /* Most lines are neither: their first letter says so without a comparison. */
    char first = length > 0 ? data[0] : '\0';
    if (first == 'H' && length >= sizeof status_prefix - 1 && memcmp(data, status_prefix, sizeof status_prefix - 1) == 0) {
        /* A new response (after a 1xx, say): forget the previous one's headers. */
        t->retry_after = -1;
    } else if ((first == 'r' || first == 'R') && length >= sizeof retry_name - 1 &&
               strncasecmp(data, retry_name, sizeof retry_name - 1) == 0) {
        t->retry_after = parse_retry_after(data + sizeof retry_name - 1, length - (sizeof retry_name - 1));
    }
    return length;
}

/* CURLOPT_PREREQFUNCTION: the connection (TLS and ALPN included) is ready, the request is
 * about to be sent. */
static int on_connected(void *userp, char *primary_ip, char *local_ip, int primary_port, int local_port) {
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    ((ccurl_transfer *)userp)->connected = 1;
    return CURL_PREREQFUNC_OK;
}

/* CURLOPT_SOCKOPTFUNCTION: libcurl opened `fd` for a connection of this transfer. Kept for
 * ccurl_transfer_request_unacknowledged (CURLINFO_ACTIVESOCKET says nothing before the
 * transfer is done). */
static int on_socket(void *userp, curl_socket_t fd, curlsocktype purpose) {
    if (purpose == CURLSOCKTYPE_IPCXN) ((ccurl_transfer *)userp)->new_socket = fd;
    return CURL_SOCKOPT_OK;
}

/* The shim's own options: set once per easy handle, and again after a reset. */
static CURLcode install(ccurl_transfer *t, CURLSH *share) {
    CURLcode rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_PRIVATE, (char *)t)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_WRITEDATA, (void *)t)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_HEADERDATA, (void *)t)) != CURLE_OK) return rc;
    /* libcurl before 7.80 has no CURLOPT_PREREQFUNCTION: transfers then never report a
     * connection before they finish (ccurl_transfer_connected stays 0), which costs only speed. */
    rc = ccurl_api.easy_setopt(t->easy, CURLOPT_PREREQFUNCTION, on_connected);
    if (rc == CURLE_OK) rc = ccurl_api.easy_setopt(t->easy, CURLOPT_PREREQDATA, (void *)t);
    if (rc != CURLE_OK && rc != CURLE_UNKNOWN_OPTION) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_SOCKOPTFUNCTION, on_socket)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_SOCKOPTDATA, (void *)t)) != CURLE_OK) return rc;
    /* curl_easy_reset keeps the share but not its session cache's size: set it again. */
    t->share = NULL;
    if (share != NULL && (rc = ccurl_api.easy_setopt(t->easy, CURLOPT_SHARE, share)) != CURLE_OK) return rc;
    t->share = share;
    return CURLE_OK;
}

CURLcode ccurl_transfer_use_share(ccurl_transfer *t, CURLSH *share) {
    if (t->share == share) return CURLE_OK;
    CURLcode rc = ccurl_api.easy_setopt(t->easy, CURLOPT_SHARE, share);
    t->share = rc == CURLE_OK ? share : NULL;
    return rc;
}

ccurl_transfer *ccurl_transfer_new(CURLSH *share, CURLcode *error) {
    if (error != NULL) *error = CURLE_OUT_OF_MEMORY;
    if (!ccurl_is_loaded()) {
        if (error != NULL) *error = CURLE_FAILED_INIT;
        return NULL;
    }
    ccurl_transfer *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->new_socket = CURL_SOCKET_BAD;
    t->easy = ccurl_api.easy_init();
    if (t->easy == NULL) {
        free(t);
        return NULL;
    }
    t->retry_after = -1;
    CURLcode rc = install(t, share);
    if (rc != CURLE_OK) {
        if (error != NULL) *error = rc;
        ccurl_api.easy_cleanup(t->easy);
        free(t);
        return NULL;
    }
    return t;
}

CURLcode ccurl_transfer_reset(ccurl_transfer *t, CURLSH *share) {
    ccurl_api.easy_reset(t->easy);
    t->has_body = 0;
    t->has_method = 0;
    t->sockets = NULL;
    return install(t, share);
}

void ccurl_transfer_free(ccurl_transfer *t) {
    if (t == NULL) return;
    ccurl_transfer_release(t);
    ccurl_api.easy_cleanup(t->easy);
    wipe(t->body, t->body_capacity);
    free_reply(t->body, t->body_capacity);
    free(t);
}

CURL *ccurl_transfer_easy(ccurl_transfer *t) { return t->easy; }

CURLcode ccurl_transfer_report_sockets(ccurl_transfer *t, ccurl_sockets *sockets) {
    if (t->sockets == sockets) return CURLE_OK;
    CURLcode rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_OPENSOCKETFUNCTION, ccurl_sockets_open)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_OPENSOCKETDATA, (void *)sockets)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_CLOSESOCKETFUNCTION, ccurl_sockets_close)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_CLOSESOCKETDATA, (void *)sockets)) != CURLE_OK) return rc;
    t->sockets = sockets;
    return CURLE_OK;
}

ccurl_transfer *ccurl_transfer_of(CURL *easy) {
    char *private = NULL;
    if (ccurl_api.easy_getinfo(easy, CURLINFO_PRIVATE, &private) != CURLE_OK) return NULL;
    return (ccurl_transfer *)private;
}

uint64_t ccurl_transfer_tag(const ccurl_transfer *t) { return t->tag; }

void ccurl_transfer_begin(ccurl_transfer *t, uint64_t tag, size_t max_body) {
    t->tag = tag;
    t->max_body = max_body;
    t->body_length = 0;
    t->header_bytes = 0;
    t->retry_after = -1;
    t->abort_reason = CCURL_ABORT_NONE;
    t->connected = 0;
    t->new_socket = CURL_SOCKET_BAD;
    t->error[0] = '\0';
}

int ccurl_transfer_add_header(ccurl_transfer *t, const char *line) {
    struct curl_slist *grown = ccurl_api.slist_append(t->headers, line);
    if (grown == NULL) return -1;
    t->headers = grown;
    return 0;
}

CURLcode ccurl_transfer_set_body(ccurl_transfer *t, const uint8_t *bytes, size_t length) {
    CURLcode rc;
    t->has_body = 1;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_POST, 1L)) != CURLE_OK) return rc;
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length)) != CURLE_OK) return rc;
    /* libcurl copies the body: the caller's bytes need not outlive this call. */
    return ccurl_api.easy_setopt(t->easy, CURLOPT_COPYPOSTFIELDS, length > 0 ? (const char *)bytes : "");
}

CURLcode ccurl_transfer_set_method(ccurl_transfer *t, const char *method) {
    t->has_method = 1;
    return ccurl_api.easy_setopt(t->easy, CURLOPT_CUSTOMREQUEST, method);
}

CURLcode ccurl_transfer_apply_headers(ccurl_transfer *t) {
    if (t->headers == NULL) return CURLE_OK;
    return ccurl_api.easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
}

CURLcode ccurl_transfer_set_request(
    ccurl_transfer *t, const char *url, long timeout_ms, long connect_timeout_ms, int pipe_wait, const char **failed) {
    CURLcode rc;
    const char *option = "CURLOPT_URL";
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_URL, url)) != CURLE_OK) goto fail;
    option = "CURLOPT_TIMEOUT_MS";
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, timeout_ms)) != CURLE_OK) goto fail;
    option = "CURLOPT_CONNECTTIMEOUT_MS";
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms)) != CURLE_OK) goto fail;
    option = "CURLOPT_PIPEWAIT";
    if ((rc = ccurl_api.easy_setopt(t->easy, CURLOPT_PIPEWAIT, pipe_wait ? 1L : 0L)) != CURLE_OK) goto fail;
    return CURLE_OK;
fail:
    if (failed != NULL) *failed = option;
    return rc;
}

void ccurl_transfer_finished_info(ccurl_transfer *t, ccurl_finished_info *info) {
    memset(info, 0, sizeof *info);
    if (ccurl_api.easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &info->status) != CURLE_OK) info->status = 0;
    if (ccurl_api.easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &info->connects) != CURLE_OK) info->connects = 0;
    if (ccurl_api.easy_getinfo(t->easy, CURLINFO_PRIMARY_PORT, &info->port) != CURLE_OK) info->port = 0;
    if (ccurl_api.easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &info->http_version) != CURLE_OK) info->http_version = 0;
}

const uint8_t *ccurl_transfer_body(const ccurl_transfer *t, size_t *length) {
    *length = t->body_length;
    return t->body;
}

int ccurl_transfer_abort_reason(const ccurl_transfer *t) { return t->abort_reason; }

int ccurl_transfer_connected(const ccurl_transfer *t) { return t->connected; }

curl_socket_t ccurl_transfer_new_socket(const ccurl_transfer *t) { return t->new_socket; }

int ccurl_transfer_request_sent(ccurl_transfer *t) {
    /* libcurl resets the size only when the transfer begins: a pooled handle cancelled before
     * then still holds its last request's. The connection callback is this request's own. */
    if (!t->connected) return 0;
    long size = 0;
    if (ccurl_api.easy_getinfo(t->easy, CURLINFO_REQUEST_SIZE, &size) != CURLE_OK) return 0;
    return size > 0;
}

long long ccurl_transfer_retry_after(const ccurl_transfer *t) { return t->retry_after; }

const char *ccurl_transfer_error_text(const ccurl_transfer *t) { return t->error; }

void ccurl_transfer_release(ccurl_transfer *t) {
    /* libcurl frees its copies of the URL and the body (without wiping them: that is beyond the
     * shim's reach) and forgets the header list; the method goes back to GET. */
    ccurl_api.easy_setopt(t->easy, CURLOPT_URL, (char *)NULL);
    if (t->headers != NULL) {
        ccurl_api.easy_setopt(t->easy, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
        free_headers(t->headers);
        t->headers = NULL;
    }
    if (t->has_method) ccurl_api.easy_setopt(t->easy, CURLOPT_CUSTOMREQUEST, (char *)NULL);
    if (t->has_body) {
        ccurl_api.easy_setopt(t->easy, CURLOPT_POSTFIELDS, (char *)NULL);
        ccurl_api.easy_setopt(t->easy, CURLOPT_HTTPGET, 1L);
    }
    t->has_method = 0;
    t->has_body = 0;
    wipe(t->body, t->body_length);
    if (t->body_capacity > RETAINED_BODY_BYTES) {
        free_reply(t->body, t->body_length);
        t->body = NULL;
        t->body_capacity = 0;
    }
    t->body_length = 0;
    wipe(t->error, sizeof t->error);
}
