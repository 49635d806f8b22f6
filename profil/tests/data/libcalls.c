/* Time spent inside libc: nearly all of it in random() and random_r(), which libc exports,
 * so a profiler that reads libc's own symbols names them.  Built by the end-to-end tests. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    unsigned long sum = 0;
    for (long i = 0; i < 30000000; i++)
        sum += random();
    printf("%lu\n", sum);
    return 0;
}
