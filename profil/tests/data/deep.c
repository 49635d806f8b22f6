/* Spins at the bottom of a recursion 64 calls deep whose frames hold 2 KiB each: 128 KiB of
   stack under the hot code, more than a 16 KiB copy of the stack reaches (tests/call_stacks.rs). */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long down(int depth, long spins) {
    volatile char frame[2048];
    frame[0] = (char)depth;
    if (depth == 0) {
        unsigned long x = 0;
        for (long i = 0; i < spins; i++) x = x * 6364136223846793005UL + (unsigned long)i;
        return x;
    }
    return down(depth - 1, spins) + (unsigned long)frame[0];
}

int main(int argc, char **argv) {
    long spins = argc > 1 ? atol(argv[1]) : 300000000L;
    sink = down(64, spins);
    return 0;
}
