/* cat [FILE...]: copy each FILE, or standard input without one, to standard output. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int copy(int fd)
{
    static char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(1, buf + done, (size_t)(n - done));
            if (w < 0)
                return 1;
            done += w;
        }
    }
    return n < 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return copy(0);
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        if (fd < 0) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        rc |= copy(fd);
        close(fd);
    }
    return rc;
}
