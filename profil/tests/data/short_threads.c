/* Starts argv[1] threads one after another, each of which sleeps argv[2] ms and exits (no
 * CPU to speak of), then prints the process's CPU time: threads that live between two looks
 * of an off-CPU profiler. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct timespec nap;

static void *sleeper(void *arg)
{
    (void)arg;
    nanosleep(&nap, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    double ms = argc > 2 ? atof(argv[2]) : 2;
    nap.tv_sec = (time_t)(ms / 1000);
    nap.tv_nsec = (long)((ms - (double)nap.tv_sec * 1000) * 1e6);
    for (int i = 0; i < n; i++) {
        pthread_t t;
        pthread_create(&t, NULL, sleeper, NULL);
        pthread_join(t, NULL);
    }
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    fprintf(stderr, "short_threads.cpu_ms: %.3f\n", cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6);
    return 0;
}
