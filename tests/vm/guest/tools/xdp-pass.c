/* xdp-pass IFNAME on|off: attaches to IFNAME, in driver (native) mode, an XDP program that passes
 * every packet, or detaches it; as the kernel's selftest drivers/net/hw/irq.py does with its
 * xdp_dummy program. Needs no BPF toolchain: the program is two instructions, loaded with
 * bpf(BPF_PROG_LOAD) and attached with RTM_SETLINK/IFLA_XDP. Exit 0 when the kernel accepted it;
 * 2 with the kernel's error on stderr (for example EOPNOTSUPP: the driver has no native XDP). */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int load_pass(void) {
    struct bpf_insn prog[2];
    union bpf_attr attr;
    char log[256] = "";
    memset(prog, 0, sizeof prog);
    prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K; /* r0 = XDP_PASS */
    prog[0].imm = XDP_PASS;
    prog[1].code = BPF_JMP | BPF_EXIT;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_XDP;
    attr.insns = (unsigned long)prog;
    attr.insn_cnt = 2;
    attr.license = (unsigned long)"GPL";
    attr.log_buf = (unsigned long)log;
    attr.log_size = sizeof log;
    attr.log_level = 1;
    int fd = syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
    if (fd < 0) fprintf(stderr, "xdp-pass: BPF_PROG_LOAD: %s %s\n", strerror(errno), log);
    return fd;
}

static void put_attr(char *buf, size_t *len, unsigned short type, const void *data, size_t size) {
    struct nlattr *a = (struct nlattr *)(buf + *len);
    a->nla_type = type;
    a->nla_len = NLA_HDRLEN + size;
    memcpy((char *)a + NLA_HDRLEN, data, size);
    *len += NLA_ALIGN(a->nla_len);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "on") && strcmp(argv[2], "off"))) {
        fprintf(stderr, "usage: xdp-pass IFNAME on|off\n");
        return 2;
    }
    unsigned ifindex = if_nametoindex(argv[1]);
    if (!ifindex) { fprintf(stderr, "xdp-pass: no interface %s\n", argv[1]); return 2; }
    int prog = -1;
    if (!strcmp(argv[2], "on") && (prog = load_pass()) < 0) return 2;

    char buf[256];
    memset(buf, 0, sizeof buf);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    h->nlmsg_type = RTM_SETLINK;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    h->nlmsg_seq = 1;
    struct ifinfomsg *ifi = NLMSG_DATA(h);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = ifindex;
    size_t len = NLMSG_LENGTH(sizeof *ifi);
    size_t nest = len;
    struct nlattr *xdp = (struct nlattr *)(buf + len);
    xdp->nla_type = IFLA_XDP | NLA_F_NESTED;
    len += NLA_HDRLEN;
    int fd = prog;
    unsigned flags = XDP_FLAGS_DRV_MODE;
    put_attr(buf, &len, IFLA_XDP_FD, &fd, sizeof fd);
    put_attr(buf, &len, IFLA_XDP_FLAGS, &flags, sizeof flags);
    xdp->nla_len = len - nest;
    h->nlmsg_len = len;

    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0 || send(s, buf, len, 0) < 0) { perror("xdp-pass: netlink"); return 2; }
    char reply[4096];
    ssize_t n = recv(s, reply, sizeof reply, 0);
    if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr))) { perror("xdp-pass: netlink reply"); return 2; }
    struct nlmsgerr *e = NLMSG_DATA((struct nlmsghdr *)reply);
    if (e->error) { fprintf(stderr, "xdp-pass: %s %s: %s\n", argv[1], argv[2], strerror(-e->error)); return 2; }
    return 0;
}
