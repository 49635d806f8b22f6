/* The test program of the Minix profiling spec, verbatim but for the includes' order.
 * Built by the end-to-end tests with gcc as a non-PIE (ET_EXEC) and a PIE executable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double fib(int n)
{
    double r;

    if (n == 0 || n == 1) {
        return 1.0;
    } else {
        return fib(n - 1) + fib(n - 2);
    }
}

void loop(int n)
{
    int i, k;
    double x;
    double d, a;

    for (i = 0; i < n; i++) {
        for (k = 0; k < n; k++) {
            x = (i < k) ? k : i + 1;
            a = x / 2;
            d = a * a - x;
            d = (d < 0) ? -d : d;
            while (d > .0001) {
                a = (x / a + a) / 2.0;
                d = a * a - x;
                d = (d < 0) ? -d : d;
            }
        }
    }
}

void overflow(void)
{
    int n = 1;
    while (n > 0) {
        n++;
    }
}

int main(int argc, char *argv[])
{
    double x;
    int n = 38;
    x = fib(n);
    loop(1000);
    overflow();
    printf("fib(%d) = %f\n", n, x);
    printf("fib.main: %p\n", main);
    printf("fib.fib: %p\n", fib);
    printf("fib.loop: %p\n", loop);
    printf("fib.overflow: %p\n", overflow);
    printf("fib.printf: %p\n", printf);
    return 0;
}
