/* sleep SECONDS: sleep that long; a fraction is allowed (sleep 0.3). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    double s = argc > 1 ? atof(argv[1]) : 0;
    if (s < 0)
        s = 0;
    struct timespec t = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
    return 0;
}
