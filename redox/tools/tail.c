/* tail [-n N | -N] [FILE]: the last N lines (10) of FILE or standard input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "line_count.h"

int main(int argc, char **argv)
{
    long n;
    FILE *f = line_count_args(argc, argv, &n);
    if (!f)
        return 1;
    if (n <= 0)
        return 0;
    char **last = calloc((size_t)n, sizeof *last);
    if (!last) {
        perror("tail");
        return 1;
    }
    static char line[65536];
    long count = 0;
    while (fgets(line, sizeof line, f)) {
        free(last[count % n]);
        last[count % n] = strdup(line);
        count++;
    }
    for (long k = count > n ? count - n : 0; k < count; k++)
        fputs(last[k % n], stdout);
    return 0;
}
