/* A known call structure for the call-stack tests: c does all the work, called from a with
 * three times the work it is given from b. main -> a -> c : main -> b -> c = 3 : 1. */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void c(unsigned long n) {
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

/* The increments after the calls keep them calls, not tail jumps. */
__attribute__((noinline)) void a(unsigned long n) { c(3 * n); sink++; }
__attribute__((noinline)) void b(unsigned long n) { c(n); sink++; }

int main(int argc, char **argv) {
    unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 10) : 300;
    for (unsigned long r = 0; r < rounds; r++) {
        a(1000000);
        b(1000000);
    }
    return 0;
}
