#include "ccurl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- Global ---------------------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init_once(void) { global_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

CURLcode ccurl_global_init(void) {
    pthread_once(&global_once, global_init_once);
    return global_result;
}

/* ---- Typed option wrappers ------------------------------------------------------------- */

CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_off_t(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value) {
    char *text = NULL;
    CURLcode rc = curl_easy_getinfo(easy, info, &text);
    *value = text;
    return rc;
}

CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLMcode ccurl_multi_set_callbacks(
    CURLM *multi, curl_socket_callback socket_fn, curl_multi_timer_callback timer_fn, void *userp) {
    CURLMcode rc;
    if ((rc = curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_fn)) != CURLM_OK) return rc;
    if ((rc = curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, userp)) != CURLM_OK) return rc;
    if ((rc = curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_fn)) != CURLM_OK) return rc;
    return curl_multi_setopt(multi, CURLMOPT_TIMERDATA, userp);
}

int ccurl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        *easy = msg->easy_handle;
        *result = msg->data.result;
        return 1;
    }
    return 0;
}

int ccurl_parse_peer(const char *url, char *peer, size_t peer_cap, int *https) {
    CURLU *parsed = curl_url();
    if (parsed == NULL) return CURLUE_OUT_OF_MEMORY;
    char *scheme = NULL, *host = NULL, *port = NULL;
    CURLUcode rc = curl_url_set(parsed, CURLUPART_URL, url, 0);
    if (rc == CURLUE_OK) rc = curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
    if (rc == CURLUE_OK) {
        if (strcmp(scheme, "http") == 0) *https = 0;
        else if (strcmp(scheme, "https") == 0) *https = 1;
        else rc = CURLUE_UNSUPPORTED_SCHEME;
    }
    if (rc == CURLUE_OK) rc = curl_url_get(parsed, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK) rc = curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (rc == CURLUE_OK && peer_cap > 0) snprintf(peer, peer_cap, "%s:%s", host, port);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(parsed);
    return rc;
}

/* ---- Transfers ------------------------------------------------------------------------- */

/* A released transfer keeps a body buffer up to this size, to avoid reallocating it for the
 * next small reply; a larger one is freed. */
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
    char error[CURL_ERROR_SIZE];
};

ccurl_transfer *ccurl_transfer_new(void) {
    ccurl_transfer *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->easy = curl_easy_init();
    if (t->easy == NULL) {
        free(t);
        return NULL;
    }
    t->retry_after = -1;
    return t;
}

void ccurl_transfer_free(ccurl_transfer *t) {
    if (t == NULL) return;
    ccurl_transfer_release(t);
    curl_easy_cleanup(t->easy);
    free(t->body);
    free(t);
}

CURL *ccurl_transfer_easy(ccurl_transfer *t) { return t->easy; }

ccurl_transfer *ccurl_transfer_of(CURL *easy) {
    char *private = NULL;
    if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &private) != CURLE_OK) return NULL;
    return (ccurl_transfer *)private;
}

uint64_t ccurl_transfer_tag(const ccurl_transfer *t) { return t->tag; }

/* Keeps at most max_body bytes; on the first byte beyond it, aborts the transfer. Aborting
 * (rather than reading on and discarding) keeps a huge reply from spending the stop budget
 * and bandwidth; the status is already known when the body starts. */
static size_t on_body(char *data, size_t size, size_t count, void *userp) {
    ccurl_transfer *t = userp;
    size_t length = size * count;
    size_t room = t->max_body - t->body_length;
    size_t take = length < room ? length : room;
    if (take > 0) {
        size_t needed = t->body_length + take;
        if (needed > t->body_capacity) {
            size_t capacity = t->body_capacity < 4096 ? 4096 : t->body_capacity * 2;
            if (capacity < needed) capacity = needed;
            if (capacity > t->max_body) capacity = t->max_body;
            uint8_t *grown = realloc(t->body, capacity);
            if (grown == NULL) {
                t->abort_reason = CCURL_ABORT_NO_MEMORY;
                return 0;
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
    time_t when = curl_getdate(text, NULL);
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
    if (length >= sizeof status_prefix - 1 && memcmp(data, status_prefix, sizeof status_prefix - 1) == 0) {
        /* A new response (after a 1xx, say): forget the previous one's headers. */
        t->retry_after = -1;
    } else if (length >= sizeof retry_name - 1 && strncasecmp(data, retry_name, sizeof retry_name - 1) == 0) {
        t->retry_after = parse_retry_after(data + sizeof retry_name - 1, length - (sizeof retry_name - 1));
    }
    return length;
}

CURLcode ccurl_transfer_prepare(ccurl_transfer *t, uint64_t tag, size_t max_body) {
    t->tag = tag;
    t->max_body = max_body;
    t->body_length = 0;
    t->header_bytes = 0;
    t->retry_after = -1;
    t->abort_reason = CCURL_ABORT_NONE;
    t->error[0] = '\0';
    CURLcode rc;
    if ((rc = curl_easy_setopt(t->easy, CURLOPT_PRIVATE, (char *)t)) != CURLE_OK) return rc;
    if ((rc = curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error)) != CURLE_OK) return rc;
    if ((rc = curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body)) != CURLE_OK) return rc;
    if ((rc = curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, (void *)t)) != CURLE_OK) return rc;
    if ((rc = curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header)) != CURLE_OK) return rc;
    return curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, (void *)t);
}

int ccurl_transfer_add_header(ccurl_transfer *t, const char *line) {
    struct curl_slist *grown = curl_slist_append(t->headers, line);
    if (grown == NULL) return -1;
    t->headers = grown;
    return 0;
}

CURLcode ccurl_transfer_apply_headers(ccurl_transfer *t) {
    if (t->headers == NULL) return CURLE_OK;
    return curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
}

const uint8_t *ccurl_transfer_body(const ccurl_transfer *t, size_t *length) {
    *length = t->body_length;
    return t->body;
}

int ccurl_transfer_abort_reason(const ccurl_transfer *t) { return t->abort_reason; }

long long ccurl_transfer_retry_after(const ccurl_transfer *t) { return t->retry_after; }

const char *ccurl_transfer_error_text(const ccurl_transfer *t) { return t->error; }

void ccurl_transfer_release(ccurl_transfer *t) {
    /* Back to defaults: frees libcurl's copies of the URL and body, forgets the header list. */
    curl_easy_reset(t->easy);
    curl_slist_free_all(t->headers);
    t->headers = NULL;
    if (t->body_capacity > RETAINED_BODY_BYTES) {
        free(t->body);
        t->body = NULL;
        t->body_capacity = 0;
    } else if (t->body != NULL) {
        /* Replies may be secret too: do not leave one lying in a pooled buffer. */
        memset(t->body, 0, t->body_length);
    }
    t->body_length = 0;
    t->error[0] = '\0';
}
