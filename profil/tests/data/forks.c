/* A process tree for --children: `forks MS` spins MS ms in parent_work, forks a child that
 * spins 2*MS ms in child_work and forks a grandchild spinning 3*MS ms in grandchild_work
 * (no exec: the children run this program's code), then waits for everyone. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* CPU time, not wall time: a busy loop that stops after `ms` of CPU. */
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_for(double ms) {
    double end = cpu() + ms / 1000.0;
    volatile unsigned long x = 0;
    while (cpu() < end)
        for (int i = 0; i < 1000; i++) x += i;
}

__attribute__((noinline)) void grandchild_work(double ms) { spin_for(ms); }
__attribute__((noinline)) void child_work(double ms) { spin_for(ms); }
__attribute__((noinline)) void parent_work(double ms) { spin_for(ms); }

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 100;
    (void)now;
    pid_t child = fork();
    if (child == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0) {
            grandchild_work(3 * ms);
            _exit(0);
        }
        child_work(2 * ms);
        waitpid(grandchild, NULL, 0);
        _exit(0);
    }
    parent_work(ms);
    waitpid(child, NULL, 0);
    return 0;
}
