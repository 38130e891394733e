#ifndef CEPOLL_H
#define CEPOLL_H

/* epoll(7) for the event loop: Swift's Glibc module does not include <sys/epoll.h>. Headers
 * only; nothing to link. */
#include <sys/epoll.h>

#endif
