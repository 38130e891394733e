#ifndef CCURL_SHARE_H
#define CCURL_SHARE_H
/*
 * A libcurl share (CURLSH) for one engine: its transfers share the TLS session cache, so a
 * reconnect to a host resumes the session instead of a full handshake, and the DNS cache.
 * (Connections are already shared by the engine's one multi handle.)
 *
 * The engine uses it from one thread, but libcurl still calls the lock functions around every
 * use of shared data; they are real mutexes, one per kind of data, so a share stays correct if
 * it is ever used from another thread too. Requires a successful ccurl_load().
 */
#include <curl/curl.h>

typedef struct ccurl_share ccurl_share;

/* A new share of SSL sessions and DNS, or NULL (out of memory, libcurl refused an option, or
 * libcurl is not loaded); on NULL, *error (if not NULL) is the CURLSHcode. */
ccurl_share *ccurl_share_new(CURLSHcode *error);
/* The CURLSH to give CURLOPT_SHARE. */
CURLSH *ccurl_share_handle(ccurl_share *share);
/* Frees the share. No easy handle may still use it. */
void ccurl_share_free(ccurl_share *share);
/* curl_share_strerror's text. */
const char *ccurl_share_strerror(CURLSHcode code);

#endif
