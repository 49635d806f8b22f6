/* Makes itself non-dumpable (as set-user-ID programs and many daemons are), then sleeps
 * argv[1] seconds: its owner, unless root, can no longer read its /proc/PID/exe. */
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sleep(argc > 1 ? atoi(argv[1]) : 5);
    return 0;
}
