/* Two threads doing known work: spin_short burns 300 ms of its own thread's CPU time,
 * spin_long 900 ms, at the same time.  A profiler that counts every thread sees them 1:3.
 * Built by the end-to-end tests with `cc -pthread`. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The busy loop is in each function itself, so its ticks are the function's own. */
#define BURN(seconds)                                                   \
    do {                                                                \
        double end = thread_cpu_seconds() + (seconds);                  \
        while (thread_cpu_seconds() < end)                              \
            for (int i = 0; i < 100000; i++)                            \
                sink += i;                                              \
    } while (0)

__attribute__((noinline)) void *spin_short(void *arg)
{
    BURN(0.3);
    return arg;
}

__attribute__((noinline)) void *spin_long(void *arg)
{
    BURN(0.9);
    return arg;
}

int main(void)
{
    pthread_t a, b;
    if (pthread_create(&a, NULL, spin_short, NULL) || pthread_create(&b, NULL, spin_long, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    puts("threads done");
    return 0;
}
