/* A tiny JIT: it copies a counting loop into anonymous executable memory, says where in
 * /tmp/perf-PID.map (as node, the JVM and python -X perf do), and runs it N times round. The
 * map stays for the profiler to read after the program ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov rax, rdi; 1: dec rax; jnz 1b; ret */
static const unsigned char spin[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};

int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 0) : 1000000000UL;
    unsigned char *code = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memcpy(code + 64, spin, sizeof spin);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "%lx %zx JIT:spin\n", (unsigned long)(code + 64), sizeof spin);
    fclose(f);
    unsigned long (*fn)(unsigned long) = (unsigned long (*)(unsigned long))(void *)(code + 64);
    printf("jit.pid: %d\n", (int)getpid());
    printf("jit: %lu\n", fn(n));
    return 0;
}
