/* tail [-n N | -N] [FILE]: the last N lines (10) of FILE or standard input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long n = 10;
    int i = 1;
    if (i + 1 < argc && strcmp(argv[i], "-n") == 0) {
        n = atol(argv[i + 1]);
        i += 2;
    } else if (i < argc && argv[i][0] == '-' && argv[i][1]) {
        n = atol(argv[i] + 1);
        i++;
    }
    FILE *f = i < argc ? fopen(argv[i], "r") : stdin;
    if (!f) {
        perror(argv[i]);
        return 1;
    }
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
