#ifndef CCURL_API_H
#define CCURL_API_H
/*
 * The shim's private table of libcurl functions, resolved by ccurl_load() (ccurl_load.c) and
 * used by the other ccurl_*.c files. Not part of the module's public headers: Swift never sees
 * it, and nothing outside the shim calls libcurl.
 */
#include "ccurl.h"

/* Every libcurl function the shim calls. Each becomes a field of `ccurl_api` typed from its
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
    X(share_init)          \
    X(share_setopt)        \
    X(share_cleanup)       \
    X(share_strerror)      \
    X(url)                 \
    X(url_set)             \
    X(url_get)             \
    X(url_cleanup)         \
    X(url_strerror)        \
    X(free)                \
    X(getdate)             \
    X(slist_append)        \
    X(slist_free_all)      \
    X(version_info)

struct ccurl_api_table {
#define CCURL_FIELD(name) __typeof__(&curl_##name) name;
    CCURL_FUNCTIONS(CCURL_FIELD)
#undef CCURL_FIELD
};

/* Filled once by ccurl_load() and then never written again; read only after ccurl_is_loaded()
 * returned 1, or through a handle, which can only exist once it was filled. */
extern struct ccurl_api_table ccurl_api;

/* 1 once ccurl_load() succeeded (acquire: ccurl_api is then complete), else 0. */
int ccurl_is_loaded(void);

/* The socket libcurl opened for the transfer's current request (CURLOPT_SOCKOPTFUNCTION), or
 * CURL_SOCKET_BAD when it reuses a connection (or has none yet). */
curl_socket_t ccurl_transfer_new_socket(const ccurl_transfer *t);

/* What the shim's functions return as text when libcurl is not loaded. */
extern const char ccurl_not_loaded[];

#endif
