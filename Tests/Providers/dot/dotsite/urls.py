"""URLs of the test provider: DOT's token, revocation and introspection endpoints under /o/
(`/o/token/`, `/o/revoke_token/`, `/o/introspect/`) and its RFC 8414 metadata at the root."""

from django.urls import include, path
from oauth2_provider import urls as oauth2_urls

urlpatterns = [
    path("o/", include(oauth2_urls)),
    path("", include((oauth2_urls.metadata_urlpatterns, "oauth2_provider"), namespace="metadata")),
]
