#ifndef CCURL_H
#define CCURL_H
/*
 * CCurl: the only code in session-cleanup that touches libcurl directly.
 *
 * It adapts libcurl's multi interface in its socket-callback flavour so transfers run inside
 * the daemon's own epoll loop, and it gives Swift typed wrappers for libcurl's variadic
 * setopt/getinfo calls. Policy (which options a request gets) lives in Swift; this file only
 * provides mechanism: per-transfer state with a bounded reply buffer, a tag, and an error
 * buffer. Nothing here logs, and nothing here ever formats a URL into a message.
 *
 * libcurl is not linked: ccurl_load() dlopens CCURL_LIBRARY on first use and resolves every
 * libcurl function the shim calls. An idle daemon thus never maps libcurl and its dependency
 * tree (TLS, GSSAPI, LDAP, ...). Types and constants still come from <curl/curl.h>; only
 * linking differs. Callers use libcurl through the ccurl_* functions below only, never a
 * curl_* function directly (the program would not link). Every ccurl_* function other than
 * ccurl_load and ccurl_load_error requires a successful ccurl_load() first; those that take no
 * handle check it and fail (NULL, CURLE_FAILED_INIT, "libcurl is not loaded") otherwise.
 *
 * Files: ccurl_load.c (loading, the function table in ccurl_api.h), ccurl_calls.c (plain calls
 * and typed wrappers), ccurl_transfer.c (transfers), ccurl_share.c (the share: ccurl_share.h).
 */
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

/* Constants Swift cannot import from macros that expand to other macros. */
enum {
    CCURL_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT,
    CCURL_POLL_IN = CURL_POLL_IN,
    CCURL_POLL_OUT = CURL_POLL_OUT,
    CCURL_POLL_INOUT = CURL_POLL_INOUT,
    CCURL_POLL_REMOVE = CURL_POLL_REMOVE,
    CCURL_CSELECT_IN = CURL_CSELECT_IN,
    CCURL_CSELECT_OUT = CURL_CSELECT_OUT,
    CCURL_CSELECT_ERR = CURL_CSELECT_ERR,
};

/* Total header bytes one reply may carry before its transfer is aborted as too large. Headers
 * are never buffered (only Retry-After is parsed), so this bounds time, not memory. */
#define CCURL_MAX_HEADER_BYTES (64 * 1024)

/* Why the shim's own callbacks aborted a transfer, if they did. libcurl then reports
 * CURLE_WRITE_ERROR for it, and this says why. */
enum {
    CCURL_ABORT_NONE = 0,
    /* The body exceeded the transfer's cap: the first `cap` bytes are kept. The status line and
     * headers had been received in full. */
    CCURL_ABORT_BODY_CAP = 1,
    /* The headers exceeded CCURL_MAX_HEADER_BYTES. */
    CCURL_ABORT_HEADER_CAP = 2,
    /* Growing the body buffer failed. */
    CCURL_ABORT_NO_MEMORY = 3,
};

/* ---- Loading ----------------------------------------------------------------------------- */

/* The library ccurl_load() opens: libcurl's soname (ABI 4). */
#define CCURL_LIBRARY "libcurl.so.4"

/* Loads CCURL_LIBRARY (RTLD_NOW | RTLD_LOCAL) and resolves every libcurl function the shim
 * uses: 0, or -1 with the reason in ccurl_load_error(). Thread-safe; once it succeeded it
 * returns 0 at once and the library stays loaded for the life of the process. A failure is not
 * sticky: the next call tries again (say, after libcurl was reinstalled). */
int ccurl_load(void);
/* Why the last failed ccurl_load() failed (dlerror's text, which names the library or the
 * missing symbol), or "" if none failed. Valid until the next failing ccurl_load(). */
const char *ccurl_load_error(void);

/* curl_global_init(CURL_GLOBAL_DEFAULT), exactly once per process however often it is called
 * and from whichever thread, after ccurl_load() succeeded; returns its CURLcode (the first
 * call's, every time), or CURLE_FAILED_INIT without calling it when libcurl is not loaded. */
CURLcode ccurl_global_init(void);

/* The loaded libcurl's version as CURLVERSION_NOW's version_num (0xXXYYZZ: major, minor,
 * patch), from curl_version_info at run time (not the headers'), or 0 when libcurl is not
 * loaded. */
unsigned int ccurl_runtime_version(void);

/* ---- Plain libcurl calls: each calls the libcurl function of the same name. --------------- */

/* NULL when libcurl is not loaded. */
CURLM *ccurl_multi_init(void);
CURLMcode ccurl_multi_cleanup(CURLM *multi);
CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *easy);
CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *easy);
CURLMcode ccurl_multi_socket_action(CURLM *multi, curl_socket_t fd, int ev_bitmask, int *running_handles);
/* The *_strerror texts; "libcurl is not loaded" when it is not. */
const char *ccurl_easy_strerror(CURLcode code);
const char *ccurl_multi_strerror(CURLMcode code);
const char *ccurl_url_strerror(CURLUcode code);

/* Typed wrappers for the variadic curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt. */
CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value);
/* libcurl copies string options (except CURLOPT_POSTFIELDS, which this shim never uses). */
CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value);
/* A blob option (CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB: libcurl >= 7.71) with CURL_BLOB_COPY:
 * libcurl keeps its own copy, so `data` may be freed on return. NULL data clears the option.
 * Memory only: the bytes never go to a file. */
CURLcode ccurl_easy_set_blob(CURL *easy, CURLoption option, const void *data, size_t length);
CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value);
CURLcode ccurl_easy_get_off_t(CURL *easy, CURLINFO info, curl_off_t *value);
CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value);
CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value);

/* Socket and timer callbacks (CURLMOPT_SOCKETFUNCTION + SOCKETDATA, TIMERFUNCTION + TIMERDATA),
 * both given the same `userp`. */
CURLMcode ccurl_multi_set_callbacks(
    CURLM *multi, curl_socket_callback socket_fn, curl_multi_timer_callback timer_fn, void *userp);

/* Pops the next finished transfer: returns 1 and stores its easy handle and result, or 0 when
 * no finished transfer is queued. */
int ccurl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);

/* Parses `url` without keeping it: returns a CURLUcode (CURLUE_UNSUPPORTED_SCHEME unless
 * http or https; CURLUE_BAD_HANDLE when libcurl is not loaded); on success writes "host:port"
 * (port defaulted from the scheme, IPv6 hosts in brackets) into `peer`, truncated to fit, and
 * sets *https. Never writes the path or query. */
int ccurl_parse_peer(const char *url, char *peer, size_t peer_cap, int *https);

/* ---- Transfers ---------------------------------------------------------------------------
 * A transfer owns one easy handle plus what a request needs while it runs: its tag, a header
 * list, the reply buffer and an error buffer. Transfers are pooled by the caller, and an easy
 * handle keeps the options the caller set across requests (that is the point: a new request
 * sets only what differs): begin, set the request's options, run, read results, release,
 * begin again. Reply bytes, header lines and error text are wiped (explicit_bzero) before their
 * memory is reused or freed. */
typedef struct ccurl_transfer ccurl_transfer;

/* A new transfer with its own easy handle and the shim's options installed: CURLOPT_PRIVATE,
 * the error buffer, the body and header callbacks (which keep at most the cap given to
 * ccurl_transfer_begin), the connection-ready callback (ccurl_transfer_connected),
 * CURLOPT_NOSIGNAL, and CURLOPT_SHARE when `share` is not NULL. NULL
 * when out of memory, libcurl refused an option, or libcurl is not loaded; *error (if not
 * NULL) then says which. */
ccurl_transfer *ccurl_transfer_new(CURLSH *share, CURLcode *error);
/* curl_easy_reset, then the shim's options again (as ccurl_transfer_new): every option the
 * caller set is back to libcurl's default. The transfer must not be in a multi handle. */
CURLcode ccurl_transfer_reset(ccurl_transfer *t, CURLSH *share);
/* Makes the transfer use `share` (CURLOPT_SHARE) unless it already does. The transfer must not
 * be in a multi handle. */
CURLcode ccurl_transfer_use_share(ccurl_transfer *t, CURLSH *share);
/* Frees the transfer and its easy handle. It must not be in a multi handle. */
void ccurl_transfer_free(ccurl_transfer *t);
/* The transfer's easy handle. */
CURL *ccurl_transfer_easy(ccurl_transfer *t);
/* The transfer an easy handle belongs to (its CURLOPT_PRIVATE), or NULL. */
ccurl_transfer *ccurl_transfer_of(CURL *easy);

/* Starts a request on a new or released transfer: its tag and the most body it keeps. No
 * libcurl call: options are the caller's to set. */
void ccurl_transfer_begin(ccurl_transfer *t, uint64_t tag, size_t max_body);
/* The tag given to ccurl_transfer_begin. */
uint64_t ccurl_transfer_tag(const ccurl_transfer *t);

/* Makes the request a POST of `length` bytes (libcurl copies them); with
 * ccurl_transfer_set_method, another method with that body. Cleared by ccurl_transfer_release. */
CURLcode ccurl_transfer_set_body(ccurl_transfer *t, const uint8_t *bytes, size_t length);
/* CURLOPT_CUSTOMREQUEST for this request ("PUT", "DELETE"); cleared by ccurl_transfer_release. */
CURLcode ccurl_transfer_set_method(ccurl_transfer *t, const char *method);

/* Appends one "Name: value" line to the transfer's header list: 0, or -1 when out of memory. */
int ccurl_transfer_add_header(ccurl_transfer *t, const char *line);
/* Points CURLOPT_HTTPHEADER at the header list built so far (if any). */
CURLcode ccurl_transfer_apply_headers(ccurl_transfer *t);

/* The options every request sets anew, in one call: CURLOPT_URL, CURLOPT_TIMEOUT_MS,
 * CURLOPT_CONNECTTIMEOUT_MS and CURLOPT_PIPEWAIT. On failure *failed (if not NULL) names the
 * option libcurl refused; the options before it are set. */
CURLcode ccurl_transfer_set_request(
    ccurl_transfer *t, const char *url, long timeout_ms, long connect_timeout_ms, int pipe_wait, const char **failed);

/* What libcurl says of a finished transfer, read in one call (curl_easy_getinfo). */
typedef struct ccurl_finished_info {
    /* CURLINFO_RESPONSE_CODE: the last response's status, 0 without one. */
    long status;
    /* CURLINFO_NUM_CONNECTS: connections it opened (0: it reused one, or never connected). */
    long connects;
    /* CURLINFO_PRIMARY_PORT: the peer's port, 0 if it never connected. */
    long port;
    /* CURLINFO_HTTP_VERSION: CURL_HTTP_VERSION_1_0, _1_1, _2_0, or 0 without a response. */
    long http_version;
} ccurl_finished_info;

/* Fills `info` for a transfer libcurl has finished (a value libcurl cannot give stays 0). */
void ccurl_transfer_finished_info(ccurl_transfer *t, ccurl_finished_info *info);

/* The body received so far (at most the cap) and its length. */
const uint8_t *ccurl_transfer_body(const ccurl_transfer *t, size_t *length);
/* One of CCURL_ABORT_*. */
int ccurl_transfer_abort_reason(const ccurl_transfer *t);
/* 1 once the request's connection was ready (connected, TLS and ALPN done: libcurl's
 * CURLOPT_PREREQFUNCTION ran), else 0 (always 0 with a libcurl older than 7.80). */
int ccurl_transfer_connected(const ccurl_transfer *t);
/* 1 once libcurl wrote the request (connected, and CURLINFO_REQUEST_SIZE > 0: the request's bytes went to the
 * connection's socket, or for HTTP/2 into its session), else 0. Checked against libcurl 7.88:
 * 0 for a refused connect or a transfer still waiting for a connection; > 0 after a timeout or
 * a dropped connection once the request was written. A server may have acted on a request
 * written; one never written it cannot have. Always 0 with a libcurl older than 7.80 (see
 * ccurl_transfer_connected). Valid until the transfer is reused. */
int ccurl_transfer_request_sent(ccurl_transfer *t);
/* 1 when the transfer's request was written to a TCP connection whose peer acknowledged none of
 * its bytes after at least two retransmissions (TCP_INFO: established, tcpi_bytes_acked 1 (the SYN),
 * segments unacknowledged, tcpi_total_retrans >= 2): the server's kernel dropped them (its
 * accept queue was full when the handshake's last ACK came), so the server cannot have the
 * request. 0 otherwise, and whenever it cannot tell (no socket, TLS or HTTP/2 connections whose
 * earlier bytes were acknowledged, a kernel older than 4.1). Only while the transfer is active. */
int ccurl_transfer_request_unacknowledged(ccurl_transfer *t);
/* 1 while the TCP connection libcurl opened for the transfer still waits for the server's
 * SYN-ACK (TCP_INFO: SYN_SENT): a SYN a full accept queue dropped waits for the kernel's
 * retransmission, 1 s, then 3 s ... 0 otherwise, and whenever it cannot tell. */
int ccurl_transfer_connect_pending(ccurl_transfer *t);
/* Once connected over TLS: 1 when ALPN chose HTTP/2 ("h2"), 0 when it chose anything else or
 * nothing (libcurl then speaks HTTP/1.1), -1 when it cannot tell (no TLS connection, a TLS
 * library other than OpenSSL, or OpenSSL's libssl.so.3 not loaded). */
int ccurl_transfer_alpn_http2(ccurl_transfer *t);
/* Seconds from the last response's Retry-After (delta-seconds, or an HTTP-date converted to
 * seconds from now, never negative), or -1 when it had none or it did not parse. */
long long ccurl_transfer_retry_after(const ccurl_transfer *t);
/* libcurl's error buffer for the transfer's last failure ("" when none). May name the host;
 * callers must still scrub it before showing it to anyone. */
const char *ccurl_transfer_error_text(const ccurl_transfer *t);

/* Forgets the finished request so a pooled transfer keeps no secret of it: clears the easy
 * handle's URL and whatever of header list, body and custom method it had (back to GET), wipes
 * and frees the header list, wipes the reply (and frees a buffer beyond a small retained size)
 * and the error text. Every other option stays. The transfer must not be in a multi handle. A
 * request's body and method must be set with ccurl_transfer_set_body / _set_method for this to
 * clear them. */
void ccurl_transfer_release(ccurl_transfer *t);

/* For tests: `observer` is called with the length of every piece of reply body libcurl hands
 * over (at most the handle's CURLOPT_BUFFERSIZE each). NULL (the default) calls nothing. Not
 * thread-safe: set it while no transfer runs. */
void ccurl_set_body_piece_observer(void (*observer)(size_t length));

/* For tests: `observer` is called with every reply buffer just before it is freed (grown,
 * released beyond the retained size, or freed with its transfer) and the number of its bytes
 * that held reply data, which must be zero by then. NULL (the default) calls nothing. Not
 * thread-safe: set it while no transfer runs. */
void ccurl_set_reply_free_observer(void (*observer)(const uint8_t *bytes, size_t used));

#endif
