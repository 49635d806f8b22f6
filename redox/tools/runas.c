/* runas UID CMD [ARG...]: setgid(UID), setuid(UID), then run CMD (found in PATH) as that user.
 * On Redox the process manager makes the change. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: runas UID CMD [ARG...]\n");
        return 2;
    }
    int id = atoi(argv[1]);
    if (setgid(id) != 0) {
        perror("setgid");
        return 1;
    }
    if (setuid(id) != 0) {
        perror("setuid");
        return 1;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
}
