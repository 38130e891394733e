#ifndef CCURL_H
#define CCURL_H
/* libcurl multi glue. Filled in by the HTTP engine. */
#include <curl/curl.h>
#endif
