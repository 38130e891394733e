"""Client-secret hashers with a chosen cost.

DOT >= 2 stores client secrets hashed and checks the hash on every authenticated request
(token grant, revocation, introspection). With Django's default PBKDF2 (1,000,000
iterations) that is a fixed CPU cost per call. The test provider offers three costs, one per
client, so a single server answers every test:

- "cheap": PBKDF2-SHA256 at 1,000 iterations: hashed at rest as in production, about 1 ms
  per check: what a deployment tuned for revocation throughput looks like.
- "default": Django's own default (the DOT quick-start cost).
- "cpu": iterations calibrated at provisioning so that one check costs a target CPU time
  (0.25 s unless told otherwise): a server that is CPU-bound on revocation.

Each has its own algorithm name, so Django never "hardens" a failed check of a cheap hash up
to the default cost (it only does that for hashes of the preferred algorithm).
"""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class CheapClientSecretHasher(PBKDF2PasswordHasher):
    algorithm = "pbkdf2_sha256_cheap"
    iterations = 1_000


class CalibratedClientSecretHasher(PBKDF2PasswordHasher):
    # The iterations actually used are those stored in each hash (set by `provision`);
    # this class value is only the fallback for a fresh encode without an explicit count.
    algorithm = "pbkdf2_sha256_cpu"
    iterations = 1_000_000
