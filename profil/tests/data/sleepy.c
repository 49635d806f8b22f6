/* Sleeps argv[1] ms in nap(), then spins argv[2] ms of CPU time in spin(): a program whose
 * wall time is mostly waiting. Prints how long its sleep took by the monotonic clock
 * (`sleepy.nap: SECONDS`): a busy machine wakes it late. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) void nap(double ms)
{
    struct timespec t = {(time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&t, NULL);
}

__attribute__((noinline)) double spin(double ms)
{
    volatile double x = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return x;
}

int main(int argc, char **argv)
{
    double start = now_s();
    nap(argc > 1 ? atof(argv[1]) : 1000);
    printf("sleepy.nap: %.6f\n", now_s() - start);
    fflush(stdout);
    spin(argc > 2 ? atof(argv[2]) : 200);
    return 0;
}
