#!/bin/sh
# make_test_ca.sh OUTDIR — throw-away TLS material for the end-session test servers.
#
# Creates in OUTDIR (created if missing, mode 0700):
#   ca.pem / ca.key                 test CA (self-signed, CA:TRUE)
#   server.pem / server.key         signed by the CA; SANs IP:127.0.0.1, IP:::1, DNS:localhost
#   server-chain.pem                server.pem + ca.pem (optional --tls-cert alternative)
#   wrongname.pem / wrongname.key   signed by the CA, but only for DNS:wrong.invalid
#                                   (hostname-verification tests)
#   untrusted.pem / untrusted.key   self-signed, same SANs as server.pem, NOT from the CA
#                                   (trust tests: a client with --cacert ca.pem must refuse it)
#   client.pem / client.key         signed by the CA for TLS client authentication (mutual TLS:
#                                   a server with ssl_client_certificate ca.pem accepts it)
# Private keys are 0600. EC P-256 keys keep generation fast. Valid for 30 days.
#
# Use: endsession_server.py --tls-cert OUTDIR/server.pem --tls-key OUTDIR/server.key
#      curl --cacert OUTDIR/ca.pem https://127.0.0.1:PORT/...
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
umask 077                      # keys (and everything else) are created owner-only
mkdir -p "$out"
chmod 700 "$out"
cd "$out"

days=30
SAN="subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
LEAF="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# CA
newkey ca.key
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/CN=session-cleanup test CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -out ca.pem

# CA-signed leaf: leaf NAME CN SAN [EXTENSIONS]
leaf() {
    newkey "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
    printf '%s\n%s\nauthorityKeyIdentifier=keyid\n' "${4:-$LEAF}" "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -sha256 -days "$days" -extfile "$1.ext" -out "$1.pem" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}
leaf server localhost "$SAN"
leaf wrongname wrong.invalid "subjectAltName=DNS:wrong.invalid"
leaf client session-cleanup-client "subjectAltName=DNS:session-cleanup-client" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
cat server.pem ca.pem > server-chain.pem

# Self-signed, not trusted by anyone.
newkey untrusted.key
openssl req -x509 -new -key untrusted.key -sha256 -days "$days" -subj "/CN=localhost" \
    -addext "$SAN" -addext "basicConstraints=critical,CA:FALSE" \
    -addext "extendedKeyUsage=serverAuth" -out untrusted.pem

rm -f ca.srl
chmod 600 ./*.key
chmod 644 ./*.pem
openssl verify -CAfile ca.pem server.pem wrongname.pem client.pem >/dev/null
echo "test CA and certificates written to $out" >&2
