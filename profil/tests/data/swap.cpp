/* Bubble sorts with std::swap, which gcc inlines: its DWARF name is a mangled one that the
 * Rust C++ demangler cannot read (libstdc++'s enable_if'd swap). tests/beyond_minix.rs checks
 * --inline and --short-names on it. argv[1]: the vector's length. */
#include <algorithm>
#include <vector>
#include <cstdio>
#include <cstdlib>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000;
    std::vector<double> v(n);
    for (long i = 0; i < n; i++) v[i] = (i * 7919) % 1000;
    for (long r = 0; r < 20; r++) {
        for (long i = 0; i < n; i++) for (long j = 0; j + 1 < n - i; j++) if (v[j] > v[j+1]) std::swap(v[j], v[j+1]);
        for (long i = 0; i < n; i++) v[i] = (i * 7919 + r) % 1000;
    }
    printf("%f\n", v[0]);
}
