#ifndef CCURL_SHARE_H
#define CCURL_SHARE_H
/*
 * libcurl shares (CURLSH) for one engine: transfers that use one share the TLS session cache,
 * so a reconnect to a host resumes the session instead of a full handshake, and the DNS cache.
 * (Connections are already shared by the engine's one multi handle.)
 *
 * A share's TLS session cache holds a fixed number of sessions, one per host — 8 in libcurl
 * 7.88 (share.c; later versions hold more) — and pushes the oldest out when a ninth host's
 * session comes. So an engine keeps a set of shares and gives each origin the share of its
 * group of CCURL_SHARE_ORIGINS origins (ccurl_share_set_get): however many origins a run
 * calls, each keeps its session.
 *
 * The engine uses them from one thread, but libcurl still calls the lock functions around every
 * use of shared data; they are real mutexes, one per kind of data, so a share stays correct if
 * it is ever used from another thread too. Requires a successful ccurl_load().
 */
#include <curl/curl.h>
#include <stddef.h>

/* Origins per share: no more than libcurl 7.88's TLS session cache of a share holds. */
#define CCURL_SHARE_ORIGINS 8

typedef struct ccurl_share_set ccurl_share_set;

/* An empty set (each share is made when first asked for), or NULL when out of memory. */
ccurl_share_set *ccurl_share_set_new(void);
/* The CURLSH (for CURLOPT_SHARE) of the origin numbered `origin` (0, 1, 2, … in the order the
 * engine met them): that of group origin / CCURL_SHARE_ORIGINS, sharing SSL sessions and DNS,
 * made on first use. NULL when it could not be made (out of memory, libcurl refused an option,
 * or libcurl is not loaded); *error (if not NULL) is then the CURLSHcode. */
CURLSH *ccurl_share_set_get(ccurl_share_set *set, size_t origin, CURLSHcode *error);
/* Frees the set and its shares (NULL is ignored). No easy handle may still use one. */
void ccurl_share_set_free(ccurl_share_set *set);
/* curl_share_strerror's text. */
const char *ccurl_share_strerror(CURLSHcode code);

#endif
