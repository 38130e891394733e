"""What an invocation prints and writes: the machine, one table per scenario (text and Markdown),
the network configurations side by side, the targets."""
import os
import platform
import subprocess

from .common import CONCURRENCY, LATENCY_MS, REPO, loadavg


def machine_info(daemon):
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "loadavg_before": loadavg()}
    try:
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                info["memory_mb"] = int(line.split()[1]) // 1024
    try:
        info["curl"] = subprocess.run(["curl", "--version"], capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
        info["git_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                            text=True, timeout=10).stdout.strip()
        info["daemon_version"] = subprocess.run([str(daemon), "--version"], capture_output=True, text=True,
                                                timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def fmt(value, spec=".3f", missing="—"):
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


SECTIONS = [
    ("stop", f"Stop runs (SIGTERM → exit; latency {LATENCY_MS} ms, MaxConcurrentRequests {CONCURRENCY})", [
        ("run", lambda r: r["name"], "<"), ("calls", lambda r: fmt(r.get("calls"), ",d"), ">"),
        ("wall s", lambda r: fmt(r.get("wall_s")), ">"), ("ideal s", lambda r: fmt(r.get("ideal_s")), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("1st call ms", lambda r: fmt(r.get("first_call_ms"), ".1f"), ">"),
        ("server late ms", lambda r: fmt(r.get("server_max_late_us") and r["server_max_late_us"] / 1000, ".1f"), ">"),
        ("CPU s (stop)", lambda r: fmt(r.get("cpu_stop_s")), ">"),
        ("CPU s (all)", lambda r: fmt(r.get("cpu_total_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("register s", lambda r: fmt(r.get("register_s"), ".2f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">"),
        ("server count", lambda r: fmt(r.get("server_requests"), ",d"), ">")]),
    ("peers", "Peers: the same calls without the daemon (same load server)", [
        ("run", lambda r: r["name"], "<"),
        ("wall s", lambda r: fmt(r.get("wall_s")) + ("*" if r.get("extrapolated") else ""), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")) + ("*" if r.get("extrapolated") else ""), ">"),
        ("wall ÷ daemon", lambda r: fmt(r.get("wall_vs_daemon"), ".2f"), ">"),
        ("CPU ÷ daemon", lambda r: fmt(r.get("cpu_vs_daemon"), ".2f"), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("server late ms", lambda r: fmt(r.get("server_max_late_us") and r["server_max_late_us"] / 1000, ".1f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">"),
        ("server count", lambda r: fmt(r.get("server_requests"), ",d"), ">")]),
    ("idle", "Idle daemon", [
        ("run", lambda r: r["name"], "<"), ("window s", lambda r: fmt(r.get("window_s"), ".1f"), ">"),
        ("CPU ms (stat)", lambda r: fmt(r.get("cpu_ms"), ".0f"), ">"),
        ("CPU ms (sched)", lambda r: fmt(r.get("cpu_sched_ms"), ".2f"), ">"),
        ("wake-ups/s", lambda r: fmt(r.get("wakeups_per_s"), ".3f"), ">"),
        ("vol/nonvol", lambda r: f"{r.get('voluntary_switches', 0)}/{r.get('nonvoluntary_switches', 0)}", ">"),
        ("threads ended", lambda r: fmt(r.get("threads_ended"), "d"), ">"),
        ("expected/s", lambda r: fmt(r.get("expected_wakeups_per_s"), ".2f"), ">"),
        ("WATCHDOG=1", lambda r: fmt(r.get("watchdog_pings"), "d"), ">"),
        ("RSS MB", lambda r: fmt(r.get("rss_mb"), ".1f"), ">"),
        ("anon MB", lambda r: fmt(r.get("rss_anon_mb"), ".1f"), ">"),
        ("file MB", lambda r: fmt(r.get("rss_file_mb"), ".1f"), ">"),
        ("PSS MB", lambda r: fmt(r.get("pss_mb"), ".1f"), ">"),
        ("threads", lambda r: fmt(r.get("threads"), "d"), ">")]),
    ("lifecycle", "Start and stop latency (median)", [
        ("run", lambda r: r["name"], "<"), ("ms", lambda r: fmt(r.get("ms"), ".1f"), ">"),
        ("runs ms", lambda r: ", ".join(f"{x:.1f}" for x in r.get("runs_ms") or []), "<"),
        ("target ms", lambda r: fmt(r.get("target_ms"), "d"), ">"),
        ("RSS MB", lambda r: fmt(r.get("rss_mb"), ".1f"), ">")]),
    ("register", "Durable registrations through the control socket", [
        ("run", lambda r: r["name"], "<"), ("clients", lambda r: fmt(r.get("clients"), "d"), ">"),
        ("registrations", lambda r: fmt(r.get("registrations"), ",d"), ">"),
        ("seconds", lambda r: fmt(r.get("seconds"), ".2f"), ">"),
        ("per s", lambda r: fmt(r.get("per_s"), ",.0f"), ">")]),
]


def network_columns():
    return [
        ("run", lambda r: r["name"], "<"), ("calls", lambda r: fmt(r.get("calls"), ",d"), ">"),
        ("wall s", lambda r: fmt(r.get("wall_s")), ">"), ("ideal s", lambda r: fmt(r.get("ideal_s"), ".2f"), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("÷ curl", lambda r: fmt(r.get("wall_vs_curl"), ".2f"), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("conns", lambda r: fmt(r.get("connections"), ",d"), ">"),
        ("accepted", lambda r: fmt(r.get("connections_accepted"), ",d"), ">"),
        ("TLS full", lambda r: fmt(r.get("tls_full"), ",d"), ">"),
        ("TLS resumed", lambda r: fmt(r.get("tls_resumed"), ",d"), ">"),
        ("h2 requests", lambda r: fmt(r.get("http2_requests"), ",d"), ">"),
        ("nginx CPU s", lambda r: fmt(r.get("server_cpu_s"), ".2f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">")]


SECTIONS += [
    ("origins", f"Origins: nginx, {CONCURRENCY} in flight, 50 ms round trip (medians)", network_columns()),
    ("http2", "HTTP/2: nginx offering h2 and http/1.1 by ALPN (medians)", network_columns()),
    ("memory", "Peak RSS of a long run (HTTP, 1 origin)", [
        ("run", lambda r: r["name"], "<"), ("wall s", lambda r: fmt(r.get("wall_s")), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("× floor", lambda r: fmt(r.get("rss_vs_floor"), ".2f"), ">"),
        # MemorySampler (smaps_rollup every 20 ms): the sampled peak, anonymous + file-backed.
        ("sampled peak MB", lambda r: fmt(r.get("sampled_peak_rss_mb"), ".1f"), ">"),
        ("anon MB", lambda r: fmt(r.get("peak_anon_mb"), ".1f"), ">"),
        ("file MB", lambda r: fmt(r.get("peak_file_mb"), ".1f"), ">"),
        ("before SIGTERM MB (anon)", lambda r: fmt(r.get("rss_before_sigterm_mb"), ".1f")
         + (f" ({r['anon_before_sigterm_mb']:.1f})" if r.get("anon_before_sigterm_mb") is not None else ""), ">"),
        ("anon +100 ms MB", lambda r: fmt(r.get("anon_growth_100ms_mb"), "+.1f"), ">")]),
    ("cpu", "User instructions (callgrind; the daemon's stop run, the floor's transfer loop)", [
        ("run", lambda r: r["name"], "<"), ("instructions", lambda r: fmt(r.get("instructions"), ",d"), ">"),
        ("per call", lambda r: fmt(r.get("per_call"), ",.0f"), ">"),
        ("× floor", lambda r: fmt(r.get("vs_floor"), ".2f"), ">")]),
    ("syscalls", "System calls of the stop run (strace -c -f; HTTP, 1 origin)", [
        ("run", lambda r: r["name"], "<"), ("system calls", lambda r: fmt(r.get("syscalls"), ",d"), ">"),
        ("per call", lambda r: fmt(r.get("per_call"), ",.1f"), ">"),
        ("top", lambda r: ", ".join(f"{name} {n:,}" for n, name in r.get("top", [])[:6]), "<")]),
]


def section_tables(rows):
    """[(title, headers, aligns, [cells…] per row, [error or None per row])]"""
    out = []
    for scenario, title, cols in SECTIONS:
        mine = [r for r in rows if r["scenario"] == scenario]
        if not mine:
            continue
        headers = [c[0] for c in cols] + ["status"]
        cells = []
        for r in mine:
            if r["ok"]:
                cells.append([c[1](r) for c in cols] + ["ok"])
            else:
                cells.append([r["name"]] + ["—"] * (len(cols) - 1) + ["ERROR"])
        out.append((title, headers, [c[2] for c in cols] + ["<"], cells, [r.get("error") for r in mine]))
    return out


def print_report(rows, targets):
    for title, headers, aligns, cells, errors in section_tables(rows):
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        line = lambda vals: "  ".join(format(v, a + str(w)) for v, a, w in zip(vals, aligns, widths))
        print(f"\n{title}")
        print(line(headers))
        print("  ".join("-" * w for w in widths))
        for c, e in zip(cells, errors):
            print(line(c))
            if e:
                print(f"    ERROR: {e}")
    if any(r.get("extrapolated") for r in rows):
        print("\n* extrapolated linearly from the calls actually made (see measured_calls in the JSON)")
    if targets:
        print("\nTargets")
        for t in targets:
            print(f"  {'met   ' if t['met'] else 'MISSED'}  {t['target']}: {t['shown']}")


def comparison_markdown(rows):
    """One line per network configuration, the clients side by side: wall s (× ideal), and
    connections (TLS full handshakes + resumed). Empty when there are no such rows."""
    configs = []
    for r in rows:
        if r["scenario"] in ("origins", "http2") and r.get("config") and r["config"] not in configs:
            configs.append(r["config"])
    if not configs:
        return []
    clients = []
    for r in rows:
        if r.get("config") and r.get("client") and r["client"] not in clients:
            clients.append(r["client"])
    out = ["### Side by side: wall s (× ideal) · connections (TLS full + resumed)\n",
           "| configuration | ideal s | " + " | ".join(clients) + " |",
           "|---|---:|" + "---:|" * len(clients)]
    for config in configs:
        cells, ideal = [], None
        for client in clients:
            r = next((x for x in rows if x.get("config") == config and x.get("client") == client), None)
            if r is None:
                cells.append("—")
            elif not r["ok"]:
                cells.append("ERROR")
            else:
                ideal = r["ideal_s"]
                tls = f" ({r['tls_full']:,} + {r['tls_resumed']:,})" if r.get("mode") != "http" else ""
                cells.append(f"{r['wall_s']:.2f} ({r['ratio']:.2f}) · {r['connections_accepted']:,}{tls}")
        out.append(f"| {config} | {fmt(ideal, '.2f')} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def markdown_report(rows, targets):
    out = comparison_markdown(rows)
    for title, headers, aligns, cells, errors in section_tables(rows):
        out.append(f"### {title}\n")
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "|".join("---:" if a == ">" else "---" for a in aligns) + "|")
        for c, e in zip(cells, errors):
            out.append("| " + " | ".join(c) + " |")
            if e:
                out.append(f"| ERROR: {e} |" + " |" * (len(headers) - 1))
        out.append("")
    if any(r.get("extrapolated") for r in rows):
        out.append("\\* extrapolated linearly from the calls actually made.\n")
    if targets:
        out.append("### Targets\n")
        out.append("| target | measured | |")
        out.append("|---|---|---|")
        for t in targets:
            out.append(f"| {t['target']} | {t['shown']} | {'met' if t['met'] else '**missed**'} |")
        out.append("")
    return "\n".join(out)
