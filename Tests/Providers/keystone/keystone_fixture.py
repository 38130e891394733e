#!/usr/bin/python3
"""In-process helpers of the Keystone test provider, run with Debian's /usr/bin/python3.

  keystone_fixture.py provision CONF SECRETS_DIR   after `keystone-manage db_sync/bootstrap`:
      a project "demo", a user "alice" holding the "member" role on it (no password: her
      tokens are minted here), and an application credential of the bootstrap admin with the
      "admin" role on project "admin" (what POST /v3/OS-OAUTH2/token takes as client_id and
      client_secret). Its secret goes to SECRETS_DIR/app-credential.{secret,credential}
      (0600); stdout gets JSON with ids only. A second one, "app-credential-special", has
      a secret ending in "+/=%:&~" (changed by RFC 6749 2.3.1's form-encoding).
  keystone_fixture.py mint CONF TOKENS_FILE N [--expired]
      N project-scoped Fernet tokens for alice, issued by Keystone's own token provider (the
      code behind POST /v3/auth/tokens, without the HTTP round trip and the password hash),
      one per line, 0600. --expired issues them with an expiry one minute in the past.
  keystone_fixture.py check CONF TOKENS_FILE
      How many are still valid, asked of Keystone's token provider (fresh process: it reads
      the revocation events as they are now). JSON counts on stdout, never a token.

Minting uses an in-memory cache inside this process only (the server itself runs without
one, so a revocation is seen at once by every worker): 200 tokens take ~0.3 s instead of ~10 s.
"""

import argparse
import datetime
import json
import os
import secrets
import sys
import uuid

import keystone.conf
from keystone.common import provider_api, sql
from keystone import exception
from keystone.server import backends

CONF = keystone.conf.CONF
PROVIDERS = provider_api.ProviderAPIs
DEMO_PROJECT = "demo"
TOKEN_OWNER = "alice"
DOMAIN = "default"


def load(config_file, cache):
    keystone.conf.configure()
    sql.initialize()
    CONF(args=[], project="keystone", default_config_files=[config_file])
    if cache:
        CONF.set_override("enabled", True, group="cache")
        CONF.set_override("backend", "dogpile.cache.memory", group="cache")
    backends.load_backends()


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def role_id(name):
    for role in PROVIDERS.role_api.list_roles():
        if role["name"] == name and role.get("domain_id") is None:
            return role["id"]
    raise SystemExit(f"keystone_fixture: no role {name!r}")


def provision(args):
    load(args.config, cache=False)
    try:
        project = PROVIDERS.resource_api.get_project_by_name(DEMO_PROJECT, DOMAIN)
    except exception.ProjectNotFound:
        project_id = uuid.uuid4().hex
        project = PROVIDERS.resource_api.create_project(
            project_id,
            {"id": project_id, "name": DEMO_PROJECT, "domain_id": DOMAIN, "parent_id": DOMAIN, "enabled": True},
        )
    try:
        user = PROVIDERS.identity_api.get_user_by_name(TOKEN_OWNER, DOMAIN)
    except exception.UserNotFound:
        user = PROVIDERS.identity_api.create_user({"name": TOKEN_OWNER, "domain_id": DOMAIN, "enabled": True})
    PROVIDERS.assignment_api.add_role_to_user_and_project(user["id"], project["id"], role_id("member"))

    admin = PROVIDERS.identity_api.get_user_by_name("admin", DOMAIN)
    admin_project = PROVIDERS.resource_api.get_project_by_name("admin", DOMAIN)
    os.makedirs(args.secrets_dir, mode=0o700, exist_ok=True)
    described = {}
    for name, suffix in (("app-credential", ""), ("app-credential-special", "+/=%:&~")):
        secret = secrets.token_urlsafe(36) + suffix
        credential_id = uuid.uuid4().hex
        PROVIDERS.application_credential_api.create_application_credential(
            {
                "id": credential_id,
                "name": f"session-cleanup-{name}-{credential_id[:8]}",
                "description": "session-cleanup tests: client-credentials grant",
                "secret": secret,
                "user_id": admin["id"],
                "project_id": admin_project["id"],
                "roles": [{"id": role_id("admin")}],
                "unrestricted": False,
                "expires_at": None,
            }
        )
        write_private(os.path.join(args.secrets_dir, f"{name}.secret"), secret)
        write_private(os.path.join(args.secrets_dir, f"{name}.credential"), f"{credential_id}:{secret}")
        described[name] = {
            "client_id": credential_id,
            "user": "admin",
            "project": "admin",
            "roles": ["admin"],
            "secret_file": os.path.join(args.secrets_dir, f"{name}.secret"),
            "credential_file": os.path.join(args.secrets_dir, f"{name}.credential"),
        }
    print(
        json.dumps(
            {
                "token_owner": {"user_id": user["id"], "name": TOKEN_OWNER, "project_id": project["id"]},
                "application_credential": described["app-credential"],
                "application_credentials": described,
            }
        )
    )


def mint(args):
    if args.count < 1:
        raise SystemExit("keystone_fixture: count must be at least 1")
    load(args.config, cache=True)
    user = PROVIDERS.identity_api.get_user_by_name(TOKEN_OWNER, DOMAIN)
    project = PROVIDERS.resource_api.get_project_by_name(DEMO_PROJECT, DOMAIN)
    expires_at = None
    if args.expired:
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        expires_at = past.strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    tokens = [
        PROVIDERS.token_provider_api.issue_token(
            user["id"], ["password"], project_id=project["id"], expires_at=expires_at
        ).id
        for _ in range(args.count)
    ]
    write_private(args.tokens_file, "".join(t + "\n" for t in tokens))
    print(json.dumps({"minted": args.count, "expired": args.expired}))


def check(args):
    load(args.config, cache=True)
    with open(args.tokens_file) as f:
        tokens = sorted({line.strip() for line in f if line.strip()})
    active = 0
    for token in tokens:
        try:
            PROVIDERS.token_provider_api.validate_token(token)
            active += 1
        except (exception.TokenNotFound, exception.Unauthorized, exception.ValidationError):
            pass
    print(json.dumps({"total": len(tokens), "active": active, "inactive": len(tokens) - active}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("provision")
    p.add_argument("config")
    p.add_argument("secrets_dir")
    p.set_defaults(run=provision)
    p = sub.add_parser("mint")
    p.add_argument("config")
    p.add_argument("tokens_file")
    p.add_argument("count", type=int)
    p.add_argument("--expired", action="store_true")
    p.set_defaults(run=mint)
    p = sub.add_parser("check")
    p.add_argument("config")
    p.add_argument("tokens_file")
    p.set_defaults(run=check)
    args = parser.parse_args()
    args.run(args)
    sys.stdout.flush()
    # Keystone's eventlet import leaves a logging handler whose clean-up fails at
    # interpreter exit ("Exception ignored ... getcurrent"); end without that noise.
    os._exit(0)


if __name__ == "__main__":
    main()
