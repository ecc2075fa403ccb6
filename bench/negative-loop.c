/*
 * The baseline of bench/negative-rate.sh: the fastest one thread makes
 * negative dentries on a disk filesystem, with no dentrylab in the way.
 *   stat:     fstatat() of short names that do not exist, relative to an
 *             open directory descriptor (one failed lookup, one negative
 *             dentry each)
 *   unlinked: mknodat() then unlinkat() of short names (the dentry turns
 *             negative when its file is removed)
 * Usage: negative-loop DIR COUNT stat|unlinked   (prints "<count> <seconds>")
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[3], "stat") && strcmp(argv[3], "unlinked"))) {
        fprintf(stderr, "usage: %s DIR COUNT stat|unlinked\n", argv[0]);
        return 2;
    }
    long count = atol(argv[2]);
    int unlinked = !strcmp(argv[3], "unlinked");
    int dir = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (dir < 0) { perror(argv[1]); return 1; }
    char name[16];
    struct stat st;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < count; i++) {
        name_of(i, name);
        if (unlinked) {
            if (mknodat(dir, name, S_IFREG | 0644, 0) != 0) { perror("mknodat"); return 1; }
            if (unlinkat(dir, name, 0) != 0) { perror("unlinkat"); return 1; }
        } else if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
            fprintf(stderr, "fstatat %s: expected ENOENT\n", name);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%ld %.6f\n", count, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
