#ifndef CCURL_SOCKETS_CALLBACKS_H
#define CCURL_SOCKETS_CALLBACKS_H
/* Private to CCurl: the libcurl callbacks behind ccurl_sockets (ccurl_sockets.c), which
 * ccurl_transfer_report_sockets (ccurl_transfer.c) installs. */
#include <curl/curl.h>

curl_socket_t ccurl_sockets_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *address);
int ccurl_sockets_close(void *clientp, curl_socket_t fd);

#endif
