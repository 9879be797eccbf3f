/*
 * hostcard - the unit costs RPC servers are made of, on this host, in a few seconds.
 *
 * USAGE: hostcard SERVER_CPU LOAD_CPU
 *
 * Prints one JSON object: for each unit cost, the median of BATCHES batches and their min and max.
 *   syscall_ns     a bare syscall (getppid) on SERVER_CPU, ns per call
 *   loop_ns        a fixed user-space loop (a dependent multiply-add chain), ns per iteration
 *   write_us       a 100-byte write on a loopback TCP socket (TCP_NODELAY) from SERVER_CPU, its thread's
 *                  CPU per write: the syscall, TCP, and the loopback delivery into the peer's socket,
 *                  which the sender runs. The peer reads on LOAD_CPU without ever sleeping (non-blocking
 *                  reads in a loop), as a busy client does: no write pays for waking it (that is wake_us's),
 *                  and every delivery meets a reader at work on the other CPU
 *   wake_us        a cross-CPU wake-up: a byte over a pipe from SERVER_CPU to LOAD_CPU and back, the
 *                  round trip's wall time over two
 *   wake_cpu_us    ... and SERVER_CPU's thread CPU per round trip (its write, its read, sleeping and
 *                  being woken)
 *
 * eg,
 *   cc -O2 -pthread tools/hostcard.c -o /tmp/hostcard && /tmp/hostcard 0 1
 *
 * Built and run by rpcprof (measure/hostcard.py) once per run; its figures are the run's host card.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 7

static int server_cpu, load_cpu;

static void die(const char *what) {
    fprintf(stderr, "hostcard: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        errno = EINVAL;
        die("pinning a thread (is that CPU online?)");
    }
}

static double now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_figure(const char *name, double *v, int last) {
    double s[BATCHES];
    memcpy(s, v, sizeof s);
    qsort(s, BATCHES, sizeof s[0], cmp);
    printf("  \"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"batches\": [", name, s[BATCHES / 2], s[0],
           s[BATCHES - 1]);
    for (int i = 0; i < BATCHES; i++) printf("%s%.6g", i ? ", " : "", v[i]);
    printf("]}%s\n", last ? "" : ",");
}

static void bare_syscall(double *out) {
    const int n = 100000;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) syscall(SYS_getppid);
        out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
    }
}

static void user_loop(double *out) {
    const long n = 10000000;
    volatile uint64_t sink;
    for (int b = 0; b < BATCHES; b++) {
        uint64_t x = (uint64_t)b + 1;
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
        sink = x;
    }
    (void)sink;
}

static void *drain(void *arg) {
    int fd = *(int *)arg;
    char buf[65536];
    pin(load_cpu);
    for (;;) {                              /* never sleeps: a write never has to wake it */
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;
    }
    return NULL;
}

static void loopback_write(double *out) {
    int lst = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (lst < 0 || bind(lst, (struct sockaddr *)&addr, sizeof addr) || listen(lst, 1) ||
        getsockname(lst, (struct sockaddr *)&addr, &len))
        die("a loopback listener");
    int tx = socket(AF_INET, SOCK_STREAM, 0);
    if (tx < 0 || connect(tx, (struct sockaddr *)&addr, sizeof addr)) die("connecting on loopback");
    int rx = accept(lst, NULL, NULL);
    if (rx < 0) die("accepting on loopback");
    setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t reader;
    pthread_create(&reader, NULL, drain, &rx);
    char msg[100];
    memset(msg, 'x', sizeof msg);
    const int n = 10000;
    for (int i = 0; i < 2000; i++)          /* warm the path */
        if (write(tx, msg, sizeof msg) != sizeof msg) die("writing on loopback");
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < n; i++)
            if (write(tx, msg, sizeof msg) != sizeof msg) die("writing on loopback");
        out[b] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / n / 1e3;
    }
    close(tx);
    pthread_join(reader, NULL);
    close(rx);
    close(lst);
}

static int ping[2], pong[2];

static void *echo(void *arg) {
    char c;
    (void)arg;
    pin(load_cpu);
    while (read(ping[0], &c, 1) == 1)
        if (write(pong[1], &c, 1) != 1) break;
    return NULL;
}

static void wake_up(double *wall, double *cpu) {
    if (pipe(ping) || pipe(pong)) die("a pipe");
    pthread_t peer;
    pthread_create(&peer, NULL, echo, NULL);
    const int n = 1500;
    char c = 'x';
    for (int b = -1; b < BATCHES; b++) {    /* batch -1 warms up */
        double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < n; i++)
            if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) die("a pipe round trip");
        if (b < 0) continue;
        wall[b] = (now_ns(CLOCK_MONOTONIC) - w0) / n / 2 / 1e3;
        cpu[b] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / n / 1e3;
    }
    close(ping[1]);
    pthread_join(peer, NULL);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hostcard SERVER_CPU LOAD_CPU\n");
        return 2;
    }
    server_cpu = atoi(argv[1]);
    load_cpu = atoi(argv[2]);
    pin(server_cpu);
    double sys[BATCHES], loop[BATCHES], wr[BATCHES], wake[BATCHES], wake_cpu[BATCHES];
    bare_syscall(sys);
    user_loop(loop);
    loopback_write(wr);
    wake_up(wake, wake_cpu);
    printf("{\n");
    print_figure("syscall_ns", sys, 0);
    print_figure("loop_ns", loop, 0);
    print_figure("write_us", wr, 0);
    print_figure("wake_us", wake, 0);
    print_figure("wake_cpu_us", wake_cpu, 1);
    printf("}\n");
    return 0;
}
