#include "ccurl_api.h"

#include <stdio.h>
#include <string.h>

/* ---- Plain calls ----------------------------------------------------------------------- */

CURLM *ccurl_multi_init(void) { return ccurl_is_loaded() ? ccurl_api.multi_init() : NULL; }

CURLMcode ccurl_multi_cleanup(CURLM *multi) { return ccurl_api.multi_cleanup(multi); }

CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *easy) { return ccurl_api.multi_add_handle(multi, easy); }

CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *easy) { return ccurl_api.multi_remove_handle(multi, easy); }

CURLMcode ccurl_multi_socket_action(CURLM *multi, curl_socket_t fd, int ev_bitmask, int *running_handles) {
    return ccurl_api.multi_socket_action(multi, fd, ev_bitmask, running_handles);
}

const char *ccurl_easy_strerror(CURLcode code) { return ccurl_is_loaded() ? ccurl_api.easy_strerror(code) : ccurl_not_loaded; }

const char *ccurl_multi_strerror(CURLMcode code) { return ccurl_is_loaded() ? ccurl_api.multi_strerror(code) : ccurl_not_loaded; }

const char *ccurl_url_strerror(CURLUcode code) { return ccurl_is_loaded() ? ccurl_api.url_strerror(code) : ccurl_not_loaded; }

/* ---- Typed option wrappers ------------------------------------------------------------- */

CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value) {
    return ccurl_api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value) {
    return ccurl_api.easy_setopt(easy, option, value);
}

CURLcode ccurl_easy_set_blob(CURL *easy, CURLoption option, const void *data, size_t length) {
    if (data == NULL) return ccurl_api.easy_setopt(easy, option, (struct curl_blob *)NULL);
    struct curl_blob blob = {.data = (void *)data, .len = length, .flags = CURL_BLOB_COPY};
    return ccurl_api.easy_setopt(easy, option, &blob);
}

CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value) {
    return ccurl_api.easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_off_t(CURL *easy, CURLINFO info, curl_off_t *value) {
    return ccurl_api.easy_getinfo(easy, info, value);
}

CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value) {
    char *text = NULL;
    CURLcode rc = ccurl_api.easy_getinfo(easy, info, &text);
    *value = text;
    return rc;
}

CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return ccurl_api.multi_setopt(multi, option, value);
}

CURLMcode ccurl_multi_set_callbacks(
    CURLM *multi, curl_socket_callback socket_fn, curl_multi_timer_callback timer_fn, void *userp) {
    CURLMcode rc;
    if ((rc = ccurl_api.multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_fn)) != CURLM_OK) return rc;
    if ((rc = ccurl_api.multi_setopt(multi, CURLMOPT_SOCKETDATA, userp)) != CURLM_OK) return rc;
    if ((rc = ccurl_api.multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_fn)) != CURLM_OK) return rc;
    return ccurl_api.multi_setopt(multi, CURLMOPT_TIMERDATA, userp);
}

int ccurl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = ccurl_api.multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        *easy = msg->easy_handle;
        *result = msg->data.result;
        return 1;
    }
    return 0;
}

int ccurl_parse_peer(const char *url, char *peer, size_t peer_cap, int *https) {
    if (!ccurl_is_loaded()) return CURLUE_BAD_HANDLE;
    CURLU *parsed = ccurl_api.url();
    if (parsed == NULL) return CURLUE_OUT_OF_MEMORY;
    char *scheme = NULL, *host = NULL, *port = NULL;
    CURLUcode rc = ccurl_api.url_set(parsed, CURLUPART_URL, url, 0);
    if (rc == CURLUE_OK) rc = ccurl_api.url_get(parsed, CURLUPART_SCHEME, &scheme, 0);
    if (rc == CURLUE_OK) {
        if (strcmp(scheme, "http") == 0) *https = 0;
        else if (strcmp(scheme, "https") == 0) *https = 1;
        else rc = CURLUE_UNSUPPORTED_SCHEME;
    }
    if (rc == CURLUE_OK) rc = ccurl_api.url_get(parsed, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK) rc = ccurl_api.url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (rc == CURLUE_OK && peer_cap > 0) snprintf(peer, peer_cap, "%s:%s", host, port);
    ccurl_api.free(scheme);
    ccurl_api.free(host);
    ccurl_api.free(port);
    ccurl_api.url_cleanup(parsed);
    return rc;
}

unsigned int ccurl_runtime_version(void) {
    if (!ccurl_is_loaded()) return 0;
    const curl_version_info_data *info = ccurl_api.version_info(CURLVERSION_NOW);
    return info != NULL ? info->version_num : 0;
}
