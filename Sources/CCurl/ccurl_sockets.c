#include "ccurl_sockets_callbacks.h"
#include "ccurl_sockets.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct ccurl_sockets {
    ccurl_socket_event event;
    void *context;
};

ccurl_sockets *ccurl_sockets_new(ccurl_socket_event event, void *context) {
    ccurl_sockets *sockets = calloc(1, sizeof *sockets);
    if (sockets == NULL) return NULL;
    sockets->event = event;
    sockets->context = context;
    return sockets;
}

void ccurl_sockets_detach(ccurl_sockets *sockets) {
    if (sockets != NULL) sockets->event = NULL;
}

void ccurl_sockets_free(ccurl_sockets *sockets) { free(sockets); }

curl_socket_t ccurl_sockets_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    ccurl_sockets *sockets = clientp;
    int fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd < 0) return CURL_SOCKET_BAD;
    if (sockets != NULL && sockets->event != NULL) sockets->event(sockets->context, fd, 1);
    return fd;
}

int ccurl_sockets_close(void *clientp, curl_socket_t fd) {
    ccurl_sockets *sockets = clientp;
    if (sockets != NULL && sockets->event != NULL) sockets->event(sockets->context, fd, 0);
    return close(fd);
}
