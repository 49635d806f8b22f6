/* wr FILE TEXT: write TEXT (no newline) to FILE, created or truncated, in one write(), and say
 * on standard output what came of it: "wr: FILE: N bytes", or the call that failed and its
 * errno (dash's echo calls every failed write "I/O error"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wr FILE TEXT\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("wr: open %s: errno %d (%s)\n", argv[1], errno, strerror(errno));
        return 1;
    }
    ssize_t n = write(fd, argv[2], strlen(argv[2]));
    if (n < 0) {
        printf("wr: write %s: errno %d (%s)\n", argv[1], errno, strerror(errno));
        return 1;
    }
    printf("wr: %s: %zd bytes\n", argv[1], n);
    close(fd);
    return 0;
}
