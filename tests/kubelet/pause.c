/*
 * The pod sandbox's process for tests/kubelet: what a pause container does. It holds
 * the pod's namespaces open and does nothing else: it reaps the children it inherits
 * (it is the pid 1 of a pod that shares its process namespace) and exits at once on
 * SIGINT or SIGTERM. Linked statically, so its image is this one file
 * (tools/release/image.py pause).
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        return 1;
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        return 1;
    for (;;)
        pause();
}
