/* Whether a request libcurl wrote ever reached the server's TCP: read from the transfer's socket
 * (TCP_INFO) while the transfer is active. A connection whose handshake's last ACK a full accept
 * queue dropped looks established to the client, which writes its request; the server's kernel
 * drops those segments too, so the request sits unacknowledged while the client retransmits it.
 * The server cannot have acted on bytes its TCP never acknowledged. */
#include "ccurl_api.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

int ccurl_transfer_request_unacknowledged(ccurl_transfer *t) {
    /* A reused connection carried earlier requests its server acknowledged: only a new one can
     * be stuck this way. */
    curl_socket_t socket = ccurl_transfer_new_socket(t);
    if (socket == CURL_SOCKET_BAD) return 0;
    struct tcp_info info;
    socklen_t length = sizeof info;
    if (getsockopt(socket, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return 0;
    /* tcpi_bytes_acked is Linux 4.1's: an older kernel's shorter answer tells nothing. It counts the
     * SYN: 1 once the handshake is done and no data was acknowledged. */
    if (length < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked) return 0;
    return info.tcpi_state == 1 /* TCP_ESTABLISHED */ && info.tcpi_bytes_acked <= 1 && info.tcpi_unacked > 0 &&
                   info.tcpi_total_retrans >= 2
               ? 1
               : 0;
}

int ccurl_transfer_connect_pending(ccurl_transfer *t) {
    if (ccurl_transfer_connected(t)) return 0; /* no system call for the transfers under way */
    curl_socket_t socket = ccurl_transfer_new_socket(t);
    if (socket == CURL_SOCKET_BAD) return 0;
    struct tcp_info info;
    socklen_t length = sizeof info;
    if (getsockopt(socket, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return 0;
    return info.tcpi_state == 2 /* TCP_SYN_SENT */ ? 1 : 0;
}
