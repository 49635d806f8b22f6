/* Writes argv[1] bytes to /dev/null one at a time from log_line and argv[2] from log_other,
 * each calling the C library's write itself, and nothing else. glibc's write keeps no frame
 * of its own: a frame-pointer walk from the call skips log_line and log_other (it goes from
 * write to main); the unwind tables do not. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int fd;

void log_line(void)
{
    if (write(fd, "x", 1) != 1)
        exit(1);
}

void log_other(void)
{
    if (write(fd, "y", 1) != 1)
        exit(1);
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
