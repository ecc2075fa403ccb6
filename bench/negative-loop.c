/*
 * The baseline of bench/negative-rate.sh: the fastest way plain C makes
 * negative dentries on a disk filesystem, with no dentrylab in the way.
 *   stat:     fstatat() of short names that do not exist, relative to an
 *             open directory descriptor (one failed lookup, one negative
 *             dentry each)
 *   unlinked: mknodat() then unlinkat() of short names (the dentry turns
 *             negative when its file is removed)
 * With THREADS = 1 (the default) it is the unit of the machine's limit: one
 * thread, one directory. With THREADS = N, N such loops run at once, each in
 * a subdirectory of its own (DIR/t0, DIR/t1, ...) through a descriptor of its
 * own, on COUNT / N names each: what N CPUs give with nothing shared but the
 * filesystem and the dentry cache (the ceiling a generator can reach).
 * Prints "<count> <seconds> <cpu seconds>" (CPU: user + system of the whole
 * process, from getrusage).
 *
 * Usage: negative-loop DIR COUNT stat|unlinked [THREADS]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct loop {
    int dir;
    long count;
    int unlinked;
    int failed;
};

/* Base-62 name of i: the shortest printable names (4 chars up to 14.7M). */
static void name_of(long i, char *out)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = digits[i % 62];
        i /= 62;
    } while (i > 0);
    for (int k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    out[n] = 0;
}

static void *run(void *arg)
{
    struct loop *l = arg;
    char name[16];
    struct stat st;
    for (long i = 0; i < l->count; i++) {
        name_of(i, name);
        if (l->unlinked) {
            if (mknodat(l->dir, name, S_IFREG | 0644, 0) != 0) { perror("mknodat"); l->failed = 1; return NULL; }
            if (unlinkat(l->dir, name, 0) != 0) { perror("unlinkat"); l->failed = 1; return NULL; }
        } else if (fstatat(l->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
            fprintf(stderr, "fstatat %s: expected ENOENT\n", name);
            l->failed = 1;
            return NULL;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5 || (strcmp(argv[3], "stat") && strcmp(argv[3], "unlinked"))) {
        fprintf(stderr, "usage: %s DIR COUNT stat|unlinked [THREADS]\n", argv[0]);
        return 2;
    }
    long count = atol(argv[2]);
    int threads = argc == 5 ? atoi(argv[4]) : 1;
    if (count < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "COUNT must be at least 1 and THREADS from 1 to 256\n");
        return 2;
    }
    struct loop loops[256];
    for (int t = 0; t < threads; t++) {
        char path[4096];
        if (threads == 1) {
            snprintf(path, sizeof path, "%s", argv[1]);
        } else {
            snprintf(path, sizeof path, "%s/t%d", argv[1], t);
            if (mkdir(path, 0755) != 0) { perror(path); return 1; }
        }
        loops[t].dir = open(path, O_RDONLY | O_DIRECTORY);
        if (loops[t].dir < 0) { perror(path); return 1; }
        loops[t].count = count / threads + (t < count % threads);
        loops[t].unlinked = !strcmp(argv[3], "unlinked");
        loops[t].failed = 0;
    }
    pthread_t tid[256];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (threads == 1) {
        run(&loops[0]);
    } else {
        for (int t = 0; t < threads; t++)
            if (pthread_create(&tid[t], NULL, run, &loops[t]) != 0) { perror("pthread_create"); return 1; }
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (int t = 0; t < threads; t++)
        if (loops[t].failed)
            return 1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("%ld %.6f %.6f\n", count, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9, cpu);
    return 0;
}
