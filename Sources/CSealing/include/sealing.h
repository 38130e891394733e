#ifndef SEALING_H
#define SEALING_H
/*
 * CSealing: AES-256-GCM from OpenSSL's libcrypto, for the session store's keys at rest
 * (docs/store-format.md, "Sealed keys"). A sealed value is nonce (12 random bytes) ‖ ciphertext
 * ‖ tag (16 bytes): 28 bytes longer than the plaintext.
 */
#include <stddef.h>
#include <stdint.h>

/* Bytes a key must have (AES-256). */
#define CSEALING_KEY_BYTES 32
/* Bytes sealing adds to a plaintext: the nonce and the tag. */
#define CSEALING_OVERHEAD 28

/* Seals `plain` (`plain_len` bytes) under `key` (32 bytes) with `aad` authenticated alongside:
 * writes nonce ‖ ciphertext ‖ tag, `plain_len + CSEALING_OVERHEAD` bytes, to `out`. The nonce
 * is 12 bytes from getrandom(2). Returns 0, or -1 when randomness or libcrypto failed. */
int csealing_seal(const uint8_t *key, const uint8_t *aad, size_t aad_len, const uint8_t *plain,
                  size_t plain_len, uint8_t *out);

/* Opens what csealing_seal wrote (`sealed_len` bytes, at least CSEALING_OVERHEAD) under `key`
 * with the same `aad`: writes `sealed_len - CSEALING_OVERHEAD` bytes to `out`. Returns 0, or -1
 * when the value does not authenticate (another key, another aad, a changed byte); `out` is
 * then wiped. */
int csealing_open(const uint8_t *key, const uint8_t *aad, size_t aad_len, const uint8_t *sealed,
                  size_t sealed_len, uint8_t *out);

/* Overwrites `len` bytes at `p` with zeros in a way the compiler keeps (OPENSSL_cleanse). */
void csealing_wipe(void *p, size_t len);

#endif
