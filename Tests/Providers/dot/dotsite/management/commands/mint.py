"""Writes N access tokens, each with its bound refresh token, straight into the database.

The same rows DOT's own token endpoint writes (token, SHA-256 checksum, application, owner,
expiry, scope; the refresh token bound to its access token), in two bulk inserts: 200 pairs
take a fraction of a second, where 200 grants over HTTP would each pay the client-secret hash.
The file gets one token per line (access or refresh tokens, --kind), mode 0600.
"""

import json
import os
import secrets
import uuid
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

from dotsite.management.commands.provision import TOKEN_OWNER, write_private


class Command(BaseCommand):
    help = "Mint N access/refresh token pairs for a client and write one kind to a file."

    def add_arguments(self, parser):
        parser.add_argument("tokens_file")
        parser.add_argument("count", type=int)
        parser.add_argument("--client", default="confidential")
        parser.add_argument("--kind", choices=["access", "refresh"], default="access")
        parser.add_argument(
            "--expires-in", type=int, default=36000, help="access token lifetime in seconds; <= 0 mints expired ones"
        )
        parser.add_argument("--scope", default="read write")
        parser.add_argument("--pair-file", help="also write the other kind here, line for line")

    def handle(self, *args, **options):
        count = options["count"]
        if count < 1:
            raise CommandError("count must be at least 1")
        try:
            application = get_application_model().objects.get(client_id=options["client"])
        except get_application_model().DoesNotExist:
            raise CommandError(f"no client {options['client']!r}; run provision first")
        owner = get_user_model().objects.get(username=TOKEN_OWNER)
        access_model = get_access_token_model()
        refresh_model = get_refresh_token_model()
        expires = timezone.now() + timedelta(seconds=options["expires_in"])

        access_values = [secrets.token_urlsafe(30) for _ in range(count)]
        refresh_values = [secrets.token_urlsafe(30) for _ in range(count)]
        with transaction.atomic():
            access_tokens = access_model.objects.bulk_create(
                [
                    access_model(
                        token=value, user=owner, application=application, expires=expires, scope=options["scope"]
                    )
                    for value in access_values
                ]
            )
            refresh_model.objects.bulk_create(
                [
                    refresh_model(
                        token=value, user=owner, application=application, access_token=access, token_family=uuid.uuid4()
                    )
                    for value, access in zip(refresh_values, access_tokens)
                ]
            )
        chosen, other = (
            (access_values, refresh_values) if options["kind"] == "access" else (refresh_values, access_values)
        )
        write_private(Path(options["tokens_file"]), "".join(v + "\n" for v in chosen))
        if options["pair_file"]:
            write_private(Path(options["pair_file"]), "".join(v + "\n" for v in other))
        self.stdout.write(json.dumps({"minted": count, "kind": options["kind"], "client": application.client_id}))
