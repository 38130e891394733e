/*
 * netdelay — holds every packet of one NFQUEUE queue for a fixed time, then lets it pass: the
 * benchmark's stand-in for `tc qdisc ... netem delay` on a kernel without sch_netem.
 *
 *   netdelay --queue N --delay-ms D [--ready-file PATH]
 *
 * The benchmark runs it inside a network namespace of its own, with one iptables rule sending
 * the server's outgoing TCP packets to queue N (see Benchmarks/benchlib/network/environment.py), so every
 * round trip between a client and the server in that namespace takes D ms more.
 *
 * Packets keep their order: a queue hands them out with increasing ids, each is held the same
 * time, so the packets that are due always form a prefix and one batch verdict (every id up to
 * the last due one) releases them. On SIGTERM or SIGINT it prints one JSON line of counters
 * (packets, SYN-ACKs = connections the server accepted, deepest queue, worst and mean lateness,
 * receive-buffer overruns = packets the kernel dropped) and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING_SIZE (1u << 20) /* packets held at once, at most (the kernel queue is smaller) */

struct held {
    uint32_t id;
    int64_t due_ns;
};

static struct held *ring;
static size_t head, count;
static int64_t delay_ns;
static uint64_t packets, syn_acks, overruns, ring_full;
static size_t deepest;
static int64_t worst_late_ns;
/* Summed over released packets: how much later than due each left (the delayer's own lag). */
static int64_t total_late_ns;
static unsigned long long released;
static volatile sig_atomic_t stopping;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int signo) {
    (void)signo;
    stopping = 1;
}

/* A SYN-ACK from the server: one connection accepted. Needs the first 40 bytes of the packet. */
static int is_syn_ack(const unsigned char *data, int length) {
    if (length < 20 || (data[0] >> 4) != 4 || data[9] != IPPROTO_TCP) return 0;
    int ihl = (data[0] & 0x0f) * 4;
    if (length < ihl + 14) return 0;
    unsigned char flags = data[ihl + 13];
    return (flags & 0x12) == 0x12;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *userp) {
    (void)msg;
    (void)userp;
    struct nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(nfa);
    if (header == NULL) return 0;
    uint32_t id = ntohl(header->packet_id);
    unsigned char *data = NULL;
    int length = nfq_get_payload(nfa, &data);
    packets++;
    if (is_syn_ack(data, length)) syn_acks++;
    if (count == RING_SIZE) {
        /* Cannot hold it: let it through now rather than lose it, and say so. */
        ring_full++;
        return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
    }
    ring[(head + count) % RING_SIZE] = (struct held){.id = id, .due_ns = now_ns() + delay_ns};
    count++;
    if (count > deepest) deepest = count;
    return 0;
}

/* Releases every packet that is due, with one verdict. */
static void release_due(struct nfq_q_handle *qh) {
    int64_t now = now_ns();
    size_t due = 0;
    while (due < count && ring[(head + due) % RING_SIZE].due_ns <= now) {
        total_late_ns += now - ring[(head + due) % RING_SIZE].due_ns;
        due++;
    }
    if (due == 0) return;
    released += due;
    struct held *last = &ring[(head + due - 1) % RING_SIZE];
    int64_t late = now - ring[head].due_ns;
    if (late > worst_late_ns) worst_late_ns = late;
    if (nfq_set_verdict_batch(qh, last->id, NF_ACCEPT) < 0) perror("netdelay: nfq_set_verdict_batch");
    head = (head + due) % RING_SIZE;
    count -= due;
}

static void usage(void) {
    fprintf(stderr, "usage: netdelay --queue N --delay-ms D [--ready-file PATH]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int queue = -1;
    long delay_ms = -1;
    const char *ready_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--queue") == 0 && i + 1 < argc) queue = atoi(argv[++i]);
        else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) delay_ms = atol(argv[++i]);
        else if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) ready_file = argv[++i];
        else usage();
    }
    if (queue < 0 || queue > 65535 || delay_ms < 0) usage();
    delay_ns = delay_ms * 1000000;
    ring = calloc(RING_SIZE, sizeof *ring);
    if (ring == NULL) {
        perror("netdelay: calloc");
        return 1;
    }

    struct nfq_handle *h = nfq_open();
    if (h == NULL) {
        perror("netdelay: nfq_open");
        return 1;
    }
    struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
    if (qh == NULL) {
        perror("netdelay: nfq_create_queue");
        return 1;
    }
    /* 64 bytes of each packet: the IP and TCP headers, for the SYN-ACK count. */
    if (nfq_set_mode(qh, NFQNL_COPY_PACKET, 64) < 0) {
        perror("netdelay: nfq_set_mode");
        return 1;
    }
    if (nfq_set_queue_maxlen(qh, 65536) < 0) perror("netdelay: nfq_set_queue_maxlen (kept the default)");
    /* Loopback packets may be GSO super-packets: queue them whole instead of segmenting. */
    if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) perror("netdelay: NFQA_CFG_F_GSO");
    int fd = nfq_fd(h);
    int buffer = 64 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    if (ready_file != NULL) {
        FILE *f = fopen(ready_file, "w");
        if (f == NULL || fprintf(f, "ready\n") < 0 || fclose(f) != 0) {
            perror("netdelay: ready file");
            return 1;
        }
    }

    static char packet[1 << 16];
    while (!stopping) {
        struct timespec timeout = {0, 0}, *wait_for = NULL;
        if (count > 0) {
            int64_t wait = ring[head].due_ns - now_ns();
            if (wait < 0) wait = 0;
            timeout = (struct timespec){.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
            wait_for = &timeout;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = ppoll(&pfd, 1, wait_for, NULL);
        if (ready < 0 && errno != EINTR) {
            perror("netdelay: poll");
            return 1;
        }
        if (ready > 0) {
            for (;;) {
                ssize_t got = recv(fd, packet, sizeof packet, MSG_DONTWAIT);
                if (got >= 0) {
                    nfq_handle_packet(h, packet, (int)got);
                    continue;
                }
                if (errno == ENOBUFS) {
                    overruns++;
                    continue;
                }
                break;
            }
        }
        release_due(qh);
    }
    printf("{\"packets\": %llu, \"syn_acks\": %llu, \"deepest\": %zu, \"worst_late_us\": %lld, "
           "\"mean_late_us\": %.1f, \"overruns\": %llu, \"ring_full\": %llu, \"held_at_exit\": %zu}\n",
           (unsigned long long)packets, (unsigned long long)syn_acks, deepest, (long long)(worst_late_ns / 1000),
           released ? (double)total_late_ns / 1000.0 / (double)released : 0.0, (unsigned long long)overruns,
           (unsigned long long)ring_full, count);
    fflush(stdout);
    /* Pending packets are let through as the queue goes away. */
    if (count > 0) nfq_set_verdict_batch(qh, ring[(head + count - 1) % RING_SIZE].id, NF_ACCEPT);
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
}
