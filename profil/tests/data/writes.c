/* Writes argv[1] bytes to /dev/null one at a time from log_line and argv[2] from log_other,
 * each through put(), which calls the C library's write. glibc's write keeps no frame of its
 * own, so the kernel's frame-pointer walk from the call goes from write to put's caller:
 * log_line or log_other, then main (put itself is skipped). Nothing else is written. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int fd;

static void put(const char *c)
{
    if (write(fd, c, 1) != 1)
        exit(1);
}

void log_line(void)
{
    put("x");
}

void log_other(void)
{
    put("y");
}

int main(int argc, char **argv)
{
    int lines = argc > 1 ? atoi(argv[1]) : 300;
    int others = argc > 2 ? atoi(argv[2]) : 100;
    fd = open("/dev/null", O_WRONLY);
    if (fd < 0)
        return 1;
    for (int i = 0; i < lines; i++)
        log_line();
    for (int i = 0; i < others; i++)
        log_other();
    return 0;
}
