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
 *   mem_l1_ns, mem_l2_ns, mem_l3_ns, mem_dram_ns
 *                  a load that depends on the one before (a pointer chase over a random cyclic permutation,
 *                  one pointer per cache line) in a working set that sits in L1, L2, L3 or only in DRAM:
 *                  half of L1d, half of L2, four times L2 (at most half of L3: a virtual machine's share
 *                  of a shared L3 is smaller than sysfs says; on a 2-CPU EPYC guest with 32 MiB of L3, a
 *                  4 MiB set already ran at DRAM's latency), twice L3 (cpu0's sizes in sysfs; each
 *                  figure has its set_kib, and caches_kib the sizes read), ns per load
 *   alloc_ns       a free and a malloc of mixed sizes (16 B to 4 KiB, from 256 blocks kept live, the
 *                  block's first byte written), ns per pair
 *   indirect_ns    a call through a table of 16 functions, the target drawn at random each time (the
 *                  branch predictor cannot learn it), ns per call
 *   ilp_ns         the same xorshift step in eight independent chains at once, ns per step: what the core
 *                  does when instructions need not wait for each other (loop_ns waits for each), the work
 *                  a hyperthread sharing the physical core takes a share of
 *   code_ns        a call into each of 1,000 functions in turn, 2 KiB apart (2,000 KiB of code: their
 *                  lines fall in a 32nd of the sets of L2 and of the instruction caches, which hold a
 *                  quarter of them at most, and spread over 500 pages), in a random cyclic order the
 *                  predictor cannot hold, ns per call: code fetched from afar, as a large server's is
 *   user_units_s   the wall time of the last eight, set-up included
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
#include <sys/mman.h>
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

static void print_figure(const char *name, double *v, long set_kib) {
    double s[BATCHES];
    memcpy(s, v, sizeof s);
    qsort(s, BATCHES, sizeof s[0], cmp);
    printf("  \"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"batches\": [", name, s[BATCHES / 2], s[0],
           s[BATCHES - 1]);
    for (int i = 0; i < BATCHES; i++) printf("%s%.6g", i ? ", " : "", v[i]);
    if (set_kib) printf("], \"set_kib\": %ld},\n", set_kib);
    else printf("]},\n");
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t next_random(void) {         /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* cpu0's cache of this level (1: its data cache) in KiB, from sysfs; fallback when sysfs has none */
static long cache_kib(int level, long fallback) {
    for (int i = 0; i < 8; i++) {
        char path[96], type[32] = "";
        int lvl = 0;
        long kib = 0;
        FILE *f;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!(f = fopen(path, "r"))) break;
        if (fscanf(f, "%d", &lvl) != 1) lvl = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", type) != 1) type[0] = 0;
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (lvl != level || !strcmp(type, "Instruction") || !(f = fopen(path, "r"))) continue;
        if (fscanf(f, "%ldK", &kib) != 1) kib = 0;
        fclose(f);
        if (kib > 0) return kib;
    }
    return fallback;
}

#define LINE 64

#define BATCH_NS 1e7              /* a chase's batch: at most about 10 ms, whatever a load costs here */

/* ns per dependent load over a random cyclic permutation of the first set_kib KiB of mem, a pointer per line */
static void chase(char *mem, long set_kib, long loads, double *out) {
    long n = set_kib * 1024 / LINE;
    uint32_t *order = malloc(n * sizeof *order);
    if (!order) die("memory for the chase's order");
    for (long i = 0; i < n; i++) order[i] = (uint32_t)i;
    for (long i = n - 1; i > 0; i--) {      /* Sattolo: one cycle through every line */
        long j = (long)(next_random() % (uint64_t)i);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long i = 0; i < n; i++) *(char **)(mem + (long)order[i] * LINE) = mem + (long)order[(i + 1) % n] * LINE;
    free(order);
    char **p = (char **)mem;
    long warm = n < loads ? n : loads;
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < warm; i++) p = (char **)*p;            /* warm the set */
    double batch_ns = (now_ns(CLOCK_MONOTONIC) - t0) / warm * loads;
    if (batch_ns > BATCH_NS) loads = (long)(loads * BATCH_NS / batch_ns) + 1000;    /* a slow host: fewer loads */
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < loads; i++) p = (char **)*p;
        out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / loads;
    }
    if (!p) die("the chase");                /* keeps the loads */
}

static void alloc_pairs(double *out) {
    enum { LIVE = 256 };
    static const size_t sizes[] = {16, 24, 40, 64, 100, 160, 256, 512, 1024, 4096};
    void *live[LIVE] = {0};
    const int n = 50000;
    for (int b = -1; b < BATCHES; b++) {    /* batch -1 fills the ring */
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) {
            uint64_t r = next_random();
            int slot = (int)(r % LIVE);
            free(live[slot]);
            if (!(live[slot] = malloc(sizes[(r >> 8) % (sizeof sizes / sizeof sizes[0])]))) die("malloc");
            *(volatile char *)live[slot] = 1;
        }
        if (b >= 0) out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
    }
    for (int i = 0; i < LIVE; i++) free(live[i]);
}

#define TARGET(k) static __attribute__((noinline)) uint64_t f##k(uint64_t x) { return x * (2 * k + 1) + k; }
TARGET(0) TARGET(1) TARGET(2) TARGET(3) TARGET(4) TARGET(5) TARGET(6) TARGET(7)
TARGET(8) TARGET(9) TARGET(10) TARGET(11) TARGET(12) TARGET(13) TARGET(14) TARGET(15)

static void indirect_calls(double *out) {
    static uint64_t (*const targets[16])(uint64_t) = {f0, f1, f2, f3, f4, f5, f6, f7,
                                                       f8, f9, f10, f11, f12, f13, f14, f15};
    const int n = 300000;
    volatile uint64_t sink;
    uint64_t acc = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) acc = targets[next_random() & 15](acc);
        out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
    }
    sink = acc;
    (void)sink;
}

/* ns per xorshift step, eight chains stepped side by side: no step waits for another (GCC: not vectorised) */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize")))
#endif
static void independent_chains(double *out) {
    const long n = 4000000;
    volatile uint64_t sink;
#define STEP(y) (y ^= y << 13, y ^= y >> 7, y ^= y << 17)
    for (int b = 0; b < BATCHES; b++) {
        uint64_t y0 = b + 1, y1 = b + 2, y2 = b + 3, y3 = b + 4, y4 = b + 5, y5 = b + 6, y6 = b + 7, y7 = b + 8;
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < n / 8; i++) {
            STEP(y0); STEP(y1); STEP(y2); STEP(y3); STEP(y4); STEP(y5); STEP(y6); STEP(y7);
        }
        out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
        sink = y0 ^ y1 ^ y2 ^ y3 ^ y4 ^ y5 ^ y6 ^ y7;
    }
#undef STEP
    (void)sink;
}

/* 1,000 functions, each alone in 2 KiB of code: c1000 ... c1999 */
#define CODE_ALIGN 2048
#define C(k) static __attribute__((noinline, aligned(CODE_ALIGN))) uint64_t c##k(uint64_t x) { return x + k; }
#define C10(p) C(p##0) C(p##1) C(p##2) C(p##3) C(p##4) C(p##5) C(p##6) C(p##7) C(p##8) C(p##9)
#define C100(p) C10(p##0) C10(p##1) C10(p##2) C10(p##3) C10(p##4) C10(p##5) C10(p##6) C10(p##7) C10(p##8) C10(p##9)
#define C1000(p) C100(p##0) C100(p##1) C100(p##2) C100(p##3) C100(p##4) C100(p##5) C100(p##6) C100(p##7) \
    C100(p##8) C100(p##9)
C1000(1)
#undef C
#define C(k) c##k,
static uint64_t (*const code[])(uint64_t) = {C1000(1)};
#define CODE_N (long)(sizeof code / sizeof code[0])

/* ns per call, each into the next of the functions in a random cycle through all of them */
static void code_calls(double *out) {
    static uint32_t next[CODE_N];
    for (long i = 0; i < CODE_N; i++) next[i] = (uint32_t)i;
    for (long i = CODE_N - 1; i > 0; i--) {         /* Sattolo, as the chase: one cycle through them all */
        long j = (long)(next_random() % (uint64_t)i);
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    const long n = 16 * CODE_N;
    volatile uint64_t sink;
    uint64_t acc = 0;
    uint32_t at = 0;
    for (int b = -1; b < BATCHES; b++) {    /* batch -1 maps the code in */
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < n; i++) {
            acc = code[at](acc);
            at = next[at];
        }
        if (b >= 0) out[b] = (now_ns(CLOCK_MONOTONIC) - t0) / n;
    }
    sink = acc;
    (void)sink;
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
    double user0 = now_ns(CLOCK_MONOTONIC);
    long l1 = cache_kib(1, 32), l2 = cache_kib(2, 512), l3 = cache_kib(3, 32768);
    static const char *mem_names[] = {"mem_l1_ns", "mem_l2_ns", "mem_l3_ns", "mem_dram_ns"};
    long sets[] = {l1 / 2, l2 / 2, l3 / 2 < 4 * l2 ? l3 / 2 : 4 * l2, 2 * l3};
    long loads[] = {200000, 100000, 30000, 20000};
    double mem_ns[4][BATCHES], alloc[BATCHES], calls[BATCHES], ilp[BATCHES], far[BATCHES];
    char *mem = mmap(NULL, sets[3] * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) die("memory for the chase");
    for (int i = 0; i < 4; i++) chase(mem, sets[i], loads[i], mem_ns[i]);
    munmap(mem, sets[3] * 1024);
    alloc_pairs(alloc);
    indirect_calls(calls);
    independent_chains(ilp);
    code_calls(far);
    double user_s = (now_ns(CLOCK_MONOTONIC) - user0) / 1e9;
    printf("{\n");
    print_figure("syscall_ns", sys, 0);
    print_figure("loop_ns", loop, 0);
    print_figure("write_us", wr, 0);
    print_figure("wake_us", wake, 0);
    print_figure("wake_cpu_us", wake_cpu, 0);
    for (int i = 0; i < 4; i++) print_figure(mem_names[i], mem_ns[i], sets[i]);
    print_figure("alloc_ns", alloc, 0);
    print_figure("indirect_ns", calls, 0);
    print_figure("ilp_ns", ilp, 0);
    print_figure("code_ns", far, CODE_N * CODE_ALIGN / 1024);
    printf("  \"caches_kib\": {\"l1d\": %ld, \"l2\": %ld, \"l3\": %ld},\n", l1, l2, l3);
    printf("  \"user_units_s\": %.3f\n}\n", user_s);
    return 0;
}
