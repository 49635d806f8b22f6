/* A shared library with one busy function: built by the saved-run tests as libspin.so, and
 * used by uses_spinlib.c. */
#include <time.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) double spin_in_library(double ms)
{
    volatile double x = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return x;
}
