#include "ccurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- Loading --------------------------------------------------------------------------- */

/* Every libcurl function the shim calls. Each becomes a field of `api` typed from its
 * prototype in <curl/curl.h> (so the variadic setopt/getinfo stay variadic), resolved by name.
 * The names are never called directly: the shim does not link libcurl. */
#define CCURL_FUNCTIONS(X) \
    X(global_init)         \
    X(easy_init)           \
    X(easy_cleanup)        \
    X(easy_reset)          \
    X(easy_setopt)         \
    X(easy_getinfo)        \
    X(easy_strerror)       \
    X(multi_init)          \
    X(multi_cleanup)       \
    X(multi_setopt)        \
    X(multi_add_handle)    \
    X(multi_remove_handle) \
    X(multi_socket_action) \
    X(multi_info_read)     \
    X(multi_strerror)      \
    X(url)                 \
    X(url_set)             \
    X(url_get)             \
    X(url_cleanup)         \
    X(url_strerror)        \
    X(free)                \
    X(getdate)             \
    X(slist_append)        \
    X(slist_free_all)

struct ccurl_api {
#define CCURL_FIELD(name) __typeof__(&curl_##name) name;
    CCURL_FUNCTIONS(CCURL_FIELD)
#undef CCURL_FIELD
};

/* Filled once under load_lock, then published by `loaded` (release); read after an acquire
 * load of `loaded`, or through a handle, which only exists once it was set. */
static struct ccurl_api api;
static atomic_int loaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static char load_error[512];

static int is_loaded(void) { return atomic_load_explicit(&loaded, memory_order_acquire); }

static void set_load_error(const char *text) {
    snprintf(load_error, sizeof load_error, "%s", text != NULL ? text : "unknown dlopen failure");
}

/* dlsym(library, name) into *symbol: 1, or 0 with the reason recorded. */
static int resolve(void *library, const char *name, void **symbol) {
    (void)dlerror();
    *symbol = dlsym(library, name);
    if (*symbol != NULL) return 1;
    /* dlerror names the library and the symbol; it is NULL if the symbol's value was NULL. */
    const char *why = dlerror();
    char text[sizeof load_error];
    if (why == NULL) snprintf(text, sizeof text, "%s: symbol %s is NULL", CCURL_LIBRARY, name);
    set_load_error(why != NULL ? why : text);
    return 0;
}

int ccurl_load(void) {
    if (is_loaded()) return 0;
    pthread_mutex_lock(&load_lock);
    int rc = 0;
    if (!atomic_load_explicit(&loaded, memory_order_relaxed)) {
        rc = -1;
        void *library = dlopen(CCURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) {
            set_load_error(dlerror());
        } else {
            struct ccurl_api resolved;
            memset(&resolved, 0, sizeof resolved);
            void *symbol = NULL;
            int complete = 1;
#define CCURL_RESOLVE(name) \
    if (complete && (complete = resolve(library, "curl_" #name, &symbol))) \
        resolved.name = (__typeof__(resolved.name))symbol;
            CCURL_FUNCTIONS(CCURL_RESOLVE)
#undef CCURL_RESOLVE
            if (complete) {
                api = resolved;
                atomic_store_explicit(&loaded, 1, memory_order_release);
                load_error[0] = '\0';
                rc = 0;
            } else {
                /* A libcurl.so.4 older than 7.80 (no curl_url_strerror), say. */
                dlclose(library);
            }
        }
    }
    pthread_mutex_unlock(&load_lock);
    return rc;
}

const char *ccurl_load_error(void) { return load_error; }

/* ---- Global ---------------------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init_once(void) { global_result = api.global_init(CURL_GLOBAL_DEFAULT); }

CURLcode ccurl_global_init(void) {
    if (!is_loaded()) return CURLE_FAILED_INIT;
    pthread_once(&global_once, global_init_once);
    return global_result;
}

/* ---- Plain calls ----------------------------------------------------------------------- */

static const char not_loaded[] = "libcurl is not loaded";

CURLM *ccurl_multi_init(void) { return is_loaded() ? api.multi_init() : NULL; }

CURLMcode ccurl_multi_cleanup(CURLM *multi) { return api.multi_cleanup(multi); }

CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *easy) { return api.multi_add_handle(multi, easy); }

CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *easy) { return api.multi_remove_handle(multi, easy); }

CURLMcode ccurl_multi_socket_action(CURLM *multi, curl_socket_t fd, int ev_bitmask, int *running_handles) {
    return api.multi_socket_action(multi, fd, ev_bitmask, running_handles);
}

const char *ccurl_easy_strerror(CURLcode code) { return is_loaded() ? api.easy_strerror(code) : not_loaded; }

const char *ccurl_multi_strerror(CURLMcode code) { return is_loaded() ? api.multi_strerror(code) : not_loaded; }

const char *ccurl_url_strerror(CURLUcode code) { return is_loaded() ? api.url_strerror(code) : not_loaded; }

/* ---- Typed option wrappers ------------------------------------------------------------- */

CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value) {
    return api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value) {
    return api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_pointer(CURL *easy, CURLoption option, void *value) {
    return api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value) {
    return api.easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_off_t(CURL *easy, CURLINFO info, curl_off_t *value) {
    return api.easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value) {
    char *text = NULL;
    CURLcode rc = api.easy_getinfo(easy, info, &text);
    *value = text;
    return rc;
}

CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return api.multi_setopt(multi, option, value);
}

CURLMcode ccurl_multi_set_callbacks(
    CURLM *multi, curl_socket_callback socket_fn, curl_multi_timer_callback timer_fn, void *userp) {
    CURLMcode rc;
    if ((rc = api.multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_fn)) != CURLM_OK) return rc;
    if ((rc = api.multi_setopt(multi, CURLMOPT_SOCKETDATA, userp)) != CURLM_OK) return rc;
    if ((rc = api.multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_fn)) != CURLM_OK) return rc;
    return api.multi_setopt(multi, CURLMOPT_TIMERDATA, userp);
}

int ccurl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = api.multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        *easy = msg->easy_handle;
        *result = msg->data.result;
        return 1;
    }
    return 0;
}

int ccurl_parse_peer(const char *url, char *peer, size_t peer_cap, int *https) {
    if (!is_loaded()) return CURLUE_BAD_HANDLE;
    CURLU *parsed = api.url();
    if (parsed == NULL) return CURLUE_OUT_OF_MEMORY;
    char *scheme = NULL, *host = NULL, *port = NULL;
    CURLUcode rc = api.url_set(parsed, CURLUPART_URL, url, 0);
    if (rc == CURLUE_OK) rc = api.url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
    if (rc == CURLUE_OK) {
        if (strcmp(scheme, "http") == 0) *https = 0;
        else if (strcmp(scheme, "https") == 0) *https = 1;
        else rc = CURLUE_UNSUPPORTED_SCHEME;
    }
    if (rc == CURLUE_OK) rc = api.url_get(parsed, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK) rc = api.url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (rc == CURLUE_OK && peer_cap > 0) snprintf(peer, peer_cap, "%s:%s", host, port);
    api.free(scheme);
    api.free(host);
    api.free(port);
    api.url_cleanup(parsed);
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
    if (!is_loaded()) return NULL;
    ccurl_transfer *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->easy = api.easy_init();
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
    api.easy_cleanup(t->easy);
    free(t->body);
    free(t);
}

CURL *ccurl_transfer_easy(ccurl_transfer *t) { return t->easy; }

ccurl_transfer *ccurl_transfer_of(CURL *easy) {
    char *private = NULL;
    if (api.easy_getinfo(easy, CURLINFO_PRIVATE, &private) != CURLE_OK) return NULL;
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
    time_t when = api.getdate(text, NULL);
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
    if ((rc = api.easy_setopt(t->easy, CURLOPT_PRIVATE, (char *)t)) != CURLE_OK) return rc;
    if ((rc = api.easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error)) != CURLE_OK) return rc;
    if ((rc = api.easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body)) != CURLE_OK) return rc;
    if ((rc = api.easy_setopt(t->easy, CURLOPT_WRITEDATA, (void *)t)) != CURLE_OK) return rc;
    if ((rc = api.easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header)) != CURLE_OK) return rc;
    return api.easy_setopt(t->easy, CURLOPT_HEADERDATA, (void *)t);
}

int ccurl_transfer_add_header(ccurl_transfer *t, const char *line) {
    struct curl_slist *grown = api.slist_append(t->headers, line);
    if (grown == NULL) return -1;
    t->headers = grown;
    return 0;
}

CURLcode ccurl_transfer_apply_headers(ccurl_transfer *t) {
    if (t->headers == NULL) return CURLE_OK;
    return api.easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
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
    api.easy_reset(t->easy);
    api.slist_free_all(t->headers);
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
