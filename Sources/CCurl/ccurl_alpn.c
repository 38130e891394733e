/* The protocol a transfer's TLS connection agreed on by ALPN, read from OpenSSL once the
 * connection is ready: libcurl's CURLINFO_HTTP_VERSION says nothing until a response arrives. */
#include "ccurl_api.h"

#include <dlfcn.h>
#include <string.h>

/* OpenSSL's SSL_get0_alpn_selected, from the libssl that libcurl already loaded (never loaded
 * here: RTLD_NOLOAD). Looked up once; the engine runs on one thread. */
typedef void (*alpn_selected_function)(const void *ssl, const unsigned char **data, unsigned int *length);
static alpn_selected_function alpn_selected;
static int alpn_looked_up;

static alpn_selected_function lookup_alpn_selected(void) {
    if (!alpn_looked_up) {
        alpn_looked_up = 1;
        void *library = dlopen("libssl.so.3", RTLD_LAZY | RTLD_NOLOAD);
        if (library != NULL) alpn_selected = (alpn_selected_function)dlsym(library, "SSL_get0_alpn_selected");
    }
    return alpn_selected;
}

int ccurl_transfer_alpn_http2(ccurl_transfer *t) {
    struct curl_tlssessioninfo *info = NULL;
    if (ccurl_api.easy_getinfo(ccurl_transfer_easy(t), CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK || info == NULL ||
        info->internals == NULL || info->backend != CURLSSLBACKEND_OPENSSL)
        return -1;
    alpn_selected_function selected = lookup_alpn_selected();
    if (selected == NULL) return -1;
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    selected(info->internals, &protocol, &length);
    return protocol != NULL && length == 2 && memcmp(protocol, "h2", 2) == 0 ? 1 : 0;
}
