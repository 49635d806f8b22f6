/* head and tail's arguments: [-n N | -N] [FILE]. The count (10 unless given) goes to *n; the
 * file is opened (standard input without one), NULL after perror where it cannot be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *line_count_args(int argc, char **argv, long *n)
{
    int i = 1;
    *n = 10;
    if (i + 1 < argc && strcmp(argv[i], "-n") == 0) {
        *n = atol(argv[i + 1]);
        i += 2;
    } else if (i < argc && argv[i][0] == '-' && argv[i][1]) {
        *n = atol(argv[i] + 1);
        i++;
    }
    FILE *f = i < argc ? fopen(argv[i], "r") : stdin;
    if (!f)
        perror(argv[i]);
    return f;
}
