"""Migrates the database, creates the test clients and token owner, prints their description.

Clients (client ids are fixed so recipes can name them; secrets are random):
  confidential          confidential, client-credentials grant, secret hashed "cheap"
  confidential-default  confidential, client-credentials grant, secret hashed with Django's
                        default PBKDF2 (DOT's quick-start cost on every authenticated call)
  confidential-cpu      confidential, client-credentials grant, secret hashed with PBKDF2
                        calibrated so one check costs --cpu-seconds of CPU
  confidential-special  as "confidential", but its secret ends in "+/=%:&~": characters that
                        RFC 6749 section 2.3.1's form-encoding before HTTP Basic changes
  public                public, password grant (no secret; revokes with client_id alone)

Each secret is written to SECRETS_DIR/<client>.secret and, in the form a systemd credential
for `ClientCredential=` holds, to SECRETS_DIR/<client>.credential ("client_id:client_secret",
no newline); both mode 0600. Nothing secret is printed.
"""

import hashlib
import json
import os
import secrets
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.core.management.base import BaseCommand
from oauth2_provider.models import get_application_model

from dotsite.hashers import CalibratedClientSecretHasher, CheapClientSecretHasher

TOKEN_OWNER = "alice"
SPECIAL_SUFFIX = "+/=%:&~"  # changed by form-encoding: tells whether a server decodes Basic parts


def write_private(path: Path, text: str) -> None:
    """Writes text to path, created 0600 from the start (never briefly world-readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def calibrated_iterations(target_cpu_seconds: float) -> int:
    """PBKDF2-SHA256 iterations whose CPU time on this machine is about the target.

    A first guess from a short run, then two corrections from runs at the guessed size."""

    def cpu_time(iterations: int) -> float:
        start = time.process_time()
        hashlib.pbkdf2_hmac("sha256", b"calibration", b"salt" * 4, iterations)
        return max(time.process_time() - start, 1e-6)

    cpu_time(300_000)  # warm-up: the first runs of a fresh process were seen ~40% slower
    iterations = int(100_000 * target_cpu_seconds / cpu_time(100_000))
    for _ in range(2):
        iterations = int(iterations * target_cpu_seconds / cpu_time(iterations))
    return max(1_000, iterations)


def measured_check_cpu(encoded: str, secret: str) -> float:
    from django.contrib.auth.hashers import check_password

    start = time.process_time()
    ok = check_password(secret, encoded)
    spent = time.process_time() - start
    if not ok:
        raise RuntimeError("a freshly hashed client secret did not verify")
    return spent


class Command(BaseCommand):
    help = "Create the test clients and the token owner (idempotent: replaces the clients)."

    def add_arguments(self, parser):
        parser.add_argument("--secrets-dir", required=True)
        parser.add_argument("--cpu-seconds", type=float, default=0.25)

    def handle(self, *args, **options):
        call_command("migrate", verbosity=0)  # one process for both: saves a Django start
        secrets_dir = Path(options["secrets_dir"])
        secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(secrets_dir, 0o700)

        user_model = get_user_model()
        owner, _ = user_model.objects.get_or_create(username=TOKEN_OWNER)
        owner.set_unusable_password()
        owner.save()

        application_model = get_application_model()
        cpu_iterations = calibrated_iterations(options["cpu_seconds"])
        cheap = lambda s: CheapClientSecretHasher().encode(s, CheapClientSecretHasher().salt())  # noqa: E731
        kinds = {
            "confidential": ("cheap", cheap),
            "confidential-special": ("cheap", cheap),
            "confidential-default": ("default", lambda s: make_password(s)),
            "confidential-cpu": (
                "cpu",
                lambda s: CalibratedClientSecretHasher().encode(
                    s, CalibratedClientSecretHasher().salt(), cpu_iterations
                ),
            ),
        }
        described = {}
        for client_id, (hashing, encode) in kinds.items():
            secret = secrets.token_urlsafe(36) + (SPECIAL_SUFFIX if client_id.endswith("-special") else "")
            encoded = encode(secret)
            application_model.objects.filter(client_id=client_id).delete()
            application_model.objects.create(
                client_id=client_id,
                name=client_id,
                user=owner,
                client_type=application_model.CLIENT_CONFIDENTIAL,
                authorization_grant_type=application_model.GRANT_CLIENT_CREDENTIALS,
                client_secret=encoded,  # already hashed: ClientSecretField keeps it as is
                hash_client_secret=True,
            )
            write_private(secrets_dir / f"{client_id}.secret", secret)
            write_private(secrets_dir / f"{client_id}.credential", f"{client_id}:{secret}")
            described[client_id] = {
                "client_id": client_id,
                "type": "confidential",
                "secret_hashing": hashing,
                "secret_check_cpu_seconds": round(measured_check_cpu(encoded, secret), 4),
                "secret_file": str(secrets_dir / f"{client_id}.secret"),
                "credential_file": str(secrets_dir / f"{client_id}.credential"),
            }
        described["confidential-cpu"]["pbkdf2_iterations"] = cpu_iterations

        application_model.objects.filter(client_id="public").delete()
        application_model.objects.create(
            client_id="public",
            name="public",
            user=owner,
            client_type=application_model.CLIENT_PUBLIC,
            authorization_grant_type=application_model.GRANT_PASSWORD,
            client_secret="",
            hash_client_secret=False,
        )
        described["public"] = {"client_id": "public", "type": "public"}
        self.stdout.write(json.dumps({"token_owner": TOKEN_OWNER, "clients": described}))
