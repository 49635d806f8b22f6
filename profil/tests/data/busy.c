/* Busy for argv[1] milliseconds of CPU time in spin(), then exit with status argv[2]
 * (default 0). With argv[3] = "segv", crash with SIGSEGV after the work instead. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) double spin(double ms)
{
    volatile double x = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end) {
        for (int i = 0; i < 10000; i++) {
            x += i * 0.5;
        }
    }
    return x;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 100;
    int status = argc > 2 ? atoi(argv[2]) : 0;
    spin(ms);
    if (argc > 3 && strcmp(argv[3], "segv") == 0) {
        volatile int *p = 0;
        *p = 1;
    }
    return status;
}
