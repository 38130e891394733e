#include "ccurl_api.h"
#include "ccurl_share.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct ccurl_share {
    CURLSH *handle;
    /* One lock per curl_lock_data value libcurl may ask for (it asks only for what is shared,
     * plus CURL_LOCK_DATA_SHARE for the share itself). */
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
} ccurl_share;

static void lock(CURL *easy, curl_lock_data data, curl_lock_access access, void *userp) {
    (void)easy;
    (void)access;
    struct ccurl_share *share = userp;
    if ((unsigned)data < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&share->locks[data]);
}

static void unlock(CURL *easy, curl_lock_data data, void *userp) {
    (void)easy;
    struct ccurl_share *share = userp;
    if ((unsigned)data < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&share->locks[data]);
}

static void ccurl_share_free(ccurl_share *share);

static ccurl_share *ccurl_share_new(CURLSHcode *error) {
    CURLSHcode rc = CURLSHE_NOMEM;
    if (!ccurl_is_loaded()) {
        if (error != NULL) *error = CURLSHE_NOT_BUILT_IN;
        return NULL;
    }
    struct ccurl_share *share = calloc(1, sizeof *share);
    if (share == NULL) goto fail;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share->locks[i], NULL);
    share->handle = ccurl_api.share_init();
    if (share->handle == NULL) goto fail;
    if ((rc = ccurl_api.share_setopt(share->handle, CURLSHOPT_USERDATA, (void *)share)) != CURLSHE_OK) goto fail;
    if ((rc = ccurl_api.share_setopt(share->handle, CURLSHOPT_LOCKFUNC, lock)) != CURLSHE_OK) goto fail;
    if ((rc = ccurl_api.share_setopt(share->handle, CURLSHOPT_UNLOCKFUNC, unlock)) != CURLSHE_OK) goto fail;
    if ((rc = ccurl_api.share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION)) != CURLSHE_OK)
        goto fail;
    if ((rc = ccurl_api.share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS)) != CURLSHE_OK) goto fail;
    return share;
fail:
    if (error != NULL) *error = rc;
    ccurl_share_free(share);
    return NULL;
}

static void ccurl_share_free(ccurl_share *share) {
    if (share == NULL) return;
    if (share->handle != NULL) ccurl_api.share_cleanup(share->handle);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&share->locks[i]);
    free(share);
}

const char *ccurl_share_strerror(CURLSHcode code) {
    return ccurl_is_loaded() ? ccurl_api.share_strerror(code) : ccurl_not_loaded;
}

struct ccurl_share_set {
    /* shares[g] serves origins g * CCURL_SHARE_ORIGINS ... (g + 1) * CCURL_SHARE_ORIGINS - 1;
     * NULL until one of them is first used. */
    ccurl_share **shares;
    size_t capacity;
};

ccurl_share_set *ccurl_share_set_new(void) { return calloc(1, sizeof(struct ccurl_share_set)); }

CURLSH *ccurl_share_set_get(ccurl_share_set *set, size_t origin, CURLSHcode *error) {
    size_t group = origin / CCURL_SHARE_ORIGINS;
    if (group >= set->capacity) {
        size_t capacity = set->capacity == 0 ? 4 : set->capacity;
        while (capacity <= group) {
            if (capacity > SIZE_MAX / 2 / sizeof *set->shares) goto nomem;
            capacity *= 2;
        }
        ccurl_share **grown = realloc(set->shares, capacity * sizeof *grown);
        if (grown == NULL) goto nomem;
        for (size_t i = set->capacity; i < capacity; i++) grown[i] = NULL;
        set->shares = grown;
        set->capacity = capacity;
    }
    if (set->shares[group] == NULL) {
        set->shares[group] = ccurl_share_new(error);
        if (set->shares[group] == NULL) return NULL;
    }
    return set->shares[group]->handle;
nomem:
    if (error != NULL) *error = CURLSHE_NOMEM;
    return NULL;
}

void ccurl_share_set_free(ccurl_share_set *set) {
    if (set == NULL) return;
    for (size_t i = 0; i < set->capacity; i++) ccurl_share_free(set->shares[i]);
    free(set->shares);
    free(set);
}
