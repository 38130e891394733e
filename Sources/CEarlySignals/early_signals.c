#include "early_signals.h"

#include <signal.h>
#include <string.h>

static int blocked_before_main;

/* An entry of the executable's .preinit_array: glibc runs these after relocation but before the
 * initializers of every shared library (libsystemd, libstdc++, ...) and of the executable — the
 * earliest code of its own a dynamically linked program can run — with main's argc and argv.
 * The process is single-threaded here, so this is the whole process's mask, and every thread
 * created later inherits it. */
static void block_daemon_signals(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 2 || !argv || !argv[1] || strcmp(argv[1], "daemon") != 0) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &set, NULL) == 0) blocked_before_main = 1;
}

int cse_signals_blocked_before_main(void) { return blocked_before_main; }

__attribute__((section(".preinit_array"), used)) static void (*const block_daemon_signals_entry)(int, char **, char **) =
    block_daemon_signals;
