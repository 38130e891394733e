import SessionCleanup
print(SessionCleanupVersion.string)
