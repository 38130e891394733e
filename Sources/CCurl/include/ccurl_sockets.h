#ifndef CCURL_SOCKETS_H
#define CCURL_SOCKETS_H
/*
 * Which descriptors libcurl opens and closes for connections (CURLOPT_OPENSOCKETFUNCTION and
 * CURLOPT_CLOSESOCKETFUNCTION), reported to the engine as they come. With it the engine may
 * leave a kept-alive connection's socket registered with its loop between two transfers (no
 * epoll_ctl DEL and ADD per request) and still unregister it before libcurl closes it, so the
 * loop never holds a descriptor number that now names something else.
 *
 * Sockets are made as libcurl makes them (socket(2) with the address's family, type and
 * protocol), close-on-exec, and closed with close(2). Events run on the thread that runs
 * libcurl, from inside libcurl: they must not call libcurl.
 */
#include "ccurl.h"

typedef struct ccurl_sockets ccurl_sockets;

/* `event(context, fd, opened)`: opened 1 after libcurl made `fd` for a connection, 0 just
 * before it closes one. */
typedef void (*ccurl_socket_event)(void *context, int fd, int opened);

/* A new reporter, or NULL when out of memory. */
ccurl_sockets *ccurl_sockets_new(ccurl_socket_event event, void *context);
/* No more events from now on (sockets are still made and closed). */
void ccurl_sockets_detach(ccurl_sockets *sockets);
/* Frees the reporter: only after every easy handle that used it is gone, and the multi handle
 * cleaned up (its connections close through it). */
void ccurl_sockets_free(ccurl_sockets *sockets);

/* Makes the transfer's new connections report to `sockets`; nothing to do when it already
 * does (since it was made or reset). 0 or a CURLcode. */
CURLcode ccurl_transfer_report_sockets(ccurl_transfer *t, ccurl_sockets *sockets);

#endif
