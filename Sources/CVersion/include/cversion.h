#ifndef CVERSION_H
#define CVERSION_H
/*
 * The version a build was asked to carry instead of the source's (a package built with
 * `scripts/package.sh --version V`: build-release.sh passes -DSC_VERSION_OVERRIDE="V"), or ""
 * for the source's own (Sources/Vocabulary/SessionCleanupVersion.swift).
 */
const char *cversion_override(void);
#endif
