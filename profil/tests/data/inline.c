/* Hot code that gcc -O2 inlines: square() and mix() into step(), step() into main's loop.
   tests/lines.rs checks every sampled address's innermost line and function against
   addr2line -i. */
#include <stdlib.h>

static volatile unsigned long sink;

/* The division is slow and the instruction after it is square's own, so square takes a good
   share of the samples (as one multiply it got 1 sample in 500, and sometimes none). */
static inline __attribute__((always_inline)) unsigned long square(unsigned long x) {
    return x * x / ((x >> 3) | 1) + 1;
}

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x, unsigned long i) {
    return (x ^ (x >> 7)) + square(i);
}

__attribute__((noinline)) static unsigned long step(unsigned long x, unsigned long i) {
    return mix(x, i) * 6364136223846793005UL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000000L;
    unsigned long x = 1;
    for (long i = 0; i < n; i++) x = step(x, (unsigned long)i);
    sink = x;
    return 0;
}
