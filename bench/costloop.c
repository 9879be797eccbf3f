/* costloop - a fixed amount of work per loop turn, for bench/instrument_cost.
 *
 *   costloop spin SECS      turns of a short arithmetic loop per second, in a thread 8 KiB below its
 *                           stack's top (a sampled stack is copied as deep as a server's would be)
 *   costloop writev SECS    writev() calls of 50 bytes to /dev/null per second (a counted syscall)
 *   costloop getppid SECS   getppid() calls per second (a syscall no counter names)
 *
 * Prints one number: turns per wall-clock second. Pin it to the CPU to measure (taskset). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double secs;
static const char *mode;
static double result;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *work(void *arg) {
    volatile char depth[8192];                  /* the stack a server's handler sits on */
    depth[0] = depth[8191] = 1;
    int fd = open("/dev/null", O_WRONLY);
    char buf[50];
    memset(buf, 'x', sizeof buf);
    struct iovec iov = {buf, sizeof buf};
    volatile unsigned long x = 1;
    unsigned long turns = 0;
    double t0 = now(), t = t0;
    while (t - t0 < secs) {
        for (int i = 0; i < 1000; i++) {
            if (mode[0] == 's')
                for (int j = 0; j < 50; j++) x = x * 2654435761u + j;
            else if (mode[0] == 'w')
                writev(fd, &iov, 1);
            else
                syscall(SYS_getppid);
        }
        turns += 1000;
        t = now();
    }
    result = turns / (t - t0);
    (void)arg;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || !strchr("swg", argv[1][0])) {
        fprintf(stderr, "usage: costloop spin|writev|getppid SECS\n");
        return 2;
    }
    mode = argv[1];
    secs = atof(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    printf("%.1f\n", result);
    return 0;
}
