/* nodelay.c - LD_PRELOAD shim for bench/nagle: TCP_NODELAY on every socket a program accepts (Nagle off
 * at the server). Acts only in the program named by NODELAY_PROGRAM (its short name), so the tools around
 * it are untouched. Built by bench/nagle: cc -shared -fPIC -o nodelay.so nodelay.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static void nodelay(int fd) {
    const char *only = getenv("NODELAY_PROGRAM");
    if (fd < 0 || !only || strcmp(only, program_invocation_short_name) != 0)
        return;
    int one = 1, saved = errno;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);   /* not TCP: fails, harmless */
    errno = saved;
}

int accept(int s, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    int fd = real(s, addr, len);
    nodelay(fd);
    return fd;
}

int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int fd = real(s, addr, len, flags);
    nodelay(fd);
    return fd;
}
