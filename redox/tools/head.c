/* head [-n N | -N] [FILE]: the first N lines (10) of FILE or standard input. */
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
    static char line[65536];
    while (n > 0 && fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        if (strchr(line, '\n'))
            n--;
    }
    return 0;
}
