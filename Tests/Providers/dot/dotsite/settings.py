"""Settings of the django-oauth-toolkit test provider.

Everything that varies per run comes from the environment, set by providers.py:
  DOT_STATE_DIR   directory holding db.sqlite3 and django-secret-key (mode 0700)
Nothing here listens anywhere: gunicorn binds the socket providers.py hands it.
"""

import os
from pathlib import Path

STATE_DIR = Path(os.environ["DOT_STATE_DIR"])

# The Django signing key is only used for CSRF/sessions, which no test endpoint relies on,
# but Django refuses to start without one; it is random per provider directory.
SECRET_KEY = (STATE_DIR / "django-secret-key").read_text().strip()
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "oauth2_provider",
    "dotsite",
]
MIDDLEWARE = []
ROOT_URLCONF = "dotsite.urls"
WSGI_APPLICATION = "dotsite.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": []},
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": STATE_DIR / "db.sqlite3",
        "OPTIONS": {
            # Several gunicorn workers write at once: wait for the lock instead of failing,
            # and take it at BEGIN so two writers never deadlock on an upgrade.
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"

# PASSWORD_HASHERS[0] is what DOT uses for a client secret when CLIENT_SECRET_HASHER is
# "default" (Django's PBKDF2-SHA256, 1,000,000 iterations in Django 5.2): the quick-start
# cost of every authenticated request. The two extra hashers are chosen per client by
# `manage.py provision` (see dotsite/hashers.py); check_password() finds them by the
# algorithm name stored in the hash, so one server carries all three kinds of client.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "dotsite.hashers.CheapClientSecretHasher",
    "dotsite.hashers.CalibratedClientSecretHasher",
]

OAUTH2_PROVIDER = {
    "SCOPES": {"read": "Read", "write": "Write", "introspection": "Introspect tokens"},
    "DEFAULT_SCOPES": ["read"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 36000,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 14 * 24 * 3600,
    "PKCE_REQUIRED": False,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    # WARNING and up only: DOT logs at DEBUG never include a secret, but keep the log short.
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}
