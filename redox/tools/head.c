/* head [-n N | -N] [FILE]: the first N lines (10) of FILE or standard input. */
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
    static char line[65536];
    while (n > 0 && fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        if (strchr(line, '\n'))
            n--;
    }
    return 0;
}
