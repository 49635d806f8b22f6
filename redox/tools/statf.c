/* statf FILE...: open each FILE read-only and print its fstat(): dev, ino, mode (octal), nlink,
 * uid, gid and size; or the call that failed and its errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        if (fd < 0) {
            printf("%s: open errno %d (%s)\n", argv[i], errno, strerror(errno));
            rc = 1;
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            printf("%s: fstat errno %d (%s)\n", argv[i], errno, strerror(errno));
            rc = 1;
        } else {
            printf("%s: dev=%llu ino=%llu mode=%o nlink=%llu uid=%u gid=%u size=%lld\n", argv[i],
                   (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                   (unsigned)st.st_mode, (unsigned long long)st.st_nlink, (unsigned)st.st_uid,
                   (unsigned)st.st_gid, (long long)st.st_size);
        }
        close(fd);
    }
    return rc;
}
