#ifndef EARLY_SIGNALS_H
#define EARLY_SIGNALS_H
/*
 * CEarlySignals: linked only into the session-cleanup executable (never into the library the
 * test binaries load). A constructor blocks SIGTERM, SIGINT, SIGHUP and SIGUSR1 before main — before the
 * Swift runtime or anything else of the process runs — when the verb is `daemon`, so a signal
 * that arrives during start-up waits for the daemon's signalfd instead of killing the process
 * with no stop run and no journal entry.
 */

/* 1 when the constructor blocked the signals (the verb is `daemon`), else 0. */
int cse_signals_blocked_before_main(void);

#endif
