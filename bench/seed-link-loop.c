/*
 * The baseline of bench/create-rate.sh: the node-lockup report's method, a single-threaded
 * loop of link() system calls with full paths into one directory.
 * Usage: seed-link-loop DIR COUNT   (prints "<count> <seconds>")
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s DIR COUNT\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    long count = atol(argv[2]);
    char src[4096], path[4096];
    snprintf(src, sizeof src, "%s/src", dir);
    int fd = open(src, O_CREAT | O_WRONLY, 0644);
    if (fd < 0) { perror(src); return 1; }
    close(fd);
    snprintf(path, sizeof path, "%s/d", dir);
    if (mkdir(path, 0755) != 0) { perror(path); return 1; }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/d/%ld", dir, i);
        if (link(src, path) != 0) { perror(path); return 1; }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%ld %.6f\n", count, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
