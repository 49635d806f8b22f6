/* Spends 300 ms of CPU in spin_in_library, from libspin.so (tests/saved.rs). */
double spin_in_library(double ms);

int main(void)
{
    return spin_in_library(300) < 0;
}
