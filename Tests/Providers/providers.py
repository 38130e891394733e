#!/usr/bin/env python3
"""Real OAuth 2.0 / OIDC identity providers on loopback, for session-cleanup's tests.

    providers.py install [--providers P,..] [--venv PATH]
    providers.py up      --dir DIR [--providers P,..] [--venv PATH] [--no-install]
                         [--dot-workers N] [--keystone-workers N] [--cpu-seconds S]
    providers.py status  --dir DIR
    providers.py down    --dir DIR
    providers.py mint    --dir DIR PROVIDER TOKENS_FILE N [--kind access|refresh]
                         [--client NAME] [--expired]
    providers.py check   --dir DIR PROVIDER TOKENS_FILE
    providers.py revoke  --dir DIR PROVIDER TOKENS_FILE [--client NAME] [--auth basic|form|bearer]
                         [--concurrency N]
    providers.py probe   --dir DIR [--providers P,..]

PROVIDER is one of: dot (django-oauth-toolkit from PyPI, gunicorn, SQLite), glewlwyd
(Debian 12 package, SQLite), keystone (Debian 12 python3-keystone, gunicorn, SQLite, Fernet).

`up` installs what is missing (apt with a policy-rc.d that exits 101, so no service starts on
the host; pip into a venv), sets every requested provider up in DIR at once, starts each on
127.0.0.1 with a free port, and writes DIR/providers.json: ports, URLs, client ids and the
paths of the files holding secrets (mode 0600; no secret is ever printed, put in a command
line or in providers.json). `down` stops what `up` started, by the PIDs it recorded.
`mint` writes N tokens (one per line, 0600) and `check` prints how many of a file's tokens
the provider still holds active: {"total": N, "active": A, "inactive": N - A}. `revoke` ends
every token of a file the way RECIPES.md says (a reference client for comparisons: statuses
seen and seconds taken). `probe` sends
the requests RECIPES.md documents and checks each answer ("N passed, N failed").

Standard library only; runs on any python3 >= 3.9. See RECIPES.md beside this file.
"""

import argparse
import base64
import concurrent.futures
import gzip
import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALL_PROVIDERS = ("dot", "glewlwyd", "keystone")
LOOPBACK = "127.0.0.1"
DEBIAN_PYTHON = "/usr/bin/python3"  # python3-keystone lives in Debian's dist-packages
DEFAULT_VENV = Path(os.environ.get("XDG_CACHE_HOME") or "/var/cache") / "session-cleanup-tests" / "venv"
READY_TIMEOUT = 60.0

APT_PACKAGES = {
    "glewlwyd": ["glewlwyd", "dbconfig-no-thanks", "sqlite3"],
    "keystone": ["python3-keystone", "python3-gunicorn"],
}
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")

GLEWLWYD_PLUGIN = "oidc"  # the OIDC plugin instance every recipe uses
GLEWLWYD_SHORT_PLUGIN = "oidc-short"  # same, with 2-second access tokens (expired-token cases)
GLEWLWYD_CLIENT = "session-cleanup"
GLEWLWYD_REVOKE_SCOPE = "session-cleanup-revoke"  # a bearer token with it may revoke any token
GLEWLWYD_TOKEN_SCOPE = "sc-user"  # the scope of the tokens minted for tests
GLEWLWYD_USER = "alice"
GLEWLWYD_SHORT_SECONDS = 2
# Ends the secret of each "-special" client: characters that RFC 6749 section 2.3.1's
# form-encoding of client_id and secret before HTTP Basic changes, so the probe can tell
# whether a server decodes them (DOT does; glewlwyd and Keystone take the parts raw).
SPECIAL_SUFFIX = "+/=%:&~"


class ProviderError(Exception):
    """A provider could not be installed, set up, started or asked; the message says which."""


def log(message: str) -> None:
    print(f"providers: {message}", file=sys.stderr, flush=True)


def write_private(path: Path, text: str) -> None:
    """Creates (or replaces) a file readable by its owner only, 0600 from the first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def write_json_atomically(path: Path, value) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def child_env(extra=None) -> dict:
    env = dict(os.environ)
    env.pop("PORT", None)  # gunicorn would default its bind address to 0.0.0.0:$PORT
    env.update(extra or {})
    return env


def run(cmd, *, env=None, cwd=None, what: str, stdin_text=None) -> str:
    """Runs a setup command; its output goes to the caller only on failure (it holds no
    secret: secrets travel in files and in the environment, never on a command line)."""
    result = subprocess.run(
        [str(c) for c in cmd],
        env=env or child_env(),
        cwd=cwd,
        input=stdin_text,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-3000:]
        raise ProviderError(f"{what} failed (exit {result.returncode}):\n{tail}")
    return result.stdout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def listening_socket() -> socket.socket:
    """A loopback socket bound to a free port and listening, to hand to gunicorn (fd://N),
    so the port cannot be taken by anyone between choosing it and serving on it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((LOOPBACK, 0))
    s.listen(512)
    s.set_inheritable(True)
    return s


class Steps:
    """Wall-clock seconds of each setup step, for providers.json ("setup_steps")."""

    def __init__(self):
        self.seconds = {}

    def __call__(self, name):
        steps = self

        class Timer:
            def __enter__(self):
                self.start = time.monotonic()

            def __exit__(self, *exc):
                steps.seconds[name] = round(time.monotonic() - self.start, 2)
                return False

        return Timer()


# --------------------------------------------------------------------------------------------
# Plain HTTP client (keep-alive, one connection per thread)


class Client:
    def __init__(self, port: int, timeout: float = 30.0):
        self.port = port
        self.timeout = timeout
        self.conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)

    def request(self, method, path, *, form=None, json_body=None, headers=None):
        h = dict(headers or {})
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            h["Content-Type"] = "application/x-www-form-urlencoded"
        elif json_body is not None:
            body = json.dumps(json_body)
            h["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=body, headers=h)
                response = self.conn.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept-alive connection the server had closed: one fresh connection.
                self.conn.close()
                self.conn = http.client.HTTPConnection(LOOPBACK, self.port, timeout=self.timeout)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        self.conn.close()


def basic(client_id: str, secret: str) -> str:
    """HTTP Basic per RFC 6749 section 2.3.1: each part form-urlencoded, then base64."""
    pair = f"{urllib.parse.quote_plus(client_id)}:{urllib.parse.quote_plus(secret)}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def parallel(items, work, threads: int = 4):
    """Runs work(client_slot, item) over items on `threads` threads; results in item order."""
    local = threading.local()
    clients = []
    lock = threading.Lock()

    def call(item):
        if not hasattr(local, "slot"):
            local.slot = {}
            with lock:
                clients.append(local.slot)
        return work(local.slot, item)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(call, items))
    finally:
        for slot in clients:
            if "client" in slot:
                slot["client"].close()


def wait_ready(port: int, path: str, proc: subprocess.Popen, name: str, log_path: Path) -> float:
    start = time.monotonic()
    while time.monotonic() - start < READY_TIMEOUT:
        if proc.poll() is not None:
            raise ProviderError(f"{name} exited with {proc.returncode} while starting; see {log_path}")
        try:
            c = http.client.HTTPConnection(LOOPBACK, port, timeout=2)
            c.request("GET", path)
            status = c.getresponse().status
            c.close()
            if status < 500:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.1)
    raise ProviderError(f"{name} did not answer on 127.0.0.1:{port}{path} within {READY_TIMEOUT:.0f} s; see {log_path}")


def start_process(cmd, *, env, cwd, log_path: Path, pass_fds=()) -> subprocess.Popen:
    log_file = open(log_path, "ab")
    try:
        return subprocess.Popen(
            [str(c) for c in cmd],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: `down` ends exactly this group
            pass_fds=pass_fds,
        )
    finally:
        log_file.close()


# --------------------------------------------------------------------------------------------
# Installation


def dpkg_installed(package: str) -> bool:
    result = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", package], capture_output=True, text=True)
    return result.returncode == 0 and result.stdout.startswith("ii")


class PolicyRcD:
    """While installing: a /usr/sbin/policy-rc.d that exits 101 (no service may start).
    An existing one is put back afterwards, one that did not exist is removed."""

    def __enter__(self):
        self.backup = POLICY_RC_D.read_bytes() if POLICY_RC_D.exists() else None
        self.mode = POLICY_RC_D.stat().st_mode if POLICY_RC_D.exists() else None
        POLICY_RC_D.write_text("#!/bin/sh\n# session-cleanup tests: no service starts during install\nexit 101\n")
        os.chmod(POLICY_RC_D, 0o755)
        return self

    def __exit__(self, *exc):
        if self.backup is None:
            POLICY_RC_D.unlink(missing_ok=True)
        else:
            POLICY_RC_D.write_bytes(self.backup)
            os.chmod(POLICY_RC_D, self.mode & 0o7777)
        return False


def apt_install(packages) -> None:
    missing = [p for p in packages if not dpkg_installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise ProviderError(f"packages missing and not root to install them: {' '.join(missing)}")
    env = child_env({"DEBIAN_FRONTEND": "noninteractive"})
    log(f"apt-get install {' '.join(missing)}")
    with PolicyRcD():
        if "glewlwyd" in missing:
            # "Personalized" makes the package configure a database of its own (and fail
            # without one); the tests bring their own configuration and SQLite file.
            run(
                ["debconf-set-selections"],
                env=env,
                stdin_text="glewlwyd glewlwyd/config_type select No configuration\n",
                what="debconf-set-selections",
            )
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
        try:
            run(cmd, env=env, what="apt-get install")
        except ProviderError:
            run(["apt-get", "update", "-q"], env=env, what="apt-get update")
            run(cmd, env=env, what="apt-get install")
        if "glewlwyd" in missing:
            # The package enables its unit for the next boot; this host must not run one.
            # (`systemctl disable` works without a running systemd and also turns the SysV
            # links off; deb-systemd-helper refuses to run outside a maintainer script.)
            if shutil.which("systemctl"):
                subprocess.run(["systemctl", "disable", "glewlwyd.service"], capture_output=True)


def requirements_digest() -> str:
    h = hashlib.sha256((HERE / "dot" / "requirements.txt").read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()


def ensure_venv(venv: Path) -> None:
    stamp = venv / "session-cleanup-requirements.sha256"
    if stamp.exists() and stamp.read_text().strip() == requirements_digest():
        return
    log(f"creating {venv} (pip install -r dot/requirements.txt)")
    if subprocess.run([sys.executable, "-c", "import ensurepip"], capture_output=True).returncode != 0:
        apt_install(["python3-venv"])
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "venv", venv], what="python3 -m venv")
    run(
        [venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", "-r", HERE / "dot" / "requirements.txt"],
        what="pip install",
    )
    stamp.write_text(requirements_digest() + "\n")


def install(providers, venv: Path) -> dict:
    timings = {}
    packages = [p for name in providers for p in APT_PACKAGES.get(name, [])]
    if packages:
        start = time.monotonic()
        apt_install(packages)
        timings["apt"] = round(time.monotonic() - start, 2)
    if "dot" in providers:
        start = time.monotonic()
        ensure_venv(venv)
        timings["venv"] = round(time.monotonic() - start, 2)
    return timings


# --------------------------------------------------------------------------------------------
# django-oauth-toolkit


def dot_env(state: Path) -> dict:
    return child_env({"DOT_STATE_DIR": str(state), "DJANGO_SETTINGS_MODULE": "dotsite.settings"})


def dot_manage(desc: dict, *args) -> str:
    return run(
        [desc["venv"] + "/bin/python", HERE / "dot" / "manage.py", *args],
        env=dot_env(Path(desc["state_dir"])),
        cwd=HERE / "dot",
        what=f"manage.py {args[0]}",
    )


def dot_versions(venv: Path) -> dict:
    out = run(
        [
            venv / "bin" / "python",
            "-c",
            "import json, importlib.metadata as m; print(json.dumps({p: m.version(p) for p in "
            "('django-oauth-toolkit', 'Django', 'oauthlib', 'gunicorn')}))",
        ],
        what="version query",
    )
    return json.loads(out)


def up_dot(root: Path, venv: Path, workers: int, cpu_seconds: float) -> dict:
    base = private_dir(root / "dot")
    state = private_dir(base / "state")
    write_private(state / "django-secret-key", secrets.token_urlsafe(50))
    (state / "db.sqlite3").unlink(missing_ok=True)
    desc = {"venv": str(venv), "state_dir": str(state)}
    steps = Steps()
    with steps("migrate_and_provision"):
        provisioned = json.loads(
            dot_manage(desc, "provision", "--secrets-dir", base / "secrets", "--cpu-seconds", cpu_seconds)
        )

    sock = listening_socket()
    port = sock.getsockname()[1]
    log_path = base / "server.log"
    cmd = [
        venv / "bin" / "gunicorn",
        "--bind",
        f"fd://{sock.fileno()}",
        "--workers",
        workers,
        "--worker-class",
        "sync",
        "--timeout",
        "60",
        "--pid",
        base / "gunicorn.pid",
        "--no-control-socket",
        "--chdir",
        HERE / "dot",
        "dotsite.wsgi",
    ]
    proc = start_process(cmd, env=dot_env(state), cwd=HERE / "dot", log_path=log_path, pass_fds=(sock.fileno(),))
    sock.close()
    try:
        with steps("start_until_ready"):
            wait_ready(port, "/.well-known/oauth-authorization-server", proc, "django-oauth-toolkit", log_path)
    except ProviderError:
        stop_pid(proc.pid, "dot")
        raise
    url = f"http://{LOOPBACK}:{port}"
    return {
        "pid": proc.pid,
        "port": port,
        "base_url": url,
        "metadata_url": f"{url}/.well-known/oauth-authorization-server",
        "token_endpoint": f"{url}/o/token/",
        "revocation_endpoint": f"{url}/o/revoke_token/",
        "introspection_endpoint": f"{url}/o/introspect/",
        "clients": provisioned["clients"],
        "token_owner": provisioned["token_owner"],
        "workers": workers,
        "venv": str(venv),
        "state_dir": str(state),
        "log": str(log_path),
        "versions": dot_versions(venv),
        "setup_steps": steps.seconds,
    }


def mint_dot(desc, tokens_file: Path, count: int, kind: str, client, expired: bool) -> dict:
    args = ["mint", tokens_file, count, "--kind", kind, "--client", client or "confidential"]
    if expired:
        args += ["--expires-in", "-60"]
    return json.loads(dot_manage(desc, *args))


def check_dot(desc, tokens_file: Path) -> dict:
    return json.loads(dot_manage(desc, "check_tokens", tokens_file))


# --------------------------------------------------------------------------------------------
# glewlwyd

GLEWLWYD_CONF = """# session-cleanup tests: written by providers.py
port={port}
bind_address="127.0.0.1"
external_url="http://127.0.0.1:{port}"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="{log}"
cookie_secure=0
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
hash_algorithm="SHA512"
database =
{{
  type = "sqlite3"
  path = "{db}"
}};
"""


def glewlwyd_plugin(name: str, port: int, access_seconds: int) -> dict:
    return {
        "module": "oidc",
        "name": name,
        "display_name": f"OpenID Connect ({name})",
        "enabled": True,
        "parameters": {
            "iss": f"http://{LOOPBACK}:{port}/api/{name}",
            "jwt-type": "sha",
            "jwt-key-size": "256",
            "key": secrets.token_urlsafe(32),  # HS256 signing key; stays inside the database
            "access-token-duration": access_seconds,
            "refresh-token-duration": 14 * 24 * 3600,
            "code-duration": 600,
            "refresh-token-rolling": False,
            "allow-non-oidc": True,
            "auth-type-client-enabled": True,
            "auth-type-code-enabled": True,
            "auth-type-password-enabled": True,
            "auth-type-refresh-enabled": True,
            "auth-type-implicit-enabled": False,
            "auth-type-token-enabled": False,
            "introspection-revocation-allowed": True,
            "introspection-revocation-allow-target-client": True,
            "introspection-revocation-auth-scope": [GLEWLWYD_REVOKE_SCOPE],
            "session-management-allowed": True,
            "session-cookie-name": f"GLEWLWYD_{name.upper().replace('-', '_')}_SID",
            "session-cookie-expiration": 2419200,
        },
    }


def glewlwyd_setup_api(port: int, secrets_dir: Path) -> dict:
    """Configures a fresh glewlwyd through its admin API, as an operator would."""
    c = Client(port)
    cookie = {}

    def call(method, path, body, ok=(200,)):
        headers = {"Cookie": cookie["value"]} if cookie else {}
        status, headers_in, data = c.request(method, "/api" + path, json_body=body, headers=headers)
        if "set-cookie" in headers_in:
            cookie["value"] = headers_in["set-cookie"].split(";", 1)[0]
        if status not in ok:
            raise ProviderError(f"glewlwyd admin API {method} {path}: {status} {data[:300]!r}")

    # The database starts with glewlwyd's published default administrator; it is given a
    # random password at once, and the session keeps working on its cookie.
    call("POST", "/auth/", {"username": "admin", "password": "password"})
    admin_password = secrets.token_urlsafe(24)
    call(
        "PUT",
        "/user/admin",
        {"name": "The Administrator", "enabled": True, "password": admin_password, "scope": ["g_admin", "g_profile"]},
    )
    write_private(secrets_dir / "admin.password", admin_password)

    for scope, text in (
        (GLEWLWYD_REVOKE_SCOPE, "May revoke and introspect any token"),
        (GLEWLWYD_TOKEN_SCOPE, "Scope of the test tokens"),
    ):
        call(
            "POST",
            "/scope/",
            {"name": scope, "display_name": scope, "description": text, "password_required": False, "scheme": {}},
        )
    call("POST", "/mod/plugin/", glewlwyd_plugin(GLEWLWYD_PLUGIN, port, 36000))
    call("POST", "/mod/plugin/", glewlwyd_plugin(GLEWLWYD_SHORT_PLUGIN, port, GLEWLWYD_SHORT_SECONDS))

    described = {}
    for client_id, suffix in ((GLEWLWYD_CLIENT, ""), (GLEWLWYD_CLIENT + "-special", SPECIAL_SUFFIX)):
        described[client_id] = glewlwyd_add_client(call, client_id, secrets.token_urlsafe(36) + suffix, secrets_dir)

    user_password = secrets.token_urlsafe(24)
    call(
        "POST",
        "/user/",
        {
            "username": GLEWLWYD_USER,
            "name": "Alice",
            "enabled": True,
            "password": user_password,
            "scope": [GLEWLWYD_TOKEN_SCOPE, "openid"],
        },
    )
    write_private(secrets_dir / f"{GLEWLWYD_USER}.password", user_password)
    c.close()
    return described


def glewlwyd_add_client(call, client_id: str, client_secret: str, secrets_dir: Path) -> dict:
    call(
        "POST",
        "/client/",
        {
            "client_id": client_id,
            "name": client_id,
            "description": "session-cleanup tests: confidential client",
            "confidential": True,
            "enabled": True,
            "client_secret": client_secret,  # glewlwyd compares a client secret as stored
            "authorization_type": ["client_credentials", "password", "refresh_token", "code", "delete_token"],
            # Without this list glewlwyd refuses every client authentication of a confidential client.
            "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
            "scope": [GLEWLWYD_REVOKE_SCOPE, GLEWLWYD_TOKEN_SCOPE, "openid"],
            "redirect_uri": [f"http://{LOOPBACK}/callback"],
            "post_logout_redirect_uri": f"http://{LOOPBACK}/logged-out",
        },
    )
    write_private(secrets_dir / f"{client_id}.secret", client_secret)
    write_private(secrets_dir / f"{client_id}.credential", f"{client_id}:{client_secret}")
    return {
        "client_id": client_id,
        "type": "confidential",
        "auth_methods": ["client_secret_basic", "client_secret_post"],
        "secret_file": str(secrets_dir / f"{client_id}.secret"),
        "credential_file": str(secrets_dir / f"{client_id}.credential"),
    }


def up_glewlwyd(root: Path) -> dict:
    base = private_dir(root / "glewlwyd")
    secrets_dir = private_dir(base / "secrets")
    steps = Steps()
    db = base / "glewlwyd.db"
    db.unlink(missing_ok=True)
    schema = gzip.decompress(Path("/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz").read_bytes()).decode()
    # WAL: a token grant or a revocation is one commit, and in SQLite's default journal mode
    # every commit waits for two fsyncs; in WAL mode one, and readers never block the writer.
    # User passwords are only checked when tests mint refresh tokens (password grant): a cheap
    # PBKDF2 for them (1,000 iterations instead of 150,000) makes 200 grants seconds, not tens.
    cheap_user_hash = (
        "UPDATE g_user_module_instance SET gumi_parameters = "
        "json_set(gumi_parameters, '$.\"pbkdf2-iterations\"', 1000) WHERE gumi_name = 'database';\n"
    )
    with steps("database"):
        run(
            ["sqlite3", db],
            stdin_text=schema + "\nPRAGMA journal_mode=WAL;\n" + cheap_user_hash,
            what="sqlite3 < init.sqlite3.sql",
        )
    log_path = base / "glewlwyd.log"
    log_path.unlink(missing_ok=True)
    conf = base / "glewlwyd.conf"
    for attempt in range(3):  # glewlwyd binds a port it is given: a lost race means retry
        port = free_port()
        conf.write_text(GLEWLWYD_CONF.format(port=port, log=log_path, db=db))
        proc = start_process(
            ["/usr/bin/glewlwyd", f"--config-file={conf}"], env=child_env(), cwd=base, log_path=base / "stdout.log"
        )
        try:
            with steps("start_until_ready"):
                wait_ready(port, "/config", proc, "glewlwyd", log_path)
            break
        except ProviderError:
            stop_pid(proc.pid, "glewlwyd")
            if attempt == 2:
                raise
    with steps("admin_api_configuration"):
        clients = glewlwyd_setup_api(port, secrets_dir)
    url = f"http://{LOOPBACK}:{port}"
    plugin = f"{url}/api/{GLEWLWYD_PLUGIN}"
    short = f"{url}/api/{GLEWLWYD_SHORT_PLUGIN}"
    return {
        "pid": proc.pid,
        "port": port,
        "base_url": url,
        "issuer": plugin,
        "discovery_url": f"{plugin}/.well-known/openid-configuration",
        "token_endpoint": f"{plugin}/token",
        "revocation_endpoint": f"{plugin}/revoke",
        "introspection_endpoint": f"{plugin}/introspect",
        "end_session_endpoint": f"{plugin}/end_session",
        "token_scope": GLEWLWYD_TOKEN_SCOPE,
        "revocation_scope": GLEWLWYD_REVOKE_SCOPE,
        "clients": clients,
        "user": {"username": GLEWLWYD_USER, "password_file": str(secrets_dir / f"{GLEWLWYD_USER}.password")},
        "admin_password_file": str(secrets_dir / "admin.password"),
        "short_lived": {
            "issuer": short,
            "token_endpoint": f"{short}/token",
            "revocation_endpoint": f"{short}/revoke",
            "introspection_endpoint": f"{short}/introspect",
            "access_token_seconds": GLEWLWYD_SHORT_SECONDS,
        },
        "config_file": str(conf),
        "log": str(log_path),
        "versions": {"glewlwyd": package_version("glewlwyd")},
        "setup_steps": steps.seconds,
    }


def glewlwyd_client_auth(desc) -> str:
    client = desc["clients"][GLEWLWYD_CLIENT]
    return basic(client["client_id"], Path(client["secret_file"]).read_text())


def mint_glewlwyd(desc, tokens_file: Path, count: int, kind: str, client, expired: bool) -> dict:
    if client not in (None, GLEWLWYD_CLIENT):
        raise ProviderError(f"glewlwyd has one client, {GLEWLWYD_CLIENT}")
    auth = glewlwyd_client_auth(desc)
    plugin = GLEWLWYD_SHORT_PLUGIN if expired else GLEWLWYD_PLUGIN
    if kind == "access":
        form = {"grant_type": "client_credentials", "scope": GLEWLWYD_TOKEN_SCOPE}
    else:
        password = Path(desc["user"]["password_file"]).read_text()
        form = {
            "grant_type": "password",
            "username": GLEWLWYD_USER,
            "password": password,
            "scope": GLEWLWYD_TOKEN_SCOPE,
        }
    field = "access_token" if kind == "access" else "refresh_token"

    def grant(slot, _):
        slot.setdefault("client", Client(desc["port"]))
        status, _, data = slot["client"].request(
            "POST", f"/api/{plugin}/token", form=form, headers={"Authorization": auth}
        )
        if status != 200:
            raise ProviderError(f"glewlwyd token endpoint answered {status}")
        return json.loads(data)[field]

    tokens = parallel(range(count), grant)
    write_private(tokens_file, "".join(t + "\n" for t in tokens))
    if expired:
        time.sleep(GLEWLWYD_SHORT_SECONDS + 1.1)  # glewlwyd's expiry has one-second steps
    return {"minted": count, "kind": kind, "client": GLEWLWYD_CLIENT, "expired": expired}


def check_glewlwyd(desc, tokens_file: Path) -> dict:
    """Asks glewlwyd's introspection endpoint (RFC 7662) about each token, as the client the
    tokens were issued to; tokens from the short-lived plugin are asked of that plugin."""
    auth = glewlwyd_client_auth(desc)
    tokens = sorted({line.strip() for line in tokens_file.read_text().splitlines() if line.strip()})

    def active(slot, token):
        slot.setdefault("client", Client(desc["port"]))
        for plugin in (GLEWLWYD_PLUGIN, GLEWLWYD_SHORT_PLUGIN):
            status, _, data = slot["client"].request(
                "POST", f"/api/{plugin}/introspect", form={"token": token}, headers={"Authorization": auth}
            )
            if status != 200:
                raise ProviderError(f"glewlwyd introspection answered {status}")
            if json.loads(data).get("active") is True:
                return True
        return False

    count = sum(parallel(tokens, active))
    return {"total": len(tokens), "active": count, "inactive": len(tokens) - count}


# --------------------------------------------------------------------------------------------
# Keystone

KEYSTONE_CONF = """# session-cleanup tests: written by providers.py
[DEFAULT]
log_file = {base}/keystone.log
[database]
connection = sqlite:///{base}/keystone.db
[token]
provider = fernet
expiration = {expiration}
[fernet_tokens]
key_repository = {base}/fernet-keys
[fernet_receipts]
key_repository = {base}/fernet-keys
[credential]
key_repository = {base}/credential-keys
{cache}"""
KEYSTONE_EXPIRATION = 4 * 3600


def keystone_env(base: Path, extra=None) -> dict:
    return child_env(
        {"OS_KEYSTONE_CONFIG_DIR": str(base), "OS_KEYSTONE_CONFIG_FILES": "keystone.conf", **(extra or {})}
    )


KEYSTONE_MEMORY_CACHE = """[cache]
# One worker only: each process has its own memory cache, and a revocation seen by one
# worker would not reach another's cached list of revocation events.
enabled = true
backend = dogpile.cache.memory
"""


def up_keystone(root: Path, workers: int, cache: bool = False) -> dict:
    base = private_dir(root / "keystone")
    for old in ("keystone.db", "keystone.db-wal", "keystone.db-shm"):
        (base / old).unlink(missing_ok=True)
    for keys in ("fernet-keys", "credential-keys"):
        shutil.rmtree(base / keys, ignore_errors=True)
        private_dir(base / keys)
    secrets_dir = private_dir(base / "secrets")
    conf = base / "keystone.conf"
    if cache and workers != 1:
        raise ProviderError("--keystone-cache memory needs --keystone-workers 1")
    conf.write_text(
        KEYSTONE_CONF.format(base=base, expiration=KEYSTONE_EXPIRATION, cache=KEYSTONE_MEMORY_CACHE if cache else "")
    )
    manage = ["/usr/bin/keystone-manage", "--config-file", conf]
    user = ["--keystone-user", "root", "--keystone-group", "root"]
    steps = Steps()
    with steps("db_sync_and_key_setup"), concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        jobs = [
            pool.submit(run, manage + ["db_sync"], what="keystone-manage db_sync"),
            pool.submit(run, manage + ["fernet_setup", *user], what="keystone-manage fernet_setup"),
            pool.submit(run, manage + ["credential_setup", *user], what="keystone-manage credential_setup"),
        ]
        for job in jobs:
            job.result()
    # Several gunicorn workers write revocation events at once: in SQLite's default journal
    # mode a reader's lock made a DELETE /v3/auth/tokens fail with 500 "database is locked"
    # after 5 s (seen here); WAL lets readers and one writer proceed together.
    run(["sqlite3", base / "keystone.db"], stdin_text="PRAGMA journal_mode=WAL;\n", what="sqlite3 WAL")

    sock = listening_socket()
    port = sock.getsockname()[1]
    url = f"http://{LOOPBACK}:{port}"
    admin_password = secrets.token_urlsafe(24)
    write_private(secrets_dir / "admin.password", admin_password)
    with steps("bootstrap"):
        run(
            manage
            + [
                "bootstrap",
                "--bootstrap-admin-url",
                f"{url}/v3/",
                "--bootstrap-public-url",
                f"{url}/v3/",
                "--bootstrap-region-id",
                "RegionOne",
            ],
            env=child_env({"OS_BOOTSTRAP_PASSWORD": admin_password}),
            what="keystone-manage bootstrap",
        )
    log_path = base / "server.log"
    cmd = [
        DEBIAN_PYTHON,
        "-m",
        "gunicorn",
        "--bind",
        f"fd://{sock.fileno()}",
        "--workers",
        workers,
        "--worker-class",
        "sync",
        "--timeout",
        "60",
        "--pid",
        base / "gunicorn.pid",
        "--chdir",
        HERE / "keystone",
        "keystone_public_wsgi",
    ]
    proc = start_process(
        cmd, env=keystone_env(base), cwd=HERE / "keystone", log_path=log_path, pass_fds=(sock.fileno(),)
    )
    sock.close()
    try:
        # The test user and application credentials are written while the server boots
        # (both take ~1.5 s of Python start-up; the server reads them per request).
        with steps("provision_while_starting"):
            provisioned = json.loads(
                run(
                    [DEBIAN_PYTHON, HERE / "keystone" / "keystone_fixture.py", "provision", conf, secrets_dir],
                    what="keystone_fixture.py provision",
                )
            )
        with steps("start_until_ready"):
            wait_ready(port, "/v3", proc, "keystone", log_path)
    except ProviderError:
        stop_pid(proc.pid, "keystone")
        raise
    return {
        "pid": proc.pid,
        "port": port,
        "base_url": url,
        "auth_url": f"{url}/v3",
        "tokens_url": f"{url}/v3/auth/tokens",
        "oauth2_token_endpoint": f"{url}/v3/OS-OAUTH2/token",
        "admin": {
            "user": "admin",
            "project": "admin",
            "domain": "default",
            "password_file": str(secrets_dir / "admin.password"),
        },
        "application_credential": provisioned["application_credential"],
        "application_credentials": provisioned["application_credentials"],
        "token_owner": provisioned["token_owner"],
        "token_expiration_seconds": KEYSTONE_EXPIRATION,
        "workers": workers,
        "cache": "memory" if cache else "none",
        "config_file": str(conf),
        "log": str(log_path),
        "keystone_log": str(base / "keystone.log"),
        "versions": {
            "python3-keystone": package_version("python3-keystone"),
            "python3-gunicorn": package_version("python3-gunicorn"),
        },
        "setup_steps": steps.seconds,
    }


def keystone_fixture(desc, *args) -> str:
    return run([DEBIAN_PYTHON, HERE / "keystone" / "keystone_fixture.py", *args], what=f"keystone_fixture.py {args[0]}")


def mint_keystone(desc, tokens_file: Path, count: int, kind: str, client, expired: bool) -> dict:
    if kind != "access" or client is not None:
        raise ProviderError("keystone mints access tokens for user alice only")
    args = ["mint", desc["config_file"], tokens_file, count] + (["--expired"] if expired else [])
    return json.loads(keystone_fixture(desc, *args))


def check_keystone(desc, tokens_file: Path) -> dict:
    return json.loads(keystone_fixture(desc, "check", desc["config_file"], tokens_file))


# --------------------------------------------------------------------------------------------
# Lifecycle


def package_version(package: str) -> str:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else "not installed"


def description_path(root: Path) -> Path:
    return root / "providers.json"


def load_description(root: Path) -> dict:
    path = description_path(root)
    if not path.exists():
        return {"dir": str(root), "providers": {}}
    return json.loads(path.read_text())


def process_is_ours(pid: int, name: str, root: Path) -> bool:
    """The recorded PID still names the process `up` started: its command line refers to
    this provider directory (gunicorn's --pid file, glewlwyd's --config-file)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return str(root / name) in cmdline


def stop_pid(pid: int, name: str, root: Path = None) -> None:
    if root is not None and not process_is_ours(pid, name, root):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
            if waited == pid:
                break
        except ChildProcessError:
            if not Path(f"/proc/{pid}").exists():
                break
        time.sleep(0.05)
    else:
        log(f"{name} (pid {pid}) still running 15 s after SIGTERM: SIGKILL to its process group")
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


UP = {"dot": up_dot, "glewlwyd": up_glewlwyd, "keystone": up_keystone}
MINT = {"dot": mint_dot, "glewlwyd": mint_glewlwyd, "keystone": mint_keystone}
CHECK = {"dot": check_dot, "glewlwyd": check_glewlwyd, "keystone": check_keystone}


def cmd_up(args) -> int:
    root = private_dir(Path(args.dir).resolve())
    venv = Path(args.venv).resolve()
    providers = args.providers
    timings = {}
    if not args.no_install:
        timings["install"] = install(providers, venv)
    description = load_description(root)
    running = [
        p
        for p in providers
        if p in description["providers"] and process_is_ours(description["providers"][p]["pid"], p, root)
    ]
    if running:
        raise ProviderError(f"already running in {root}: {', '.join(running)} (run `down` first)")

    def setup(name):
        start = time.monotonic()
        if name == "dot":
            desc = up_dot(root, venv, args.dot_workers, args.cpu_seconds)
        elif name == "keystone":
            desc = up_keystone(root, args.keystone_workers, args.keystone_cache == "memory")
        else:
            desc = UP[name](root)
        desc["setup_seconds"] = round(time.monotonic() - start, 2)
        return name, desc

    start = time.monotonic()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(providers)) as pool:
        for future in concurrent.futures.as_completed([pool.submit(setup, p) for p in providers]):
            try:
                name, desc = future.result()
            except ProviderError as error:
                failures.append(str(error))
                continue
            description["providers"][name] = desc
            timings[f"setup_{name}"] = desc["setup_seconds"]
            write_json_atomically(description_path(root), description)
    timings["setup_all"] = round(time.monotonic() - start, 2)
    description["dir"] = str(root)
    write_json_atomically(description_path(root), description)
    print(json.dumps({"description": str(description_path(root)), "timings": timings}))
    if failures:
        for failure in failures:
            log(failure)
        return 1
    return 0


def cmd_down(args) -> int:
    root = Path(args.dir).resolve()
    description = load_description(root)
    for name, desc in list(description["providers"].items()):
        if args.providers and name not in args.providers:
            continue
        stop_pid(desc["pid"], name, root)
        del description["providers"][name]
    write_json_atomically(description_path(root), description)
    return 0


def cmd_status(args) -> int:
    root = Path(args.dir).resolve()
    description = load_description(root)
    status = {
        name: {"pid": d["pid"], "port": d["port"], "running": process_is_ours(d["pid"], name, root)}
        for name, d in description["providers"].items()
    }
    print(json.dumps(status))
    return 0 if status and all(s["running"] for s in status.values()) else 1


def provider_description(root: Path, name: str) -> dict:
    description = load_description(root)
    if name not in description["providers"]:
        raise ProviderError(f"{name} is not up in {root}")
    return description["providers"][name]


def cmd_mint(args) -> int:
    desc = provider_description(Path(args.dir).resolve(), args.provider)
    start = time.monotonic()
    result = MINT[args.provider](
        desc, Path(args.tokens_file).resolve(), args.count, args.kind, args.client, args.expired
    )
    result["seconds"] = round(time.monotonic() - start, 2)
    print(json.dumps(result))
    return 0


def cmd_check(args) -> int:
    desc = provider_description(Path(args.dir).resolve(), args.provider)
    start = time.monotonic()
    result = CHECK[args.provider](desc, Path(args.tokens_file).resolve())
    result["seconds"] = round(time.monotonic() - start, 2)
    print(json.dumps(result))
    return 0


def revoke_requests(name: str, desc: dict, client, auth_kind: str):
    """The recipe's request for one token, as (method, path, form, headers)."""
    if name == "keystone":
        return lambda token: ("DELETE", "/v3/auth/tokens", None, {"X-Auth-Token": token, "X-Subject-Token": token})
    if name == "dot":
        client = client or "confidential"
        path = "/o/revoke_token/"
        if desc["clients"][client]["type"] == "public":
            return lambda token: ("POST", path, {"token": token, "client_id": client}, {})
    else:
        client = client or GLEWLWYD_CLIENT
        path = f"/api/{GLEWLWYD_PLUGIN}/revoke"
    secret = Path(desc["clients"][client]["secret_file"]).read_text()
    if auth_kind == "form":
        return lambda token: ("POST", path, {"token": token, "client_id": client, "client_secret": secret}, {})
    if auth_kind == "bearer":
        if name != "glewlwyd":
            raise ProviderError("--auth bearer: only glewlwyd accepts a bearer token at its revocation endpoint")
        c = Client(desc["port"])
        status, _, data = c.request(
            "POST",
            f"/api/{GLEWLWYD_PLUGIN}/token",
            form={"grant_type": "client_credentials", "scope": GLEWLWYD_REVOKE_SCOPE},
            headers={"Authorization": basic(client, secret)},
        )
        c.close()
        if status != 200:
            raise ProviderError(f"glewlwyd token endpoint answered {status}")
        bearer = {"Authorization": "Bearer " + json.loads(data)["access_token"]}
        return lambda token: ("POST", path, {"token": token}, bearer)
    header = {"Authorization": basic(client, secret)}
    return lambda token: ("POST", path, {"token": token}, header)


def cmd_revoke(args) -> int:
    desc = provider_description(Path(args.dir).resolve(), args.provider)
    build = revoke_requests(args.provider, desc, args.client, args.auth)
    tokens = [line.strip() for line in Path(args.tokens_file).read_text().splitlines() if line.strip()]

    def revoke(slot, token):
        slot.setdefault("client", Client(desc["port"], timeout=120))
        method, path, form, headers = build(token)
        try:
            return str(slot["client"].request(method, path, form=form, headers=headers)[0])
        except OSError as error:
            return type(error).__name__

    start = time.monotonic()
    statuses = {}
    for status in parallel(tokens, revoke, threads=args.concurrency):
        statuses[status] = statuses.get(status, 0) + 1
    print(json.dumps({"requests": len(tokens), "statuses": statuses, "seconds": round(time.monotonic() - start, 2)}))
    return 0


def cmd_install(args) -> int:
    print(json.dumps({"timings": install(args.providers, Path(args.venv).resolve())}))
    return 0


def cmd_probe(args) -> int:
    import probe  # beside this file

    return probe.main(Path(args.dir).resolve(), args.providers)


def provider_list(text: str):
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in ALL_PROVIDERS:
            raise argparse.ArgumentTypeError(f"unknown provider {n!r} (known: {', '.join(ALL_PROVIDERS)})")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def with_dir(p):
        p.add_argument("--dir", required=True, help="directory holding the providers' state")

    p = sub.add_parser("install")
    p.add_argument("--providers", type=provider_list, default=list(ALL_PROVIDERS))
    p.add_argument("--venv", default=os.environ.get("SESSION_CLEANUP_PROVIDERS_VENV", str(DEFAULT_VENV)))
    p.set_defaults(run=cmd_install)

    p = sub.add_parser("up")
    with_dir(p)
    p.add_argument("--providers", type=provider_list, default=list(ALL_PROVIDERS))
    p.add_argument("--venv", default=os.environ.get("SESSION_CLEANUP_PROVIDERS_VENV", str(DEFAULT_VENV)))
    p.add_argument("--no-install", action="store_true")
    p.add_argument("--dot-workers", type=int, default=2)
    # Production-like by default: Keystone with a token cache. 200 self-revocations, 8 at a
    # time, load average < 2 (RECIPES.md): 2.2-2.8 s with the cache and one worker; without
    # a cache 9.7-10.0 s with one worker, 5.7-8.7 s with two.
    p.add_argument("--keystone-workers", type=int, default=1)
    p.add_argument(
        "--keystone-cache", choices=["none", "memory"], default="memory", help="memory needs --keystone-workers 1"
    )
    p.add_argument(
        "--cpu-seconds", type=float, default=0.25, help="CPU cost of one secret check of client confidential-cpu"
    )
    p.set_defaults(run=cmd_up)

    p = sub.add_parser("down")
    with_dir(p)
    p.add_argument("--providers", type=provider_list, default=None, help="only these (default: all)")
    p.set_defaults(run=cmd_down)

    p = sub.add_parser("status")
    with_dir(p)
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("mint")
    with_dir(p)
    p.add_argument("provider", choices=ALL_PROVIDERS)
    p.add_argument("tokens_file")
    p.add_argument("count", type=int)
    p.add_argument("--kind", choices=["access", "refresh"], default="access")
    p.add_argument("--client", default=None)
    p.add_argument("--expired", action="store_true")
    p.set_defaults(run=cmd_mint)

    p = sub.add_parser("check")
    with_dir(p)
    p.add_argument("provider", choices=ALL_PROVIDERS)
    p.add_argument("tokens_file")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("revoke")
    with_dir(p)
    p.add_argument("provider", choices=ALL_PROVIDERS)
    p.add_argument("tokens_file")
    p.add_argument("--client", default=None)
    p.add_argument("--auth", choices=["basic", "form", "bearer"], default="basic")
    p.add_argument("--concurrency", type=int, default=8)
    p.set_defaults(run=cmd_revoke)

    p = sub.add_parser("probe")
    with_dir(p)
    p.add_argument("--providers", type=provider_list, default=None)
    p.set_defaults(run=cmd_probe)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ProviderError as error:
        log(str(error))
        return 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
