"""Keystone's public WSGI application for gunicorn (`gunicorn keystone_public_wsgi`).

Keystone parses the process's command line with oslo.config when it initialises, and the
command line of a gunicorn worker is gunicorn's own, which Keystone rejects. The application
is therefore built with an empty command line; the configuration file comes from
OS_KEYSTONE_CONFIG_DIR / OS_KEYSTONE_CONFIG_FILES, set by providers.py.
"""

import sys

sys.argv = sys.argv[:1]

from keystone.server.wsgi import initialize_public_application  # noqa: E402

application = initialize_public_application()
