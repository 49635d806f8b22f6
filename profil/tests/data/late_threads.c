/* Sleeps argv[1] ms (no CPU), then starts two threads that each spin argv[2] ms of CPU time
 * in worker(), joins them and exits: a process that creates its threads after a profiler
 * attached to it. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) void *worker(void *arg)
{
    double ms = *(double *)arg, end = thread_cpu_ms() + ms;
    volatile double x = 0;
    while (thread_cpu_ms() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return NULL;
}

int main(int argc, char **argv)
{
    double sleep_ms = argc > 1 ? atof(argv[1]) : 500, spin_ms = argc > 2 ? atof(argv[2]) : 800;
    struct timespec nap = {(time_t)(sleep_ms / 1000), (long)((sleep_ms - (long)(sleep_ms / 1000) * 1000) * 1e6)};
    nanosleep(&nap, NULL);
    pthread_t a, b;
    pthread_create(&a, NULL, worker, &spin_ms);
    pthread_create(&b, NULL, worker, &spin_ms);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
