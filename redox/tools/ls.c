/* ls [-l] [PATH...]: the entries of each directory PATH (default .), one a line; a PATH that is
 * not a directory, its own name. -l puts the mode (octal) and the size before each name. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void show(const char *path, const char *name, int longform)
{
    struct stat st;
    if (!longform)
        puts(name);
    else if (stat(path, &st) == 0)
        printf("%06o %10lld %s\n", (unsigned)st.st_mode, (long long)st.st_size, name);
    else
        printf("? %s\n", name);
}

static int list(const char *path, int longform)
{
    DIR *dir = opendir(path);
    if (!dir) {
        struct stat st;
        if (stat(path, &st) != 0) {
            perror(path);
            return 1;
        }
        show(path, path, longform);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(dir))) {
        char entry[4096];
        snprintf(entry, sizeof entry, "%s/%s", path, e->d_name);
        show(entry, e->d_name, longform);
    }
    closedir(dir);
    return 0;
}

int main(int argc, char **argv)
{
    int i = 1, longform = 0, rc = 0;
    if (i < argc && strcmp(argv[i], "-l") == 0) {
        longform = 1;
        i++;
    }
    if (i == argc)
        return list(".", longform);
    for (; i < argc; i++)
        rc |= list(argv[i], longform);
    return rc;
}
