// session-cleanup: the command line. Parses arguments, then hands over to one verb.
// Synchronous on purpose: the daemon blocks its signals first thing, before any thread exists.
import Glibc

exit(CommandLineInterface.run(Array(CommandLine.arguments.dropFirst())).rawValue)
