#include "ccurl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Filled once under load_lock, then published by `loaded` (release). */
struct ccurl_api_table ccurl_api;
static atomic_int loaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static char load_error[512];

const char ccurl_not_loaded[] = "libcurl is not loaded";

int ccurl_is_loaded(void) { return atomic_load_explicit(&loaded, memory_order_acquire); }

static void set_load_error(const char *text) {
    snprintf(load_error, sizeof load_error, "%s", text != NULL ? text : "unknown dlopen failure");
}

/* dlsym(library, name) into *symbol: 1, or 0 with the reason recorded. */
static int resolve(void *library, const char *name, void **symbol) {
    (void)dlerror();
    *symbol = dlsym(library, name);
    if (*symbol != NULL) return 1;
    /* dlerror names the library and the symbol; it is NULL if the symbol's value was NULL. */
    const char *why = dlerror();
    char text[sizeof load_error];
    if (why == NULL) snprintf(text, sizeof text, "%s: symbol %s is NULL", CCURL_LIBRARY, name);
    set_load_error(why != NULL ? why : text);
    return 0;
}

int ccurl_load(void) {
    if (ccurl_is_loaded()) return 0;
    pthread_mutex_lock(&load_lock);
    int rc = 0;
    if (!atomic_load_explicit(&loaded, memory_order_relaxed)) {
        rc = -1;
        void *library = dlopen(CCURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) {
            set_load_error(dlerror());
        } else {
            struct ccurl_api_table resolved;
            memset(&resolved, 0, sizeof resolved);
            void *symbol = NULL;
            int complete = 1;
#define CCURL_RESOLVE(name) \
    if (complete && (complete = resolve(library, "curl_" #name, &symbol))) \
        resolved.name = (__typeof__(resolved.name))symbol;
            CCURL_FUNCTIONS(CCURL_RESOLVE)
#undef CCURL_RESOLVE
            if (complete) {
                ccurl_api = resolved;
                atomic_store_explicit(&loaded, 1, memory_order_release);
                load_error[0] = '\0';
                rc = 0;
            } else {
                /* A libcurl.so.4 older than 7.80 (no curl_url_strerror), say. */
                dlclose(library);
            }
        }
    }
    pthread_mutex_unlock(&load_lock);
    return rc;
}

const char *ccurl_load_error(void) { return load_error; }

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init_once(void) { global_result = ccurl_api.global_init(CURL_GLOBAL_DEFAULT); }

CURLcode ccurl_global_init(void) {
    if (!ccurl_is_loaded()) return CURLE_FAILED_INIT;
    pthread_once(&global_once, global_init_once);
    return global_result;
}
