"""Scenarios `origins` and `http2`: every client against nginx over 1 to 1,000 origins (HTTP,
HTTPS, or HTTPS offering h2), wall time, connections and TLS handshakes side by side."""

ORIGIN_COUNTS = [1, 2, 3, 100, 1000]
# The servers --modes names: plain HTTP, HTTPS offering HTTP/1.1 only, HTTPS offering h2 and
# http/1.1 by ALPN (the clients other than the daemon stay on HTTP/1.1 there); `both` is http
# and https, the default.
MODES = ("http", "https", "h2")


def parse_modes(spec):
    """The origins scenario's modes from --modes (comma-separated), in order, each once.
    Raises ValueError naming a word that is not a mode."""
    modes = []
    for word in (spec or "both").split(","):
        for mode in ("http", "https") if word == "both" else (word,):
            if mode not in MODES:
                raise ValueError(f"--modes takes {', '.join(MODES)} or both, not {word!r}")
            if mode not in modes:
                modes.append(mode)
    return modes


def origins(suite):
    calls = 300 if suite.quick else 10000
    counts = [1, 3] if suite.quick else ORIGIN_COUNTS
    if suite.args.origins:
        counts = [int(k) for k in suite.args.origins.split(",")]
    pinned = suite.args.daemon_http_version
    extra = f"HTTPVersion={pinned}\n" if pinned else ""
    suffix = f", daemon HTTPVersion={pinned}" if pinned else ""
    configurations = []
    for mode in parse_modes(suite.args.modes):
        for k in counts:
            configurations.append((f"{mode.upper()} {k} origin{'s' if k > 1 else ''}{suffix}", mode, k, calls,
                                   "1.1", 128, extra))
    suite.matrix("origins", configurations)


def http2(suite):
    calls = 300 if suite.quick else 10000
    counts = [1] if suite.quick else [1, 3, 100]
    streams_list = [128] if suite.quick else [128, 256]
    configurations = []
    for streams in streams_list:
        for k in counts:
            name = f"h2 server ({streams} streams), {k} origin{'s' if k > 1 else ''}"
            # HTTP/1.1 is the daemon's default: its HTTP/2 rows ask for ALPN negotiation.
            configurations.append((name + ", HTTP/2 clients", "h2", k, calls, "2", streams,
                                   "HTTPVersion=auto\n"))
            if not suite.quick:
                configurations.append((name + ", HTTP/1.1 clients", "h2", k, calls, "1.1", streams,
                                       "HTTPVersion=1.1\n"))
    suite.matrix("http2", configurations)
