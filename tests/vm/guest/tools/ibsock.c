/* ibsock: one command to irqbalance's control socket, as irqbalance-ui and intel-lpmd send it
 * (one connection, the command without terminator, the reply read until the server closes).
 *   ibsock SOCKET_PATH COMMAND...   prints the reply (nothing for settings); exit 0 when the
 *                                   server closed within 5 s, 2 on any error (said on stderr) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: ibsock SOCKET COMMAND...\n"); return 2; }
    char cmd[4096] = "";
    for (int i = 2; i < argc; i++) {
        if (i > 2) strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
        strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 1);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { fprintf(stderr, "connect %s: %s\n", argv[1], strerror(errno)); return 2; }
    if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) { fprintf(stderr, "write: %s\n", strerror(errno)); return 2; }
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, n, stdout);
    if (n < 0) { fprintf(stderr, "read: %s\n", strerror(errno)); return 2; }
    return 0;
}
