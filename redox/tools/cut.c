/* cut -d C -f LIST [FILE] | cut -c RANGE [FILE]: fields or characters of each line of FILE or
 * standard input. LIST: fields N, N-M or N- (to the last), separated by commas, up to field 255;
 * the delimiter C is a tab by default, and a line without it is printed whole. RANGE: the
 * characters (bytes) A-B, A alone or A- (to the end), counted from 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 256

/* "A", "A-B" or "A-" into [*from, *to], an open end being `open_end`. */
static void range(const char *s, long open_end, long *from, long *to)
{
    const char *dash = strchr(s, '-');
    *from = atol(s);
    if (*from < 1)
        *from = 1;
    *to = !dash ? *from : dash[1] ? atol(dash + 1) : open_end;
}

static void fields(char *line, char delim, const char *want)
{
    if (!strchr(line, delim)) {
        puts(line);
        return;
    }
    int first = 1;
    char *p = line;
    for (int field = 1;; field++) {
        char *end = strchr(p, delim);
        if (end)
            *end = 0;
        if (field < MAXF && want[field]) {
            if (!first)
                putchar(delim);
            fputs(p, stdout);
            first = 0;
        }
        if (!end)
            break;
        p = end + 1;
    }
    putchar('\n');
}

int main(int argc, char **argv)
{
    char delim = '\t';
    const char *list = "1", *chars = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        char opt = argv[i][1];
        const char *val = argv[i][2] ? argv[i] + 2 : i + 1 < argc ? argv[++i] : "";
        if (opt == 'd')
            delim = val[0];
        else if (opt == 'f')
            list = val;
        else if (opt == 'c')
            chars = val;
        else {
            fprintf(stderr, "usage: cut -d C -f LIST [FILE] | cut -c RANGE [FILE]\n");
            return 2;
        }
    }
    char want[MAXF] = { 0 }, spec[256];
    snprintf(spec, sizeof spec, "%s", list);
    for (char *t = strtok(spec, ","); t; t = strtok(NULL, ",")) {
        long from, to;
        range(t, MAXF - 1, &from, &to);
        for (long k = from; k <= to && k < MAXF; k++)
            want[k] = 1;
    }
    FILE *f = i < argc ? fopen(argv[i], "r") : stdin;
    if (!f) {
        perror(argv[i]);
        return 1;
    }
    static char line[65536];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        if (!chars) {
            fields(line, delim, want);
            continue;
        }
        long from, to;
        range(chars, (long)len, &from, &to);
        for (long k = from; k <= to && k <= (long)len; k++)
            putchar(line[k - 1]);
        putchar('\n');
    }
    return 0;
}
