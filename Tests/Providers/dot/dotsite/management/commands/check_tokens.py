"""Counts how many tokens of a file are still active, read from the provider's database.

Active as DOT itself judges it: an access token whose row exists and has not expired (DOT
deletes an access token it revokes); a refresh token whose row is not marked revoked. One
query per kind, so 200 tokens cost one process start. Prints JSON counts, never a token.
"""

import hashlib
import json
from pathlib import Path

from django.core.management.base import BaseCommand
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model


class Command(BaseCommand):
    help = "Report how many tokens listed in a file are active at the provider."

    def add_arguments(self, parser):
        parser.add_argument("tokens_file")

    def handle(self, *args, **options):
        tokens = [line.strip() for line in Path(options["tokens_file"]).read_text().splitlines() if line.strip()]
        checksums = {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in tokens}
        now = timezone.now()
        active_access = set(
            get_access_token_model()
            .objects.filter(token_checksum__in=checksums, expires__gt=now)
            .values_list("token_checksum", flat=True)
        )
        active_refresh = set(
            get_refresh_token_model()
            .objects.filter(token_checksum__in=checksums, revoked__isnull=True)
            .values_list("token_checksum", flat=True)
        )
        active = len(checksums & (active_access | active_refresh))
        self.stdout.write(json.dumps({"total": len(checksums), "active": active, "inactive": len(checksums) - active}))
