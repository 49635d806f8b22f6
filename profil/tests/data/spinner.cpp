// A C++ program whose hot functions have mangled names: a member function of a class in a
// namespace and a function template instance.  Built by the end-to-end tests with c++.
#include <cstdio>

namespace demo {

struct Spinner {
    __attribute__((noinline)) unsigned long spin(int rounds);
};

unsigned long Spinner::spin(int rounds)
{
    volatile unsigned long x = 0;
    for (int i = 0; i < rounds; i++)
        x = x + i;
    return x;
}

template <typename T> __attribute__((noinline)) T twice(T rounds)
{
    volatile T x = 0;
    for (T i = 0; i < rounds; i++)
        x = x + 2 * i;
    return x;
}

} // namespace demo

int main()
{
    demo::Spinner s;
    unsigned long a = s.spin(300000000);
    long b = demo::twice<long>(300000000L);
    std::printf("%lu %ld\n", a, b);
    return 0;
}
