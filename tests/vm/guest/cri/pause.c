/* pause: the pod sandbox's process in the systemd-sid tier's containerd scenario, as the
 * kubelet's pause image has one: it sleeps in pause(2) until SIGINT or SIGTERM ends it, and
 * reaps any child it inherits. Built static on the host and packed as an OCI image
 * (tests/vm/host/containerd.sh): no registry is reached. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  signal(SIGINT, quit);
  signal(SIGTERM, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
