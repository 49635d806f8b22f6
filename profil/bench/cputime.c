/* cputime OUT prog args...: run prog, then append its own CPU time (user + system seconds,
 * from wait4) to the file OUT. The bench runs it under profil and under perf record, which
 * then sample it and its child alike, to measure what sampling costs the program itself,
 * apart from the profiler's own work and start-up. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cputime OUT prog [args...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        execv(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 1;
    }
    FILE *out = fopen(argv[1], "a");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "%.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
