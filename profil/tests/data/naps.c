/* Sleeps argv[1] times for argv[2] ms each (clock_nanosleep, through nanosleep), then makes
 * argv[3] one-byte round trips through a pipe: long calls, whose latency is the sleep, and
 * short ones, whose latency a tracer's own cost can exceed. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int naps = argc > 1 ? atoi(argv[1]) : 20;
    long ms = argc > 2 ? atol(argv[2]) : 10;
    int trips = argc > 3 ? atoi(argv[3]) : 1000;
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    for (int i = 0; i < naps; i++)
        nanosleep(&t, 0);
    int p[2];
    if (pipe(p) != 0)
        return 1;
    char c = 'x';
    for (int i = 0; i < trips; i++) {
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            return 1;
    }
    return 0;
}
