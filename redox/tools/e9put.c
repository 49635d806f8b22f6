/* e9put FILE...: copy each FILE to I/O port 0xe9, which QEMU's isa-debugcon appends to a host
 * file, and print "e9put: FILE: N bytes". Redox, root only: the port needs the kernel's port-I/O
 * right, asked for as rtcd asks for it, through relibc's exports (docs/redox-by-hand.md, 12). */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

extern size_t redox_cur_thrfd_v0(void);
extern long redox_dup_v1(size_t fd, const unsigned char *buf, size_t len);
extern long redox_sys_call_v0(size_t fd, unsigned char *payload, size_t len, size_t flags,
                              const uint64_t *meta, size_t metalen);
extern long redox_close_v1(size_t fd);

/* redox_syscall 0.9.2: CallFlags::WRITE, ProcSchemeVerb::Iopl. */
#define CALL_WRITE (1 << 9)
#define VERB_IOPL 255

static void out(const unsigned char *p, size_t n)
{
    __asm__ volatile("rep outsb" : "+S"(p), "+c"(n) : "d"((uint16_t)0xe9) : "memory");
}

int main(int argc, char **argv)
{
    long fd = redox_dup_v1(redox_cur_thrfd_v0(), (const unsigned char *)"open_via_dup", 12);
    if (fd < 0) {
        fprintf(stderr, "e9put: open_via_dup: errno %ld\n", -fd);
        return 1;
    }
    uint64_t verb = VERB_IOPL;
    long r = redox_sys_call_v0((size_t)fd, (unsigned char *)"", 0, CALL_WRITE, &verb, 1);
    redox_close_v1((size_t)fd);
    if (r < 0) {
        fprintf(stderr, "e9put: iopl: errno %ld\n", -r);
        return 1;
    }
    static unsigned char buf[65536];
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int f = open(argv[i], O_RDONLY);
        if (f < 0) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        long long total = 0;
        ssize_t n;
        while ((n = read(f, buf, sizeof buf)) > 0) {
            out(buf, (size_t)n);
            total += n;
        }
        if (n < 0) {
            perror(argv[i]);
            rc = 1;
        }
        close(f);
        printf("e9put: %s: %lld bytes\n", argv[i], total);
    }
    return rc;
}
