#include "sealing.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

enum { NONCE_BYTES = 12, TAG_BYTES = 16 };

/* Fills `buf` from the kernel's random pool, retrying short reads and EINTR. */
static int random_bytes(uint8_t *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = getrandom(buf + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

static int fits_int(size_t n) { return n <= (size_t)0x7fffffff; }

int csealing_seal(const uint8_t *key, const uint8_t *aad, size_t aad_len, const uint8_t *plain,
                  size_t plain_len, uint8_t *out) {
    if (!fits_int(aad_len) || !fits_int(plain_len)) return -1;
    if (random_bytes(out, NONCE_BYTES) != 0) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int ok = 0, len = 0;
    uint8_t *cipher = out + NONCE_BYTES;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_BYTES, NULL) == 1 &&
        EVP_EncryptInit_ex(ctx, NULL, NULL, key, out) == 1 &&
        (aad_len == 0 || EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
        EVP_EncryptUpdate(ctx, cipher, &len, plain, (int)plain_len) == 1 &&
        EVP_EncryptFinal_ex(ctx, cipher + len, &len) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, cipher + plain_len) == 1) {
        ok = 1;
    }
    EVP_CIPHER_CTX_free(ctx); /* cleanses the key schedule */
    return ok ? 0 : -1;
}

int csealing_open(const uint8_t *key, const uint8_t *aad, size_t aad_len, const uint8_t *sealed,
                  size_t sealed_len, uint8_t *out) {
    if (sealed_len < CSEALING_OVERHEAD || !fits_int(aad_len) || !fits_int(sealed_len)) return -1;
    size_t cipher_len = sealed_len - CSEALING_OVERHEAD;
    const uint8_t *cipher = sealed + NONCE_BYTES;
    uint8_t tag[TAG_BYTES];
    for (size_t i = 0; i < TAG_BYTES; i++) tag[i] = cipher[cipher_len + i];
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int ok = 0, len = 0;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_BYTES, NULL) == 1 &&
        EVP_DecryptInit_ex(ctx, NULL, NULL, key, sealed) == 1 &&
        (aad_len == 0 || EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
        EVP_DecryptUpdate(ctx, out, &len, cipher, (int)cipher_len) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag) == 1 &&
        EVP_DecryptFinal_ex(ctx, out + len, &len) == 1) {
        ok = 1;
    }
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) OPENSSL_cleanse(out, cipher_len);
    return ok ? 0 : -1;
}

void csealing_wipe(void *p, size_t len) { OPENSSL_cleanse(p, len); }
