"""`providers.py probe`: sends every request RECIPES.md documents to the running providers
and checks each answer, and the token's state at the provider afterwards.

One line per case: provider, case, the status seen, a short excerpt of the body with every
token and secret replaced by <TOKEN>/<SECRET>, and whether the expectation held. Ends with
"N passed, N failed". Exit status 0 only when all passed.
"""

import base64
import json
import time
from pathlib import Path

import providers as P


class Probe:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.hidden = []  # strings never to print

    def hide(self, *values):
        self.hidden.extend(v for v in values if v)
        return values[0] if len(values) == 1 else values

    def excerpt(self, data: bytes) -> str:
        text = data.decode(errors="replace")
        for value in self.hidden:
            text = text.replace(value, "<TOKEN>")
        text = " ".join(text.split())
        return text[:150] + ("..." if len(text) > 150 else "")

    def case(self, provider, name, ok: bool, status, data=b"", note=""):
        mark = "ok  " if ok else "FAIL"
        self.passed += ok
        self.failed += not ok
        body = self.excerpt(data) if data else "(empty)"
        print(f"{mark} {provider:9} {name:58} -> {status} {body}{'  ' + note if note else ''}", flush=True)


def raw_basic(client_id: str, secret: str) -> str:
    """HTTP Basic over the unencoded client_id:secret (what most clients send)."""
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def encoding_cases(pr, provider, send, client_id, secret, raw_ok: bool, encoded_ok: bool, form_ok):
    """The three ways to send a secret ending in "+/=%:&~": raw Basic, RFC 6749 2.3.1
    form-encoded Basic, form fields. send(kind, value) -> (status, body, succeeded)."""
    for kind, value, expected in (
        ("Basic, unencoded", raw_basic(client_id, secret), raw_ok),
        ("Basic, RFC 6749 2.3.1 form-encoded", P.basic(client_id, secret), encoded_ok),
        ("form fields", None, form_ok),
    ):
        if expected is None:
            continue
        status, data, succeeded = send(kind, value)
        pr.case(
            provider,
            f"secret with +/=%:&~, {kind}",
            succeeded == expected,
            status,
            data,
            "accepted" if succeeded else "refused",
        )


def mint(root, provider, n=1, **kwargs):
    path = root / f"probe-{provider}-{time.monotonic_ns()}.tok"
    desc = P.provider_description(root, provider)
    P.MINT[provider](desc, path, n, kwargs.get("kind", "access"), kwargs.get("client"), kwargs.get("expired", False))
    tokens = path.read_text().split()
    path.unlink()
    return tokens


def active(root, provider, *tokens) -> int:
    path = root / f"probe-{provider}-{time.monotonic_ns()}.chk"
    P.write_private(path, "".join(t + "\n" for t in tokens))
    try:
        return P.CHECK[provider](P.provider_description(root, provider), path)["active"]
    finally:
        path.unlink()


# --------------------------------------------------------------------------------------------


def probe_dot(root: Path, pr: Probe):
    d = P.provider_description(root, "dot")
    c = P.Client(d["port"])
    secret = pr.hide(Path(d["clients"]["confidential"]["secret_file"]).read_text())
    auth = P.basic("confidential", secret)
    form_auth = {"client_id": "confidential", "client_secret": secret}

    s, _, data = c.request("GET", "/.well-known/oauth-authorization-server")
    meta = json.loads(data) if s == 200 else {}
    pr.case(
        "dot",
        "GET /.well-known/oauth-authorization-server",
        s == 200 and meta.get("revocation_endpoint") == d["revocation_endpoint"],
        s,
        json.dumps(
            {
                k: meta.get(k)
                for k in (
                    "token_endpoint",
                    "revocation_endpoint",
                    "introspection_endpoint",
                    "revocation_endpoint_auth_methods_supported",
                )
            }
        ).encode(),
    )

    s, _, data = c.request(
        "POST", "/o/token/", form={"grant_type": "client_credentials", "scope": "read"}, headers={"Authorization": auth}
    )
    reply = json.loads(data) if s == 200 else {}
    pr.hide(reply.get("access_token"))
    pr.case(
        "dot",
        "client_credentials grant, Basic",
        s == 200 and reply.get("token_type") == "Bearer" and isinstance(reply.get("expires_in"), int),
        s,
        data,
    )
    s, _, data = c.request("POST", "/o/token/", form={"grant_type": "client_credentials", **form_auth})
    pr.hide(json.loads(data).get("access_token") if s == 200 else None)
    pr.case("dot", "client_credentials grant, form fields", s == 200, s, data)
    s, _, data = c.request(
        "POST",
        "/o/token/",
        form={"grant_type": "client_credentials"},
        headers={"Authorization": P.basic("confidential", "wrong")},
    )
    pr.case("dot", "client_credentials grant, bad secret", s == 401, s, data)

    token = pr.hide(*mint(root, "dot"))
    s, _, data = c.request("POST", "/o/introspect/", form={"token": token}, headers={"Authorization": auth})
    pr.case("dot", "introspect a valid token (Basic)", s == 200 and json.loads(data).get("active") is True, s, data)
    s, _, data = c.request(
        "POST",
        "/o/revoke_token/",
        form={"token": token, "token_type_hint": "access_token"},
        headers={"Authorization": auth},
    )
    pr.case(
        "dot",
        "revoke a valid access token, Basic",
        s == 200 and active(root, "dot", token) == 0,
        s,
        data,
        "then inactive at the provider",
    )
    s, _, data = c.request("POST", "/o/introspect/", form={"token": token}, headers={"Authorization": auth})
    pr.case("dot", "introspect the revoked token", s == 200 and json.loads(data).get("active") is False, s, data)
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": token}, headers={"Authorization": auth})
    pr.case("dot", "revoke it again", s == 200, s, data)
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": "no-such-token"}, headers={"Authorization": auth})
    pr.case("dot", "revoke an unknown token", s == 200, s, data)

    token = pr.hide(*mint(root, "dot"))
    s, _, data = c.request(
        "POST", "/o/revoke_token/", form={"token": token}, headers={"Authorization": P.basic("confidential", "wrong")}
    )
    pr.case(
        "dot",
        "revoke with a bad client secret (Basic)",
        s == 401 and active(root, "dot", token) == 1,
        s,
        data,
        "token stays active",
    )
    s, _, data = c.request(
        "POST", "/o/revoke_token/", form={"token": token, "client_id": "confidential", "client_secret": "wrong"}
    )
    pr.case("dot", "revoke with a bad client secret (form fields)", s == 401, s, data)
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": token})
    pr.case("dot", "revoke without client authentication", s == 401 and active(root, "dot", token) == 1, s, data)
    s, _, data = c.request(
        "POST", "/o/revoke_token/", form={"token": token}, headers={"Authorization": "Bearer " + token}
    )
    pr.case(
        "dot",
        "revoke with the token itself as Bearer",
        s == 401 and active(root, "dot", token) == 1,
        s,
        data,
        "not accepted",
    )
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": token, **form_auth})
    pr.case("dot", "revoke a valid token, form fields", s == 200 and active(root, "dot", token) == 0, s, data)

    s, _, data = c.request("POST", "/o/revoke_token/", form={}, headers={"Authorization": auth})
    pr.case("dot", "revoke without a token parameter", s == 400, s, data)

    for first, hint in (("access", "access_token"), ("refresh", "refresh_token")):
        pair = root / "probe-dot-pair"
        P.dot_manage(d, "mint", root / "probe-dot-first", 1, "--kind", first, "--pair-file", pair)
        token = pr.hide((root / "probe-dot-first").read_text().strip())
        partner = pr.hide(pair.read_text().strip())
        (root / "probe-dot-first").unlink()
        pair.unlink()
        s, _, data = c.request(
            "POST", "/o/revoke_token/", form={"token": token, "token_type_hint": hint}, headers={"Authorization": auth}
        )
        pr.case(
            "dot",
            f"revoke an {first} token: its partner goes too",
            s == 200 and active(root, "dot", token, partner) == 0,
            s,
            data,
        )

    expired = pr.hide(*mint(root, "dot", expired=True))
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": expired}, headers={"Authorization": auth})
    pr.case("dot", "revoke an expired token", s == 200, s, data)

    public_token = pr.hide(*mint(root, "dot", client="public"))
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": public_token}, headers={"Authorization": auth})
    pr.case(
        "dot",
        "confidential client revokes public's token",
        s == 200 and active(root, "dot", public_token) == 1,
        s,
        data,
        "200, but NOT revoked (not its token)",
    )
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": public_token, "client_id": "public"})
    pr.case(
        "dot",
        "public client revokes its token (client_id field)",
        s == 200 and active(root, "dot", public_token) == 0,
        s,
        data,
    )
    other = pr.hide(*mint(root, "dot"))
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": other, "client_id": "public"})
    pr.case(
        "dot",
        "public client revokes confidential's token",
        s == 200 and active(root, "dot", other) == 1,
        s,
        data,
        "200, but NOT revoked",
    )
    s, _, data = c.request("POST", "/o/revoke_token/", form={"token": other, "client_id": "no-such-client"})
    pr.case("dot", "revoke as an unknown public client_id", s == 401, s, data)

    special = pr.hide(Path(d["clients"]["confidential-special"]["secret_file"]).read_text())

    def dot_send(kind, header):
        token = pr.hide(*mint(root, "dot", client="confidential-special"))
        if header is None:
            status, _, data = c.request(
                "POST",
                "/o/revoke_token/",
                form={"token": token, "client_id": "confidential-special", "client_secret": special},
            )
        else:
            status, _, data = c.request(
                "POST", "/o/revoke_token/", form={"token": token}, headers={"Authorization": header}
            )
        return status, data, status == 200 and active(root, "dot", token) == 0

    encoding_cases(pr, "dot", dot_send, "confidential-special", special, raw_ok=False, encoded_ok=True, form_ok=True)

    for client in ("confidential-default", "confidential-cpu"):
        csecret = pr.hide(Path(d["clients"][client]["secret_file"]).read_text())
        token = pr.hide(*mint(root, "dot", client=client))
        start = time.monotonic()
        s, _, data = c.request(
            "POST", "/o/revoke_token/", form={"token": token}, headers={"Authorization": P.basic(client, csecret)}
        )
        took = time.monotonic() - start
        pr.case(
            "dot",
            f"revoke as {client}",
            s == 200 and active(root, "dot", token) == 0,
            s,
            data,
            f"{took:.2f} s wall for one revocation",
        )
    c.close()


def probe_glewlwyd(root: Path, pr: Probe):
    d = P.provider_description(root, "glewlwyd")
    c = P.Client(d["port"])
    secret = pr.hide(Path(d["clients"][P.GLEWLWYD_CLIENT]["secret_file"]).read_text())
    auth = P.basic(P.GLEWLWYD_CLIENT, secret)
    form_auth = {"client_id": P.GLEWLWYD_CLIENT, "client_secret": secret}
    api = f"/api/{P.GLEWLWYD_PLUGIN}"

    s, _, data = c.request("GET", f"{api}/.well-known/openid-configuration")
    meta = json.loads(data) if s == 200 else {}
    keys = (
        "issuer",
        "token_endpoint",
        "revocation_endpoint",
        "introspection_endpoint",
        "end_session_endpoint",
        "revocation_endpoint_auth_methods_supported",
        "token_endpoint_auth_methods_supported",
    )
    pr.case(
        "glewlwyd",
        "GET .well-known/openid-configuration",
        s == 200 and meta.get("revocation_endpoint") == d["revocation_endpoint"],
        s,
        json.dumps({k: meta.get(k) for k in keys}).encode(),
    )

    s, _, data = c.request(
        "POST",
        f"{api}/token",
        form={"grant_type": "client_credentials", "scope": P.GLEWLWYD_TOKEN_SCOPE},
        headers={"Authorization": auth},
    )
    reply = json.loads(data) if s == 200 else {}
    pr.hide(reply.get("access_token"))
    pr.case(
        "glewlwyd",
        "client_credentials grant, Basic",
        s == 200 and reply.get("token_type") == "bearer" and reply.get("expires_in") == 36000,
        s,
        data,
    )
    s, _, data = c.request(
        "POST", f"{api}/token", form={"grant_type": "client_credentials", "scope": P.GLEWLWYD_TOKEN_SCOPE, **form_auth}
    )
    pr.hide(json.loads(data).get("access_token") if s == 200 else None)
    pr.case("glewlwyd", "client_credentials grant, form fields", s == 200, s, data)
    s, _, data = c.request(
        "POST",
        f"{api}/token",
        form={"grant_type": "client_credentials", "scope": P.GLEWLWYD_TOKEN_SCOPE},
        headers={"Authorization": P.basic(P.GLEWLWYD_CLIENT, "wrong")},
    )
    pr.case("glewlwyd", "client_credentials grant, bad secret", s == 403, s, data)
    s, _, data = c.request(
        "POST", f"{api}/token", form={"grant_type": "client_credentials"}, headers={"Authorization": auth}
    )
    pr.case("glewlwyd", "client_credentials grant without scope", s == 403, s, data, "a scope is required")

    token = pr.hide(*mint(root, "glewlwyd"))
    s, _, data = c.request("POST", f"{api}/introspect", form={"token": token}, headers={"Authorization": auth})
    pr.case(
        "glewlwyd", "introspect a valid token (Basic)", s == 200 and json.loads(data).get("active") is True, s, data
    )
    s, _, data = c.request(
        "POST",
        f"{api}/revoke",
        form={"token": token, "token_type_hint": "access_token"},
        headers={"Authorization": auth},
    )
    pr.case(
        "glewlwyd", "revoke a valid access token, Basic", s == 200 and active(root, "glewlwyd", token) == 0, s, data
    )
    s, _, data = c.request("POST", f"{api}/introspect", form={"token": token}, headers={"Authorization": auth})
    pr.case("glewlwyd", "introspect the revoked token", s == 200 and json.loads(data).get("active") is False, s, data)
    s, _, data = c.request("POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": auth})
    pr.case("glewlwyd", "revoke it again", s == 200, s, data)
    s, _, data = c.request("POST", f"{api}/revoke", form={"token": "no-such-token"}, headers={"Authorization": auth})
    pr.case("glewlwyd", "revoke an unknown token", s == 200, s, data)
    s, _, data = c.request("POST", f"{api}/revoke", form={}, headers={"Authorization": auth})
    pr.case("glewlwyd", "revoke without a token parameter", s == 400, s, data)

    token = pr.hide(*mint(root, "glewlwyd"))
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": P.basic(P.GLEWLWYD_CLIENT, "wrong")}
    )
    pr.case(
        "glewlwyd",
        "revoke with a bad client secret (Basic)",
        s == 401 and active(root, "glewlwyd", token) == 1,
        s,
        data,
        "token stays active",
    )
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token, "client_id": P.GLEWLWYD_CLIENT, "client_secret": "wrong"}
    )
    pr.case("glewlwyd", "revoke with a bad client secret (form fields)", s == 401, s, data)
    s, _, data = c.request("POST", f"{api}/revoke", form={"token": token})
    pr.case(
        "glewlwyd", "revoke without client authentication", s == 401 and active(root, "glewlwyd", token) == 1, s, data
    )
    s, _, data = c.request("POST", f"{api}/revoke", form={"token": token, **form_auth})
    pr.case("glewlwyd", "revoke a valid token, form fields", s == 200 and active(root, "glewlwyd", token) == 0, s, data)

    s, _, data = c.request(
        "POST",
        f"{api}/token",
        form={"grant_type": "client_credentials", "scope": P.GLEWLWYD_REVOKE_SCOPE},
        headers={"Authorization": auth},
    )
    bearer = pr.hide(json.loads(data)["access_token"]) if s == 200 else ""
    pr.case("glewlwyd", f"client_credentials grant, scope {P.GLEWLWYD_REVOKE_SCOPE}", s == 200, s, data)
    token = pr.hide(*mint(root, "glewlwyd"))
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": "Bearer " + bearer}
    )
    pr.case(
        "glewlwyd",
        "revoke with a Bearer token holding that scope",
        s == 200 and active(root, "glewlwyd", token) == 0,
        s,
        data,
    )
    token = pr.hide(*mint(root, "glewlwyd"))
    s, _, data = c.request("POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": "Bearer " + token})
    pr.case(
        "glewlwyd",
        "revoke with a Bearer token lacking the scope",
        s == 401 and active(root, "glewlwyd", token) == 1,
        s,
        data,
    )
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": "Bearer " + bearer}
    )
    revoked_bearer_ok = s == 200
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": bearer}, headers={"Authorization": "Bearer " + bearer}
    )
    s2, _, data2 = c.request(
        "POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": "Bearer " + bearer}
    )
    pr.case(
        "glewlwyd",
        "revoke with a Bearer token that was revoked",
        revoked_bearer_ok and s == 200 and s2 == 401,
        s2,
        data2,
    )

    refresh = pr.hide(*mint(root, "glewlwyd", kind="refresh"))
    s, _, data = c.request(
        "POST",
        f"{api}/revoke",
        form={"token": refresh, "token_type_hint": "refresh_token"},
        headers={"Authorization": auth},
    )
    pr.case("glewlwyd", "revoke a refresh token", s == 200 and active(root, "glewlwyd", refresh) == 0, s, data)
    s, _, data = c.request(
        "POST",
        f"{api}/token",
        form={"grant_type": "refresh_token", "refresh_token": refresh},
        headers={"Authorization": auth},
    )
    pr.case("glewlwyd", "refresh grant with the revoked refresh token", s == 400, s, data)

    password = pr.hide(Path(d["user"]["password_file"]).read_text())
    s, _, data = c.request(
        "POST",
        f"{api}/token",
        form={
            "grant_type": "password",
            "username": P.GLEWLWYD_USER,
            "password": password,
            "scope": "openid " + P.GLEWLWYD_TOKEN_SCOPE,
        },
        headers={"Authorization": auth},
    )
    reply = json.loads(data) if s == 200 else {}
    pr.hide(reply.get("access_token"), reply.get("refresh_token"), reply.get("id_token"))
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": reply.get("refresh_token", "")}, headers={"Authorization": auth}
    )
    pr.case(
        "glewlwyd",
        "revoking a refresh token leaves its access token",
        s == 200 and active(root, "glewlwyd", reply.get("access_token", "")) == 1,
        s,
        data,
        "access token still active",
    )
    s, headers, data = c.request(
        "GET",
        f"{api}/end_session?id_token_hint={reply.get('id_token', '')}"
        "&post_logout_redirect_uri=http://127.0.0.1/logged-out",
    )
    location = headers.get("location", "")
    for value in pr.hidden:
        location = location.replace(value, "<TOKEN>")
    pr.case(
        "glewlwyd", "RP-initiated logout GET end_session (no browser)", s == 302, s, data, f"Location: {location[:110]}"
    )

    special_id = P.GLEWLWYD_CLIENT + "-special"
    special = pr.hide(Path(d["clients"][special_id]["secret_file"]).read_text())

    def glewlwyd_send(kind, header):
        form = {"grant_type": "client_credentials", "scope": P.GLEWLWYD_TOKEN_SCOPE}
        if header is None:
            status, _, data = c.request(
                "POST", f"{api}/token", form={**form, "client_id": special_id, "client_secret": special}
            )
        else:
            status, _, data = c.request("POST", f"{api}/token", form=form, headers={"Authorization": header})
        if status == 200:
            pr.hide(json.loads(data)["access_token"])
        return status, data, status == 200

    encoding_cases(pr, "glewlwyd", glewlwyd_send, special_id, special, raw_ok=True, encoded_ok=False, form_ok=True)

    token = pr.hide(*mint(root, "glewlwyd"))  # issued to session-cleanup
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token}, headers={"Authorization": raw_basic(special_id, special)}
    )
    pr.case(
        "glewlwyd",
        "another client revokes it, Basic",
        s == 200 and active(root, "glewlwyd", token) == 0,
        s,
        data,
        "revoked (a revocation scope is set)",
    )
    token = pr.hide(*mint(root, "glewlwyd"))
    s, _, data = c.request(
        "POST", f"{api}/revoke", form={"token": token, "client_id": special_id, "client_secret": special}
    )
    pr.case(
        "glewlwyd",
        "another client revokes it, form fields",
        s == 200 and active(root, "glewlwyd", token) == 0,
        s,
        data,
        "revoked",
    )

    expired = pr.hide(*mint(root, "glewlwyd", expired=True))
    short = f"/api/{P.GLEWLWYD_SHORT_PLUGIN}"
    s, _, data = c.request("POST", f"{short}/introspect", form={"token": expired}, headers={"Authorization": auth})
    was_inactive = s == 200 and json.loads(data).get("active") is False
    s, _, data = c.request("POST", f"{short}/revoke", form={"token": expired}, headers={"Authorization": auth})
    pr.case(
        "glewlwyd",
        "revoke an expired token (2-s plugin)",
        was_inactive and s == 200,
        s,
        data,
        "introspection said inactive before",
    )
    c.close()


def probe_keystone(root: Path, pr: Probe):
    d = P.provider_description(root, "keystone")
    c = P.Client(d["port"])
    s, _, data = c.request("GET", "/v3")
    pr.case("keystone", "GET /v3", s == 200, s, data)

    token, other = pr.hide(*mint(root, "keystone", 2))
    s, _, data = c.request("GET", "/v3/auth/tokens", headers={"X-Auth-Token": token, "X-Subject-Token": token})
    pr.case("keystone", "GET /v3/auth/tokens (self) of a valid token", s == 200, s, data)
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": token, "X-Subject-Token": token})
    pr.case(
        "keystone",
        "DELETE /v3/auth/tokens (self) of a valid token",
        s == 204 and active(root, "keystone", token) == 0,
        s,
        data,
    )
    s, _, data = c.request("GET", "/v3/auth/tokens", headers={"X-Auth-Token": other, "X-Subject-Token": token})
    pr.case("keystone", "GET /v3/auth/tokens of the revoked token", s == 404, s, data)
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": token, "X-Subject-Token": token})
    pr.case("keystone", "DELETE (self) of the revoked token again", s == 401, s, data, "already ended")
    s, _, data = c.request(
        "DELETE",
        "/v3/auth/tokens",
        headers={"X-Auth-Token": "gAAAAABno-such-token", "X-Subject-Token": "gAAAAABno-such-token"},
    )
    pr.case("keystone", "DELETE (self) of an unknown token", s == 401, s, data)
    expired = pr.hide(*mint(root, "keystone", expired=True))
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": expired, "X-Subject-Token": expired})
    pr.case("keystone", "DELETE (self) of an expired token", s == 401, s, data)
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": other})
    pr.case("keystone", "DELETE without X-Subject-Token", s == 403 and active(root, "keystone", other) == 1, s, data)

    app = d["application_credential"]
    app_secret = pr.hide(Path(app["secret_file"]).read_text())
    s, _, data = c.request(
        "POST",
        "/v3/OS-OAUTH2/token",
        form={"grant_type": "client_credentials"},
        headers={"Authorization": P.basic(app["client_id"], app_secret)},
    )
    reply = json.loads(data) if s == 200 else {}
    admin = pr.hide(reply.get("access_token", ""))
    pr.case(
        "keystone",
        "client_credentials grant (application credential), Basic",
        s == 200 and reply.get("token_type") == "Bearer",
        s,
        data,
    )
    s, _, data = c.request(
        "POST",
        "/v3/OS-OAUTH2/token",
        form={"grant_type": "client_credentials", "client_id": app["client_id"], "client_secret": app_secret},
    )
    pr.case("keystone", "client_credentials grant, form fields", s == 401, s, data, "Basic only")
    s, _, data = c.request(
        "POST",
        "/v3/OS-OAUTH2/token",
        form={"grant_type": "client_credentials"},
        headers={"Authorization": P.basic(app["client_id"], "wrong")},
    )
    pr.case("keystone", "client_credentials grant, bad secret", s == 401, s, data)
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": other})
    pr.case(
        "keystone",
        "DELETE another's token with the obtained admin token",
        s == 204 and active(root, "keystone", other) == 0,
        s,
        data,
    )
    s, _, data = c.request("DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": other})
    pr.case("keystone", "same, the token already revoked", s == 404, s, data)
    s, _, data = c.request(
        "DELETE", "/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": "gAAAAABno-such-token"}
    )
    pr.case("keystone", "same, an unknown token", s == 404, s, data)

    special = d["application_credentials"]["app-credential-special"]
    special_secret = pr.hide(Path(special["secret_file"]).read_text())

    def keystone_send(kind, header):
        status, _, data = c.request(
            "POST", "/v3/OS-OAUTH2/token", form={"grant_type": "client_credentials"}, headers={"Authorization": header}
        )
        if status == 200:
            pr.hide(json.loads(data)["access_token"])
        return status, data, status == 200

    encoding_cases(
        pr, "keystone", keystone_send, special["client_id"], special_secret, raw_ok=True, encoded_ok=False, form_ok=None
    )
    c.close()


def probe_leaks(root: Path, pr: Probe):
    """No secret and no token the probe used appears in a provider's logs, in
    providers.json, or in the command line of any process on the machine."""
    secrets_seen = list(pr.hidden)
    for secret_file in root.glob("*/secrets/*"):
        secrets_seen.append(secret_file.read_text())
    needles = [v.encode() for v in secrets_seen if len(v) >= 16]
    places = [
        p
        for p in root.rglob("*")
        if p.is_file() and (p.suffix in (".log", ".json", ".conf") or p.name == "providers.json")
    ]
    leaked = [str(p) for p in places if any(n in p.read_bytes() for n in needles)]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes()
        except OSError:
            continue
        if any(n in text for n in needles):
            leaked.append(str(cmdline))
    pr.case(
        "all",
        f"{len(needles)} secrets/tokens absent from {len(places)} logs/configs and all command lines",
        not leaked,
        "-",
        ", ".join(leaked).encode(),
    )


def main(root: Path, providers) -> int:
    pr = Probe()
    names = providers or list(P.load_description(root)["providers"])
    for name in names:
        {"dot": probe_dot, "glewlwyd": probe_glewlwyd, "keystone": probe_keystone}[name](root, pr)
    probe_leaks(root, pr)
    print(f"{pr.passed} passed, {pr.failed} failed")
    return 0 if pr.failed == 0 else 1
